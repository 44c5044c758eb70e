"""Diagnostics on stderr only, tagged with the pid; level from MCP_TETHER_LOG.

Never stdout: on the guard's and the helper's path stdout carries protocol bytes.
Deliberately not `logging`: importing it costs start-up time on the guard's path.
"""

from __future__ import annotations

import os

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "quiet": 100}
_threshold = _LEVELS.get(os.environ.get("MCP_TETHER_LOG", "warning").lower(), 30)


def enabled(level: str) -> bool:
    return _LEVELS[level] >= _threshold


def log(level: str, msg: str) -> None:
    """Write one tagged line to stderr if `level` passes MCP_TETHER_LOG."""
    if _LEVELS[level] < _threshold:
        return
    try:  # noqa: SIM105  # contextlib would pull functools onto the start-up path
        os.write(2, f"mcp-tether[{os.getpid()}] {level}: {msg}\n".encode(errors="replace"))
    except OSError:
        pass  # stderr closed: nothing else to tell anyone


def say(msg: str) -> None:
    """One line for the user on stderr, whatever the level (unless `quiet`)."""
    if _threshold >= 100:
        return
    try:  # noqa: SIM105  # contextlib would pull functools onto the start-up path
        os.write(2, f"{msg}\n".encode(errors="replace"))
    except OSError:
        pass


def debug(msg: str) -> None:
    log("debug", msg)


def info(msg: str) -> None:
    log("info", msg)


def warning(msg: str) -> None:
    log("warning", msg)


