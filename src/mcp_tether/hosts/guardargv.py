"""Recognise a command line that already runs a server behind the guard.

Local stand-in for the core's `guard/argv.parse_guard_argv` (same name, same answer),
to be replaced by an import once the `core` branch lands. It recognises
`mcp-tether run [opts] [--] CMD...`, `/abs/path/mcp-tether run ...`,
`python -m mcp_tether run ...` and `uvx mcp-tether run ...`, with the guard's own
options (`--grace S`, `--term-grace S`, `--grace=S`), so that `wrap` never nests a
second guard and `probe` starts the inner server.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["GuardCommand", "parse_guard_argv", "TETHER_NAMES", "is_tether_name"]

TETHER_NAMES = ("mcp-tether", "mcp-tether.exe")
_VALUE_OPTIONS = ("--grace", "--term-grace")
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?(\.exe)?|py(\.exe)?", re.I)


@dataclass(frozen=True)
class GuardCommand:
    """A guard invocation: how many words start it, its options, and the inner command."""

    prefix: int  # argv[:prefix] is the guard (launcher, run, options, --)
    options: tuple[str, ...]
    command: tuple[str, ...]


def _base(word: str) -> str:
    return word.replace("\\", "/").rsplit("/", 1)[-1]


def is_tether_name(word: str) -> bool:
    """Is `word` the mcp-tether executable, by its file name?"""
    return _base(word).lower() in TETHER_NAMES


def _after_launcher(argv: Sequence[str]) -> int | None:
    """The index of `run` when argv starts with one of the guard's launchers."""
    if not argv:
        return None
    if is_tether_name(argv[0]):
        return 1
    if _PYTHON.fullmatch(_base(argv[0])) and list(argv[1:3]) == ["-m", "mcp_tether"]:
        return 3
    if _base(argv[0]).lower() in ("uvx", "uvx.exe") and len(argv) > 1 and argv[1] == "mcp-tether":
        return 2
    return None


def parse_guard_argv(argv: Sequence[str]) -> GuardCommand | None:
    """The guard's options and inner command when `argv` runs `mcp-tether run`, else None."""
    i = _after_launcher(argv)
    if i is None or i >= len(argv) or argv[i] != "run":
        return None
    i += 1
    options: list[str] = []
    while i < len(argv):
        word = argv[i]
        if word == "--":
            i += 1
            break
        if word in _VALUE_OPTIONS and i + 1 < len(argv):
            options += [word, argv[i + 1]]
            i += 2
            continue
        if word.startswith(tuple(o + "=" for o in _VALUE_OPTIONS)):
            options.append(word)
            i += 1
            continue
        break
    if i >= len(argv):
        return None  # no inner command: not a runnable guard line
    return GuardCommand(i, tuple(options), tuple(argv[i:]))
