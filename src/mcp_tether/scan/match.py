"""Who a process is to the hosts: a host itself, a configured server, a host's child.

Guarantees:
- Hosts are recognised conservatively, by executable name or a path only a host
  installs; a recognised host is never reported as a server.
- A config entry matches a process by its command and its arguments in order among
  the process's words (a `sh -c` string split into words), or by the package the
  process was identified as running: `npx -y X` is matched to the `npm exec X` it
  became and to the node script from X's npx cache; `uvx X` to X's environment.
- `looks_like_mcp` is a name guess and is only ever reported as one.
- `Matcher.exactly` says whether a tree runs an entry exactly as written (its command
  and every argument, flags included, its cwd and environment) and `fingerprint` names
  the entry as written: an edit of any of them is told apart (`superseded`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_tether import hosts
from mcp_tether.guard.argv import parse_guard_argv
from mcp_tether.scan.identify import split_title
from mcp_tether.scan.model import What

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

__all__ = ["classify_host", "looks_like_mcp", "Matcher", "load_config", "tokens", "base",
           "is_guard", "runner_of", "guarded_argv", "RUNNERS", "SHELLS", "SUBREAPERS",
           "INTERPRETERS_RE", "HOST_NAMES", "entry_key"]

# Processes that adopt orphans. Being adopted by one of these (rather than by the
# process that started you) is what "parent gone" looks like from outside.
SUBREAPERS = frozenset(
    {"systemd", "init", "tini", "docker-init", "dumb-init", "catatonit", "s6-svscan",
     "runsvdir", "launchd"}
)
# Processes that run the real server for the host and pass stdio through.
RUNNERS = frozenset(
    {"npx", "npm", "uvx", "uv", "pipx", "bunx", "bun", "pnpm", "pnpx", "yarn", "deno",
     "docker", "podman", "mcp-tether"}
)
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish", "cmd", "cmd.exe"})
INTERPRETERS_RE = re.compile(r"^(node|nodejs|python[0-9.]*|pythonw?|pypy[0-9.]*|ruby|java)$")

_MCP_WORD = re.compile(
    r"""(?xi)^(?:
        mcp[-_](?!tether\b)[\w.-]+          # mcp-server-git, mcp_server_fetch, mcp-remote
      | fastmcp
      | [\w.-]+[-_.]mcp(?:[-_]server)?(?:\.(?:py|js|mjs|cjs|ts))?   # foo-mcp, github-mcp-server
    )$""",
)
_VERSION_SUFFIX = re.compile(r"(?<=.)@[\w.^~<>=*-]+$")
_SPEC_END = re.compile(r"[=<>~!\[]")
_SEPARATORS = re.compile(r"[-_.]+")
# Commands whose own options come before the package they run (`npx -y pkg ...`).
_RUNNER_COMMANDS = frozenset({"npx", "bunx", "pnpx", "uvx"})

HOST_NAMES: dict[str, str] = {
    "claude": "claude-code", "claude-desktop": "claude-desktop", "Claude": "claude-desktop",
    "Claude.exe": "claude-desktop", "cursor": "cursor", "Cursor": "cursor",
    "Cursor.exe": "cursor", "Cursor Helper": "cursor", "Cursor Helper (Plugin)": "cursor",
    "code": "vscode", "Code": "vscode", "Code.exe": "vscode", "code-insiders": "vscode",
    "code-oss": "vscode", "codium": "vscode", "Code Helper": "vscode",
    "Code Helper (Plugin)": "vscode", "windsurf": "windsurf", "Windsurf": "windsurf",
    "Windsurf.exe": "windsurf", "Windsurf Helper (Plugin)": "windsurf", "zed": "zed",
    "Zed": "zed", "zed-editor": "zed", "zed.exe": "zed",
}
_HOST_PATHS = (
    ("/Claude.app/", "claude-desktop"),
    ("@anthropic-ai/claude-code/", "claude-code"),
    ("/Cursor.app/", "cursor"),
    ("/Visual Studio Code.app/", "vscode"),
    ("/.vscode-server/", "vscode"),
    ("/.cursor-server/", "cursor"),
    ("/Windsurf.app/", "windsurf"),
    ("/.windsurf-server/", "windsurf"),
    ("/Zed.app/", "zed"),
)


def classify_host(argv: Sequence[str], comm: str = "") -> str | None:
    """The host an MCP client process belongs to, judged conservatively, or None."""
    if not argv:
        return HOST_NAMES.get(comm) if comm in ("claude", "cursor", "zed-editor") else None
    name = HOST_NAMES.get(os.path.basename(argv[0]))
    if name is not None:
        return name
    head = " ".join(argv[:2])
    for marker, host in _HOST_PATHS:
        if marker in head:
            return host
    return None


def tokens(argv: Sequence[str]) -> list[str]:
    """argv with a rewritten title split, and `sh -c STRING` split into words too."""
    words = split_title(list(argv))
    out = list(words)
    for i, a in enumerate(words[:-1]):
        if a in ("-c", "/c", "/C", "-lc") and os.path.basename(words[0]) in SHELLS:
            try:
                out += shlex.split(words[i + 1])
            except ValueError:
                out += words[i + 1].split()
            break
    return out


def base(token: str) -> str:
    t = token.rstrip("/")
    if "@" in t:  # a version suffix needs one; most words have none (no regex then)
        t = _VERSION_SUFFIX.sub("", t)
    return t.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]


def package_spec(token: str) -> str:
    """`@scope/pkg@1.2` -> `@scope/pkg`; `pkg==1.0` / `pkg@latest` -> `pkg`."""
    t = _VERSION_SUFFIX.sub("", token)
    return _SPEC_END.split(t, maxsplit=1)[0]


def looks_like_mcp(argv: Sequence[str]) -> bool:
    """Argv that names an MCP server (`@modelcontextprotocol/server-x`, `mcp-server-x`,
    `x-mcp`, `fastmcp` ...): a guess, never more."""
    joined = " ".join(argv).lower()
    if "mcp" not in joined and "modelcontextprotocol" not in joined:
        return False  # the cheap answer for nearly every process on a machine
    for t in tokens(argv):
        if t.startswith("-") or len(t) > 512:
            continue
        if "@modelcontextprotocol/server-" in t:
            return True
        if _MCP_WORD.match(base(t)):
            return True
    return False


def is_guard(argv: Sequence[str]) -> bool:
    bases = [os.path.basename(a) for a in argv[:4]]
    return ("mcp-tether" in bases or "mcp_tether" in argv[:4]) and "run" in argv[:6]


def guarded_argv(argv: Sequence[str]) -> list[str] | None:
    """The inner command of `mcp-tether run [opts] -- CMD`, however spelled, or None."""
    if not is_guard(argv):
        return None
    got = parse_guard_argv(list(argv))
    return list(got.command) if got is not None else None


def runner_of(argv: Sequence[str]) -> str | None:
    """The package runner this argv starts a server through (npx, uvx, ...), or None."""
    words = split_title(list(argv))[:2]
    if len(argv) > 2 and os.path.basename(argv[0]) in SHELLS and argv[1] in ("-c", "/c", "-lc"):
        try:
            words = shlex.split(argv[2])[:2]
        except ValueError:
            words = argv[2].split()[:2]
    for t in words:
        b = os.path.basename(t)
        if b.endswith((".exe", ".cmd")):
            b = b.rsplit(".", 1)[0]
        if b in RUNNERS:
            return b
    return None


def _norm(name: str) -> str:
    return _SEPARATORS.sub("-", name).lower()


@dataclass
class Matcher:
    host: str
    name: str
    path: str
    cmd: str
    sig: list[str]  # the entry's non-flag args, in order
    package: str | None  # what `npx -y X` / `uvx X` runs
    command: str = ""  # the entry's command, as written
    args: tuple[str, ...] = ()  # every argument, flags included, as written
    cwd: str | None = None
    env: tuple[tuple[str, str], ...] = ()  # the variables the entry sets, by name

    @classmethod
    def of(cls, entry: Any) -> Matcher:
        args = [str(a) for a in (getattr(entry, "args", None) or [])]
        command = str(getattr(entry, "command", "") or "")
        cmd = base(command)
        sig = [a for a in args if not a.startswith("-")]
        # An entry already behind the guard runs what it guards: its package is that one's.
        inner = guarded_argv([cmd, *args]) if getattr(entry, "wrapped", False) else None
        runner, rest = (base(inner[0]), inner[1:]) if inner else (cmd, args)
        words = [a for a in rest if not a.startswith("-")]
        package = None
        if runner in ("npx", "bunx", "pnpx", "uvx", "pipx") and words:
            first = words[1] if runner == "pipx" and words[0] == "run" and len(words) > 1 \
                else words[0]
            package = package_spec(first)
        env = getattr(entry, "env", None) or {}
        cwd = getattr(entry, "cwd", None)
        return cls(str(getattr(entry, "host", "") or ""), str(getattr(entry, "name", "") or ""),
                   str(getattr(entry, "path", "") or ""), cmd, sig, package, command,
                   tuple(args), str(cwd) if cwd else None,
                   tuple(sorted((str(k), str(v)) for k, v in env.items())))

    @property
    def key(self) -> str:
        """The entry's name in the samples file: its host, name and file."""
        return entry_key({"host": self.host, "name": self.name, "path": self.path})

    @property
    def fingerprint(self) -> str:
        """The entry as written (command, every argument, cwd, environment): an edit of
        any of them gives another fingerprint."""
        doc = json.dumps([self.command, list(self.args), self.cwd, list(self.env)])
        return hashlib.sha256(doc.encode("utf-8", "surrogateescape")).hexdigest()[:16]

    def exactly(self, argvs: Sequence[Sequence[str]], cwd: str,
                env: Mapping[str, str] | None) -> bool:
        """Does a server tree (its members' argv, its root's cwd and environment) run
        this entry exactly as written: one member's command line ending in the entry's
        command and every argument, flags included (for a package runner, the words
        from the package on: `npx -y pkg --v1` runs as `npm exec pkg --v1`), in the
        entry's cwd, with every variable the entry sets at the entry's value?"""
        if not self.cmd:
            return False
        if self.env and (env is None or any(env.get(k) != v for k, v in self.env)):
            return False
        if self.cwd and os.path.isabs(self.cwd) \
                and os.path.normpath(self.cwd) != os.path.normpath(cwd or ""):
            return False
        want = [self.command, *self.args]
        if self.cmd in _RUNNER_COMMANDS:
            i = next((n for n, a in enumerate(self.args) if not a.startswith("-")), None)
            want = list(self.args[i:]) if i is not None else want
        return any(_ends_with(words, want, cwd) for argv in argvs
                   for words in (split_title(list(argv)), tokens(argv)))

    def matches(self, toks: list[str], bases: set[str]) -> bool:
        if not self.cmd:
            return False
        if self.cmd not in bases and not (self.cmd == "npx" and "npm" in bases):
            return False
        if not self.sig:
            return True
        # The entry's arguments, in order, among the process's words. npx shows itself
        # as `npm exec pkg`; a path argument may appear resolved: compare basenames too.
        i = 0
        for t in toks:
            s = self.sig[i]
            if t == s or base(t) == base(s):
                i += 1
                if i == len(self.sig):
                    return True
        return False

    def matches_package(self, what: What) -> bool:
        """`npx -y X` / `uvx X`: the process was identified as running package X."""
        if self.package is None or what.package is None:
            return False
        if what.runtime == "python":
            return _norm(self.package) == _norm(what.package)
        return self.package == what.package


