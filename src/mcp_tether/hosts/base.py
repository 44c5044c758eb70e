"""What a host is, as data: its files, its entry shape, its variables and its wrap hazards.

Every host module (`hosts/<host>.py`) is one `Host(...)` value: a function from a
`Machine` to the files the host reads (each with the place the host documents it), a
`Shape` saying where servers sit and which keys launch them, the name of its variable
syntax (see `expand.py`) and the checks that find entries wrapping would break. The
reading of one entry from plain values lives here, once, for every host and format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_tether.hosts.guardargv import guard_prefix
from mcp_tether.hosts.model import ConfigFile, Machine, ServerEntry

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    # A wrap hazard: (entry, the machine) -> the reason wrapping would break it, or None.
    Check = Callable[[ServerEntry, Machine], str | None]

__all__ = ["Shape", "Host", "Launch", "read_entry", "STANDARD"]


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


STANDARD = Shape(tables=(("mcpServers",),))


@dataclass(frozen=True)
class Host:
    """One supported host (see the module docstring)."""

    name: str
    title: str
    shape: Shape
    files: Callable[[Machine], list[ConfigFile]]
    variables: str = "none"  # the expansion style, a key of expand.STYLES
    checks: tuple[Check, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)  # documented, not detectable


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


def _strs(value: list[Any]) -> list[str]:
    import json

    return [v if isinstance(v, str) else json.dumps(v) for v in value]


def read_entry(
    host: str | None,
    shape: Shape,
    path: Path,
    key_path: tuple[str, ...],
    value: Any,
) -> tuple[ServerEntry, Launch | None, str]:
    """One entry from its plain value: (entry, where to edit it or None, why not)."""
    from collections.abc import Mapping  # here: only when a config file is read

    name = key_path[-1]
    entry = ServerEntry(name, host, path, key_path, None, transport="remote")
    if not isinstance(value, Mapping):
        return entry, None, "entry is not an object"
    v: dict[str, Any] = dict(value)
    entry.extra = v
    entry.disabled = v.get("disabled") is True or v.get("enabled") is False
    obj_path: tuple[str, ...] = ()
    command = v.get(shape.command_key)
    if isinstance(command, Mapping) and not shape.command_is_argv:
        # Zed's older form: "command": {"path": ..., "args": [...], "env": {...}}
        obj_path, v = (shape.command_key,), {**v, **command}
        command = command.get("path")
        cmd_key = "path"
    else:
        cmd_key = shape.command_key
    for key in shape.env_keys:
        env = v.get(key)
        if isinstance(env, Mapping):
            entry.env = {str(k): str(x) for k, x in env.items()}
            break
    entry.cwd = v.get("cwd") if isinstance(v.get("cwd"), str) else None
    entry.env_file = v.get("envFile") if isinstance(v.get("envFile"), str) else None
    kind = v.get("type")
    if command is None or any(k in v for k in shape.remote_keys) or kind not in shape.stdio_types:
        if command is None and any(k in v for k in shape.remote_keys):
            why = "remote (url)"
        elif command is None:
            why = "no command (remote or extension-provided)"
        else:
            why = f"remote (type {kind!r})"
        return entry, None, why
    entry.transport = "stdio"
    if shape.command_is_argv:
        if not isinstance(command, list) or not command or not isinstance(command[0], str):
            return entry, None, "command is not a non-empty list"
        if not command[0].strip():
            return entry, None, 'empty "command": nothing to run'
        argv = _strs(command)
        entry.command, entry.args = argv[0], argv[1:]
        launch = Launch("argv", obj_path, cmd_key, "")
    else:
        if not isinstance(command, str):
            return entry, None, "command is not a string"
        if not command.strip():
            return entry, None, 'empty "command": nothing to run'
        args = v.get(shape.args_key, [])
        if not isinstance(args, list):
            return entry, None, "args is not a list"
        entry.command, entry.args = command, _strs(args)
        launch = Launch("pair", obj_path, cmd_key, shape.args_key)
    prefix = guard_prefix([entry.command, *entry.args])
    if prefix is not None:
        entry.wrapped = True
        entry.guard_prefix = prefix - 1  # counted in args, not argv
    return entry, launch, ""
