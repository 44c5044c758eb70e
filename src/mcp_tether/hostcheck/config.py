"""The recorder, written into a host's own config file in a throwaway HOME and project.

    place = write_recorder("claude-code", home, project, argv)   # -> Placement
    place.edit(argv2)                                            # the reconnect's edit

Guarantees:
- Where the file goes and how an entry looks come from the hosts package (`hosts/`):
  the host's first file of the asked scope (`user` or `project`; by default the first
  of either) on a Linux machine whose HOME is `home` and whose project folder is
  `project`, its first server table, its command/args keys. Nothing outside `home`
  and `project` is written.
- Files are written atomically (a rename), and read back with the
  host's own reader (`hosts.read_servers`): an entry the host would not find as the
  recorder's command is an error here, not a silent no-op at run time.
- A JSON file is merged into, never rewritten whole: the entry (and what `NEEDS`
  seeds) is set inside the document as it is on disk, so the keys a host wrote there
  while it ran (Claude Code rewrites `~/.claude.json` as it goes) survive the
  reconnect's edit. TOML files are still written whole.
- JSON and TOML hosts are supported; YAML (Goose) is refused with one line: our hosts
  package reads YAML spans but has no YAML writer, and a hand-made one would be a second
  YAML emitter to keep right.
- What else a host needs before it starts a project's servers is written beside the
  entry (`NEEDS`): Gemini CLI starts none, not even user-scope ones, in a folder it does
  not trust, so the throwaway project goes into `~/.gemini/trustedFolders.json`; Claude
  Code's interactive session opens on dialogs (onboarding, folder trust, a custom API
  key, a project server's approval) unless `~/.claude.json` and the project's
  `.claude/settings.local.json` already hold their answers.
- Hosts that `mcp-tether hosts` does not know but that keep a known host's file shape in
  a folder of their own (`FORKS`: Qwen Code, a Gemini CLI fork, in `~/.qwen/`) are
  written with that host's shape and read back with its reader.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_tether.errors import UsageError
from mcp_tether.hosts import read_servers
from mcp_tether.hosts.locations import HOSTS, REGISTRY
from mcp_tether.hosts.model import Machine, Shape

__all__ = ["ENTRY_NAME", "Placement", "write_recorder", "host_names", "merge_json"]

ENTRY_NAME = "mcp-tether-recorder"


# name -> (the host whose shape it keeps, that host's folder under HOME, its own)
FORKS: dict[str, tuple[str, str, str]] = {
    # QwenLM/qwen-code packages/core/src/config/storage.ts: QWEN_DIR = ".qwen"
    "qwen-code": ("gemini-cli", ".gemini", ".qwen"),
    # Kilo CLI 7.x, an OpenCode fork: its global folder (`~/.config/kilo`) reads
    # kilo.jsonc, kilo.json, opencode.jsonc, opencode.json, config.json (read in its
    # binary: the list its Claude-settings import writes into), OpenCode's `mcp` shape.
    "kilo": ("opencode", ".config/opencode", ".config/kilo"),
}


def host_names() -> tuple[str, ...]:
    return (*HOSTS, *FORKS)


def host_env(home: Path, project: Path, base: dict[str, str]) -> dict[str, str]:
    """The environment of a host run in a throwaway HOME: XDG folders inside it, and npm's
    cache left where it was (so that `npx` hosts keep working offline)."""
    env = dict(base)
    real_home = base.get("HOME") or os.path.expanduser("~")
    env.setdefault("npm_config_cache", os.path.join(real_home, ".npm"))
    env.setdefault("UV_CACHE_DIR", os.path.join(real_home, ".cache", "uv"))
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["XDG_DATA_HOME"] = str(home / ".local" / "share")
    env["XDG_STATE_HOME"] = str(home / ".local" / "state")
    for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "APPDATA"):
        env.pop(var, None)
    return env


@dataclass
class Placement:
    host: str
    path: Path
    key_path: tuple[str, ...]
    fmt: str
    shape: Shape
    extra: dict[str, Any] = field(default_factory=dict)  # keys added to the entry
    head: str = ""  # TOML: what goes before the entry's table (top-level keys, tables)

    def _entry(self, argv: list[str]) -> dict[str, Any]:
        s = self.shape
        if s.command_is_argv:
            entry: dict[str, Any] = {s.command_key: list(argv)}
        else:
            entry = {s.command_key: argv[0], s.args_key: list(argv[1:])}
        if s.stdio_type is not None:
            entry = {"type": s.stdio_type, **entry}
        return {**entry, **self.extra}

    def render(self, argv: list[str]) -> bytes:
        """The file with the entry: TOML whole, JSON merged into the document on disk."""
        entry = self._entry(argv)
        if self.fmt == "toml":
            head = ".".join(json.dumps(k) if not k.replace("_", "").isalnum() else k
                            for k in self.key_path)
            lines = [f"[{head}]"] + [f"{k} = {json.dumps(v)}" for k, v in entry.items()]
            return ((self.head.rstrip() + "\n\n" if self.head else "")
                    + "\n".join(lines) + "\n").encode()
        doc = read_json(self.path)
        node = doc
        for key in self.key_path[:-1]:
            if not isinstance(node.get(key), dict):
                node[key] = {}
            node = node[key]
        node[self.key_path[-1]] = entry
        return (json.dumps(doc, indent=2) + "\n").encode()

    def edit(self, argv: list[str]) -> None:
        """Write the entry with `argv` (atomically), and check that the host reads it."""
        write_atomic(self.path, self.render(argv))
        found = [e for e in read_servers(self.path, self.host) if e.name == ENTRY_NAME]
        if (not found or found[0].transport != "stdio" or found[0].disabled
                or [found[0].command, *found[0].args] != list(argv)):
            raise UsageError(f"--host {self.host}: the recorder's entry in {self.path} does "
                             "not read back as written")


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in `path`; {} for a missing file, or one that is no JSON object (a
    throwaway file: what the host could not read either is not worth keeping)."""
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def write_atomic(path: Path, data: bytes) -> None:
    # Not hosts.atomic.write_config: its backups go to the user's state folder, and these
    # files are throwaway ones. A rename still makes the write atomic for a host watching
    # the file, or rewriting it (it reads either the old document or the new one).
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".mcp-tether-tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def merge_json(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Apply `change` to the JSON document in `path` (read as it is now) and write it back."""
    doc = read_json(path)
    change(doc)
    write_atomic(path, (json.dumps(doc, indent=2) + "\n").encode())


