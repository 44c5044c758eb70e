"""TOML configs (Codex `config.toml`): read entries and edit them with tomlkit.

Guarantees: tomlkit keeps every byte it is not asked to change (comments, quoting,
spacing, key order); wrap inserts the guard at the front of `args` (keeping the
command's own string item, quotes and all) and unwrap removes exactly that. Where
`args` was absent, wrap appends `args = ["run", "--", CMD]` (tomlkit's own spacing,
which its in-place inserts never produce) and unwrap recognises that and deletes the
key again. Whatever tomlkit does, the caller checks that unwrap(wrap(x)) == x before
writing, and refuses otherwise. tomlkit is imported where a TOML file is read or edited:
without it, only TOML files fail, with one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp_tether.errors import ConfigError
from mcp_tether.hosts.base import read_entry
from mcp_tether.hosts.model import Shape, Spot

__all__ = ["parse", "spots", "wrap_entry", "unwrap_entry", "dumps"]


def _tomlkit() -> Any:
    try:
        import tomlkit
    except ImportError:  # pragma: no cover - a declared dependency
        raise ConfigError("", "editing TOML needs tomlkit (pip install tomlkit)") from None
    return tomlkit


def parse(text: str, path: str) -> Any:
    tomlkit = _tomlkit()
    try:
        return tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        msg = str(exc).split(" at line ")[0]
        raise ConfigError(path, f"invalid TOML: {msg}", line=exc.line, column=exc.col) from None
    except (ValueError, RecursionError) as exc:
        raise ConfigError(path, f"invalid TOML: {exc}") from None


def dumps(doc: Any) -> str:
    return str(_tomlkit().dumps(doc))


def spots(doc: Any, shape: Shape, host: str | None, path: Path) -> list[Spot]:
    """Every entry of the server tables of `doc`, with the tomlkit table to edit."""
    out = []
    for table_path in shape.tables:
        node: Any = doc
        for key in table_path:
            node = node.get(key) if isinstance(node, Mapping) else None
        if not isinstance(node, Mapping):
            continue
        for name, value in node.items():
            plain = value.unwrap() if hasattr(value, "unwrap") else value
            entry, launch, problem = read_entry(host, shape, path, (*table_path, name), plain)
            out.append(Spot(entry, launch, problem, value))
    return out


def _fresh(raw: str) -> str:
    return f'["run", "--", {raw}]'


def wrap_entry(table: Any, cmd_key: str, args_key: str, argv0: str) -> None:
    tomlkit = _tomlkit()
    cmd_item = table[cmd_key]
    if args_key in table:
        arr = table[args_key]
        for word in (cmd_item, "--", "run"):
            arr.insert(0, word)
    else:
        arr = tomlkit.array()
        arr.extend(["run", "--"])
        arr.append(cmd_item)
        table[args_key] = arr
    table[cmd_key] = argv0


def unwrap_entry(table: Any, cmd_key: str, args_key: str, prefix: int) -> None:
    arr = table[args_key]
    cmd_item = arr[prefix]
    fresh = prefix == 2 and len(arr) == 3 and arr.as_string() == _fresh(cmd_item.as_string())
    last = list(table.keys())[-1] == args_key
    table[cmd_key] = cmd_item
    if fresh and last:
        del table[args_key]
        return
    for _ in range(prefix + 1):
        del arr[0]
