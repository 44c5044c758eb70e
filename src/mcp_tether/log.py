"""Diagnostics on stderr only, tagged with the pid; level from MCP_TETHER_LOG.

Never stdout: on the guard's and the helper's path stdout carries protocol bytes.
The guard writes with os.write (importing `logging` costs start-up time on its path).
The library helper calls `use_logging()` when armed: from then on every line goes
through `logging.getLogger("mcp_tether")`. Unless that logger already has a handler
(configure it before arming to route our lines elsewhere), it gets one that writes the
bare message to stderr and does not propagate: the SDKs install rich handlers on the
root logger, and the one line must stay one plain line. An unknown MCP_TETHER_LOG
value is reported once, then treated as `warning`.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's own flag, without importing typing on the start-up path
if TYPE_CHECKING:
    import logging

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "quiet": 100}
LOGGER_NAME = "mcp_tether"
_raw = os.environ.get("MCP_TETHER_LOG", "warning")
_threshold = _LEVELS.get(_raw.strip().lower(), 30)
_unknown: str | None = None if _raw.strip().lower() in _LEVELS else _raw
_logger: object | None = None  # a logging.Logger once use_logging() ran


def _write(line: str) -> None:
    try:  # noqa: SIM105  # contextlib would pull functools onto the start-up path
        os.write(2, f"{line}\n".encode(errors="replace"))
    except OSError:
        pass  # stderr closed: nothing else to tell anyone


def _report_unknown() -> None:
    global _unknown
    if _unknown is not None:
        value, _unknown = _unknown, None
        _emit(30, f"mcp-tether: unknown MCP_TETHER_LOG value {value!r}"
              f" (expected {'|'.join(_LEVELS)}); using warning")


def _emit(level: int, line: str) -> None:
    logger = _logger
    if logger is not None:
        logger.log(level, line)  # type: ignore[attr-defined]  # a logging.Logger
    else:
        _write(line)


def use_logging() -> None:
    """Route every later line through `logging.getLogger("mcp_tether")`.

    Its level comes from MCP_TETHER_LOG. Without a handler of its own, it gets a stderr
    handler printing the bare message (and stops propagating to the root's handlers).
    """
    global _logger
    if _logger is None:
        import logging  # deferred: only the helper pays for it (its SDK imported it already)

        logger = logging.getLogger(LOGGER_NAME)
        logger.setLevel(_threshold if _threshold < 100 else logging.CRITICAL + 1)
        if not logger.handlers:
            handler = _StderrHandler()
            handler.setFormatter(logging.Formatter("%(message)s"))
            logger.addHandler(handler)
            logger.propagate = False
        _logger = logger
    _report_unknown()


def _StderrHandler() -> logging.Handler:  # noqa: N802  # a class, made once logging is loaded
    """A StreamHandler writing to whatever `sys.stderr` is at each line (a plain one
    keeps the stream it was made with: a program that swaps stderr later, as pytest's
    capture does per test, would send our lines to a stream no one reads)."""
    import logging  # noqa: F811  # deferred: only the helper pays for it
    import sys

    # Generic in typeshed, but not subscriptable at run time before Python 3.11.
    class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
        @property
        def stream(self) -> object:
            return sys.stderr

        @stream.setter
        def stream(self, _value: object) -> None:
            pass

    return StderrHandler()


def log(level: str, msg: str) -> None:
    """Write one tagged line to stderr if `level` passes MCP_TETHER_LOG."""
    _report_unknown()
    if _LEVELS[level] < _threshold:
        return
    _emit(_LEVELS[level], f"mcp-tether[{os.getpid()}] {level}: {msg}")


def say(msg: str) -> None:
    """One line for the user on stderr, whatever the level (unless `quiet`).

    Through `logging` it goes at WARNING (or the threshold, if higher), so that the
    configured level never hides it.
    """
    _report_unknown()
    if _threshold >= 100:
        return
    _emit(max(30, _threshold), msg)


def debug(msg: str) -> None:
    log("debug", msg)


def info(msg: str) -> None:
    log("info", msg)


def warning(msg: str) -> None:
    log("warning", msg)