def _trust(folder_name: str) -> Callable[[Path, Path, Mapping[str, str]], None]:
    def trust(home: Path, project: Path, env: Mapping[str, str]) -> None:
        # gemini-cli packages/cli/src/config/trustedFolders.ts: {path: "TRUST_FOLDER"}
        folder = home / folder_name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    return trust


def _claude_code(home: Path, project: Path, env: Mapping[str, str]) -> None:
    """What Claude Code's interactive session asks before its prompt, answered ahead.

    Read in the cli bundled in Claude Code 2.1.197's binary (`strings claude.exe`):
    - `hasCompletedOnboarding`: unset, `showSetupScreens` shows the Onboarding screen
      (theme, login) first;
    - `projects[DIR].hasTrustDialogAccepted` (`aDe()`, DIR the resolved working folder):
      unset, the trust dialog, and project `.mcp.json` servers count as approved only
      through settings;
    - `customApiKeyResponses.approved` holding the key's last 20 characters (`mU(key)`
      is `key.slice(-20)`): else "Detected a custom API key ... use this API key?";
      only when ANTHROPIC_API_KEY is set for the host, and written into the throwaway
      HOME that is deleted with the check, as Claude Code's own "Yes" writes it;
    - `enabledMcpjsonServers` in the project's `.claude/settings.local.json`: what the
      "New MCP server found in .mcp.json" dialog's "Yes" writes (`localSettings`);
      `BGt()` approves a project server listed there.
    Merged into what is there: in user scope the recorder's entry is in `~/.claude.json`.
    """
    key = env.get("ANTHROPIC_API_KEY")

    def user_state(doc: dict[str, Any]) -> None:
        doc["hasCompletedOnboarding"] = True
        projects = doc.setdefault("projects", {})
        projects.setdefault(os.path.realpath(project), {})["hasTrustDialogAccepted"] = True
        if key:
            answers = doc.setdefault("customApiKeyResponses", {"approved": [], "rejected": []})
            approved = answers.setdefault("approved", [])
            if key[-20:] not in approved:
                approved.append(key[-20:])

    def approve(doc: dict[str, Any]) -> None:
        names = doc.setdefault("enabledMcpjsonServers", [])
        if ENTRY_NAME not in names:
            names.append(ENTRY_NAME)

    merge_json(home / ".claude.json", user_state)
    merge_json(project / ".claude" / "settings.local.json", approve)


