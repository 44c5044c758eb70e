"""Process identity: (pid, start time), compared three ways (psutil `_get_ident` style).

The start time is whatever the platform backend reads (/proc's start ticks on Linux,
psutil's create_time in the portable backend); the record is `ProcRecord`, the one
process record of the package.
"""

from __future__ import annotations

from mcp_tether._plat.record import ProcessId, ProcRecord
from mcp_tether.platform import backend

__all__ = [
    "SAME",
    "DIFFERENT",
    "UNKNOWN",
    "ProcessId",
    "ProcRecord",
    "read_info",
    "identify",
    "compare",
    "is_running",
]

SAME = "same"
DIFFERENT = "different"  # gone, or the pid now belongs to another process
UNKNOWN = "unknown"  # not readable (permissions): never act on it


def read_info(pid: int) -> ProcRecord | None:
    """The process's current reading (a zombie too), or None if gone or unreadable."""
    try:
        return backend.read(pid)
    except PermissionError:
        return None


def identify(pid: int) -> ProcessId | None:
    """The identity of the live (non-zombie) process `pid`, or None."""
    info = read_info(pid)
    if info is None or info.exited:
        return None
    return info.ident


def compare(ident: ProcessId) -> str:
    """SAME if `ident` is still running (not a zombie), DIFFERENT if gone or reused,
    UNKNOWN if it may not be read."""
    try:
        info = backend.read(ident.pid)
    except PermissionError:
        return UNKNOWN
    if info is None or info.start != ident.start or info.exited:
        return DIFFERENT
    return SAME


def is_running(ident: ProcessId) -> bool:
    """True only when positively the same live process."""
    return compare(ident) == SAME
