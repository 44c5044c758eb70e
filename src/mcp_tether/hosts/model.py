"""The records the hosts package hands out: files, server entries, change results, machines,
and what reading a file gives (`Shape` of a host's entries, `Launch`, `Spot`, `Doc`).

Guarantees: dataclasses with `to_json()` (the CLI's JSON schema is these dicts);
a label never contains a lone surrogate (names come from JSON `\\ud800` escapes and
must still print on any terminal).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["ConfigFile", "ServerEntry", "ChangeResult", "Machine", "printable", "Shape",
           "Launch", "Spot", "Doc"]


def printable(text: str) -> str:
    """`text` with lone surrogates shown as `\\udXXX`, so it can always be encoded."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


@dataclass(frozen=True)
class Machine:
    """What discovery looks at: the OS, the home, the environment and the project folder.

    Tests fake a whole machine with one of these; `Machine.here()` is the real one.
    """

    platform: str  # a sys.platform value: "linux", "darwin", "win32"
    home: Path
    env: Mapping[str, str]
    cwd: Path | None = None
    root: Path = Path("/")  # where system-wide (managed) files are looked up

    @classmethod
    def here(cls, cwd: Path | None = None) -> Machine:
        from mcp_tether.platform import os_name  # the OS as data: the hosts' tables' key

        return cls(os_name(), Path.home(), os.environ, Path.cwd() if cwd is None else cwd)

    def children(self, folder: Path, pattern: str = "*") -> list[Path]:
        """`folder`'s entries matching `pattern`, sorted ([] if it cannot be listed)."""
        try:
            return sorted(folder.glob(pattern))
        except OSError:
            return []

    def project(self, host: str, source: str, *names: str, fmt: str = "json") -> list[ConfigFile]:
        """`host`'s project files `names` (paths below the project folder); none without one."""
        return [ConfigFile(host, "project", self.cwd / n, fmt, source) for n in names if self.cwd]

    def var(self, name: str) -> str | None:
        value = self.env.get(name)
        return value or None

    @property
    def config_home(self) -> Path:
        """XDG_CONFIG_HOME or ~/.config (Linux and, for CLI tools, macOS too)."""
        return Path(self.var("XDG_CONFIG_HOME") or self.home / ".config")

    @property
    def app_data(self) -> Path:
        """Where desktop apps keep settings: %APPDATA%, ~/Library/Application Support, XDG."""
        if self.platform == "win32":
            return Path(self.var("APPDATA") or self.home / "AppData" / "Roaming")
        if self.platform == "darwin":
            return self.home / "Library" / "Application Support"
        return self.config_home

    @property
    def local_app_data(self) -> Path:
        """%LOCALAPPDATA% on Windows (MSIX packages live below it)."""
        return Path(self.var("LOCALAPPDATA") or self.home / "AppData" / "Local")


@dataclass(frozen=True)
class ConfigFile:
    """One host config file: who reads it, at which scope, and where it is."""

    host: str
    scope: str  # "user" | "project" | "config" (named with --config) | "managed"
    path: Path
    format: str = "json"  # "json" (JSONC) | "toml" | "yaml"
    source: str = ""  # where the host documents this location
    general: bool = False  # an editor's general settings file: listed only with servers


@dataclass
class ServerEntry:
    """One server of a config file, as the host would launch it."""

    name: str
    host: str | None
    path: Path
    key_path: tuple[str, ...]  # from the document root to this entry
    command: str | None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    transport: str = "stdio"  # "stdio" | "remote"
    wrapped: bool = False  # already behind `mcp-tether run [opts] --`
    disabled: bool = False
    env_file: str | None = None  # VS Code / Cursor `envFile`
    extra: dict[str, Any] = field(default_factory=dict)  # the raw entry (for skip checks)
    guard_prefix: int = 0  # how many leading args belong to the guard when wrapped
    scope: str = "config"  # the file's ConfigFile.scope (where a host's workspace is)

    @property
    def label(self) -> str:
        """The name, plus the project for Claude Code's local scope (names repeat there)."""
        if len(self.key_path) == 4 and self.key_path[0] == "projects":
            return printable(f"{self.name} [{self.key_path[1]}]")
        return printable(self.name)

    @property
    def guarded_argv(self) -> list[str]:
        """The server's own argv: behind the guard when wrapped, else the command."""
        if self.command is None:
            return []
        if self.wrapped:
            return self.args[self.guard_prefix :]
        return [self.command, *self.args]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "host": self.host,
            "path": str(self.path),
            "key_path": list(self.key_path),
            "command": self.command,
            "args": self.args,
            "env": self.env,
            "cwd": self.cwd,
            "transport": self.transport,
            "wrapped": self.wrapped,
            "disabled": self.disabled,
        }


@dataclass
class ChangeResult:
    """What `wrap`/`unwrap` did (or would do, on a dry run) to one file."""

    path: Path
    host: str | None
    action: str  # "wrap" | "unwrap"
    changed: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (label, reason)
    diff: str = ""
    written: bool = False
    dry_run: bool = False
    backup: Path | None = None
    refused: str = ""  # why the whole file was left alone (work tree, managed file)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "host": self.host,
            "action": self.action,
            "refused": self.refused or None,
            "changed": self.changed,
            "skipped": [{"name": n, "reason": r} for n, r in self.skipped],
            "diff": self.diff,
            "written": self.written,
            "dry_run": self.dry_run,
            "backup": str(self.backup) if self.backup else None,
        }


# --- what reading one config file gives: the entry shape, and each entry's place ------


@dataclass(frozen=True)
class Shape:
    """Where a host keeps servers and how one entry names its launch command."""

    tables: tuple[tuple[str, ...], ...]  # key paths of server tables ("*" = any key)
    command_key: str = "command"
    args_key: str = "args"
    env_keys: tuple[str, ...] = ("env",)
    command_is_argv: bool = False  # OpenCode: "command": ["npx", "-y", "pkg"]
    stdio_types: tuple[Any, ...] = (None, "stdio")  # values of "type" meaning stdio
    remote_keys: tuple[str, ...] = ("url", "serverUrl", "httpUrl")

    @property
    def stdio_type(self) -> Any:
        """The "type" a written stdio entry carries (None: none): "stdio" where the host
        knows it, else the host's own word (OpenCode reads an entry without
        `type: "local"` as no local server at all)."""
        if "stdio" in self.stdio_types:
            return "stdio"
        return next((t for t in self.stdio_types if t is not None), None)


@dataclass
class Launch:
    """Where an entry's launch command sits, for the editors.

    kind "pair": `obj[cmd_key]` is a string and `obj[args_key]` an optional list;
    kind "argv": `obj[cmd_key]` is one list holding the command and its args.
    `obj_path` is the key path from the entry to `obj` (() or ("command",) for Zed's
    older object form).
    """

    kind: str
    obj_path: tuple[str, ...]
    cmd_key: str
    args_key: str


@dataclass
class Spot:
    """One entry and where its launch command sits (`launch` None: nothing to edit)."""

    entry: ServerEntry
    launch: Launch | None
    problem: str = ""
    node: Any = None  # the entry's jsonc.Node (JSON, YAML) or tomlkit table (TOML)


@dataclass
class Doc:
    """One config file read: its bytes, its parsed tree and its entries (`spots`)."""

    path: Path  # as given (for messages)
    real: Path  # symlinks resolved (what we write)
    raw: bytes
    format: str  # "json" | "yaml" | "toml"
    bom: str
    text: str
    root: Any  # jsonc.Node, or a tomlkit document
    shape: Shape | None = None
    spots: list[Spot] = field(default_factory=list)
