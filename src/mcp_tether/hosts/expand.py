"""Start a configured server the way its host would: variables, `envFile`, `cwd`.

Guarantees:
- `resolve(entry, style, ...)` returns the argv, the extra environment and the working
  folder the host would use, expanding variables with that host's own syntax (one
  table, `STYLES`, cited per host in the host modules and docs/hosts.md) in the
  command, args, env values, `cwd` and `envFile`.
- A variable the host would fill in from somewhere we cannot reach (`${input:...}`,
  a prompt; `${command:...}`; a Claude Code `${VAR}` unset and without `:-default`)
  raises `Unresolvable` naming it, so the probe reports a configuration error rather
  than blaming the server. Variables a host leaves literal stay literal.
- `envFile` is read as a dotenv file (`KEY=VALUE`, `export`, quotes, `#` comments);
  values from `env` win over it, as in VS Code.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from mcp_tether.hosts.model import ServerEntry

__all__ = ["Unresolvable", "Resolved", "resolve", "workspace_of", "read_env_file", "STYLES"]


class Unresolvable(Exception):
    """A variable the host fills in interactively (or errors on): names it."""

    def __init__(self, variable: str, why: str) -> None:
        super().__init__(f"{variable}: {why}")
        self.variable = variable
        self.why = why


@dataclass
class Resolved:
    argv: list[str]
    env: dict[str, str]
    cwd: str | None


@dataclass(frozen=True)
class _Ctx:
    env: Mapping[str, str]
    home: str
    workspace: str
    base: Path  # the config file's folder (relative file references)


_VSCODE = re.compile(r"\$\{([^}]*)\}")
_DOLLAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")
_OPENCODE = re.compile(r"\{(env|file):([^}]*)\}")


def _vscode(word: str, c: _Ctx, *, cursor: bool = False) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        fixed = {
            "workspaceFolder": c.workspace,
            "workspaceFolderBasename": os.path.basename(c.workspace),
            "userHome": c.home,
            "pathSeparator": os.sep,
            "/": os.sep,
        }
        if not cursor:
            fixed["cwd"] = c.workspace
        if name in fixed:
            return fixed[name]
        if name.startswith("env:"):
            return c.env.get(name[4:], "")
        if name.startswith("input:"):
            raise Unresolvable(m.group(0), "an input the host prompts for; set it in env instead")
        raise Unresolvable(m.group(0), "a variable only the host can fill in")

    return _VSCODE.sub(one, word)


def _claude_code(word: str, c: _Ctx) -> str:
    def one(m: re.Match[str]) -> str:
        name, sep, default = m.group(1).partition(":-")
        if name in c.env:
            return c.env[name]
        if sep:
            return default
        raise Unresolvable(m.group(0), "not set, and no :-default (Claude Code refuses it)")

    return _VSCODE.sub(one, word)


def _windsurf(word: str, c: _Ctx) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name.startswith("env:"):
            return c.env.get(name[4:], "")
        if name.startswith("file:"):
            return _file(name[5:], c, m.group(0))
        return m.group(0)

    return _VSCODE.sub(one, word)


def _dollar_braces(word: str, c: _Ctx) -> str:
    return _VSCODE.sub(lambda m: c.env.get(m.group(1), m.group(0)), word)


def _dollar(word: str, c: _Ctx) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return c.env.get(name, m.group(0))  # Gemini CLI leaves unknown references alone

    return _DOLLAR.sub(one, word)


def _opencode(word: str, c: _Ctx) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) == "env":
            return c.env.get(m.group(2), "")
        return _file(m.group(2), c, m.group(0)).strip()

    return _OPENCODE.sub(one, word)


def _file(ref: str, c: _Ctx, variable: str) -> str:
    path = Path(os.path.expanduser(ref))
    try:
        return (path if path.is_absolute() else c.base / path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise Unresolvable(variable, f"cannot read the file: {exc}") from None


STYLES: dict[str, Callable[[str, _Ctx], str]] = {
    "none": lambda word, c: word,
    "vscode": _vscode,
    "cursor": lambda word, c: _vscode(word, c, cursor=True),
    "claude-code": _claude_code,
    "windsurf": _windsurf,
    "dollar-braces": _dollar_braces,
    "dollar": _dollar,
    "opencode": _opencode,
}


def workspace_of(config: Path, scope: str, cwd: Path) -> Path:
    """The folder a host treats as the workspace for this file.

    A project file's workspace is the folder holding its dot-folder (`.vscode/mcp.json`
    -> the project; `.kiro/settings/mcp.json` -> the project); a user file's is the
    folder the probe runs in, standing for the folder the host has open.
    """
    if scope == "user":
        return cwd
    folder = Path(os.path.abspath(config)).parent
    root = folder
    while root.parent != root and (root.name.startswith(".") or root.parent.name.startswith(".")):
        root = root.parent
    if root == folder and scope == "config" and not config.name.startswith("."):
        return folder  # a plain file named with --config: its own folder
    return root


_DOTENV = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*?)\s*$")


def read_env_file(path: Path) -> dict[str, str]:
    """A dotenv file as a dict (raises OSError when it cannot be read)."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _DOTENV.match(line)
        if not m:
            continue
        key, value = m.groups()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            quote, value = value[0], value[1:-1]
            if quote == '"':
                value = value.replace("\\n", "\n").replace('\\"', '"')
        else:
            value = value.split(" #", 1)[0].rstrip()
        out[key] = value
    return out


def resolve(
    entry: ServerEntry,
    style: str,
    *,
    env: Mapping[str, str],
    home: Path,
    workspace: Path,
) -> Resolved:
    """The argv, extra env and cwd the host would start `entry` with (see module doc)."""
    expand = STYLES.get(style, STYLES["none"])
    ctx = _Ctx(env, str(home), str(workspace), Path(os.path.abspath(entry.path)).parent)
    # The whole command, the guard included when the entry is wrapped: the host runs it
    # so, and the probe judges a guarded server by the guard's promise.
    argv = [expand(w, ctx) for w in ([entry.command, *entry.args] if entry.command else [])]
    extra: dict[str, str] = {}
    if entry.env_file:
        where = Path(expand(entry.env_file, ctx))
        where = where if where.is_absolute() else workspace / where
        try:
            extra.update(read_env_file(where))
        except (OSError, UnicodeDecodeError) as exc:
            raise Unresolvable(f"envFile {entry.env_file}",
                               f"cannot read {where}: {getattr(exc, 'strerror', None) or exc}"
                               ) from None
    extra.update({k: expand(v, ctx) for k, v in entry.env.items()})
    cwd = expand(entry.cwd, ctx) if entry.cwd else None
    if cwd is not None and not os.path.isabs(cwd):
        cwd = str(workspace / cwd)
    return Resolved(argv, extra, cwd)