def _copilot_trust(home: Path, project: Path, env: Mapping[str, str]) -> None:
    """Copilot CLI starts no MCP server in a folder it was not told to trust: the
    interactive session first asks "Do you trust the files in this folder?". Its answer
    "Yes, and remember" writes `trusted_folders` into `config.json` beside
    `mcp-config.json` (the folder `copilot_cli.files` names)."""
    folder = REGISTRY["copilot-cli"].files(
        Machine("linux", home, host_env(home, project, {}), project))[0].path.parent

    def trust(doc: dict[str, Any]) -> None:
        folders = doc.setdefault("trusted_folders", [])
        if str(project) not in folders:
            folders.append(str(project))

    merge_json(folder / "config.json", trust)


NEEDS: dict[str, Callable[[Path, Path, Mapping[str, str]], None]] = {
    "copilot-cli": _copilot_trust,
    "gemini-cli": _trust(".gemini"),
    "qwen-code": _trust(".qwen"),
    "claude-code": _claude_code,
}
SCOPES = ("user", "project")


def write_recorder(host: str, home: Path, project: Path, argv: list[str], *,
                   scope: str | None = None, env: Mapping[str, str] | None = None,
                   extra: Mapping[str, Any] | None = None, head: str = "") -> Placement:
    """Write the recorder's entry into `host`'s first file of `scope` (None: the first of
    user or project scope), and what the host needs beside it (`NEEDS`, given the host's
    `env`). `extra`: keys added to the entry (Codex's tool approval); `head`: TOML text
    before the entry's table (a model provider), for a TOML file."""
    if host not in host_names():
        raise UsageError(f"unknown host {host!r} (one of: {', '.join(host_names())})")
    shape_of, theirs, ours = FORKS.get(host, (host, "", ""))
    h = REGISTRY[shape_of]
    machine = Machine("linux", home, host_env(home, project, {}), project)
    if scope is not None and scope not in SCOPES:
        raise UsageError(f"--host-scope is one of {', '.join(SCOPES)}")
    files = [cf for cf in h.files(machine) if not cf.general
             and cf.scope in ((scope,) if scope else SCOPES)]
    if not files:
        raise UsageError(f"--host {host}: no {scope or 'user or project'}-scope config file "
                         "of this host on Linux")
    cf = files[0]
    if cf.format == "yaml":
        raise UsageError(f"--host {host}: writing YAML configs is not supported; "
                         "use `hostcheck -- HOST-ARGV` with {server}")
    path = cf.path
    for root in (home, project) if ours else ():  # the fork's own folder, either place
        if path.is_relative_to(root / theirs):
            path = root / ours / path.relative_to(root / theirs)
            break
    table = tuple(str(project) if k == "*" else k for k in h.shape.tables[0])
    # Read back as the host whose shape it keeps: the fork is not in the hosts package.
    place = Placement(shape_of, path, (*table, ENTRY_NAME), cf.format, h.shape,
                      dict(extra or {}), head if cf.format == "toml" else "")
    place.edit(argv)
    if host in NEEDS:
        NEEDS[host](home, project, env if env is not None else {})
    return place
