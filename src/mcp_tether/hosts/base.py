"""What a host is, as data: its files, its entry shape, its variables and its wrap hazards.

Every host module (`hosts/<host>.py`) is one `Host(...)` value: a function from a
`Machine` to the files the host reads (each with the place the host documents it), a
`Shape` saying where servers sit and which keys launch them, the name of its variable
syntax (see `expand.py`) and the checks that find entries wrapping would break. The
reading of one entry from plain values lives here, once, for every host and format.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_tether.guard.argv import parse_guard_argv
from mcp_tether.hosts.model import ConfigFile, Launch, Machine, ServerEntry, Shape

# A wrap hazard: (entry, the machine) -> the reason wrapping would break it, or None.
Check = Callable[[ServerEntry, Machine], str | None]

__all__ = ["Host", "read_entry", "is_tether_name", "STANDARD"]


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


def _strs(value: list[Any]) -> list[str]:
    return [v if isinstance(v, str) else json.dumps(v) for v in value]


def read_entry(
    host: str | None,
    shape: Shape,
    path: Path,
    key_path: tuple[str, ...],
    value: Any,
) -> tuple[ServerEntry, Launch | None, str]:
    """One entry from its plain value: (entry, where to edit it or None, why not)."""
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
    guard = parse_guard_argv([entry.command, *entry.args])
    if guard is not None:
        entry.wrapped = True
        # How many leading args (not argv words) are the guard's: `wrap` never nests a
        # second guard, `unwrap` removes exactly these, `probe` starts them as the host does.
        entry.guard_prefix = len(entry.args) - len(guard.command)
    return entry, launch, ""


def is_tether_name(word: str) -> bool:
    """Is `word` the mcp-tether executable, by its file name (any folder, `.exe` too)?"""
    return word.replace("\\", "/").rsplit("/", 1)[-1].lower() in ("mcp-tether", "mcp-tether.exe")
