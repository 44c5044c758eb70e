"""The guard's executable names, and the core's recogniser of a guarded command line.

`parse_guard_argv` is the core's (`guard/argv.py`): `mcp-tether run [opts] [--] CMD`,
by any path, `python [flags] -m mcp_tether run ...`, `uvx mcp-tether[@ver] run ...`.
`guard_prefix(argv)` is how many leading words of argv belong to the guard, so that
`wrap` never nests a second guard; `probe` starts the entry as the host does, guard included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_tether.guard.argv import GuardCommand, parse_guard_argv

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["GuardCommand", "parse_guard_argv", "guard_prefix", "TETHER_NAMES", "is_tether_name"]

TETHER_NAMES = ("mcp-tether", "mcp-tether.exe")


def is_tether_name(word: str) -> bool:
    """Is `word` the mcp-tether executable, by its file name?"""
    return word.replace("\\", "/").rsplit("/", 1)[-1].lower() in TETHER_NAMES


def guard_prefix(argv: Sequence[str]) -> int | None:
    """The number of leading words that are the guard (None: not a guarded command)."""
    guard = parse_guard_argv(list(argv))
    if guard is None:
        return None
    return len(argv) - len(guard.command)