def entry_key(c: Mapping[str, str | None]) -> str:
    """A config entry's name in the samples file: host, name and file."""
    return "\0".join((c.get("host") or "", c.get("name") or "", c.get("path") or ""))


def _ends_with(words: list[str], want: list[str], cwd: str) -> bool:
    """`words` ends with `want`: the first word by its name (a command found on PATH, a
    package's bin), each other word as written or as the same path from `cwd`."""
    if not want or len(words) < len(want):
        return False
    tail = words[len(words) - len(want):]
    if base(tail[0]) != base(want[0]):
        return False
    for got, w in zip(tail[1:], want[1:], strict=True):
        if got != w and not ("/" in got + w and os.path.normpath(os.path.join(cwd or "/", got))
                             == os.path.normpath(os.path.join(cwd or "/", w))):
            return False
    return True


def _matchers(entries: Iterable[Any]) -> list[Matcher]:
    return [
        Matcher.of(e) for e in entries
        if getattr(e, "transport", "stdio") == "stdio" and getattr(e, "command", None)
        and not getattr(e, "disabled", False)
    ]


def _read(**kw: Any) -> tuple[list[Matcher], list[str]]:
    try:
        entries, errors = hosts.configured_servers(**kw)
    except Exception as exc:  # noqa: BLE001  # config trouble must not stop the scan
        return [], [f"host configs: {exc}"]
    return _matchers(entries), [str(e) for e in errors]


def load_config(home: str | None, cwd: str | None, config: str | None,
                servers: Iterable[Any] | None) -> tuple[list[Matcher], list[str]]:
    """Matchers for every stdio server of every host config found (plus `config`),
    read afresh on every call: an edit to a config is seen by the next scan."""
    if servers is not None:
        return _matchers(servers), []
    matchers, errors = _read(home=None if home is None else Path(home),
                             cwd=None if cwd is None else Path(cwd))
    if config is not None:
        more, errs = _read(config=config)
        matchers, errors = matchers + more, errors + errs
    return matchers, errors
