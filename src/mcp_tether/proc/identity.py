"""Process identity: (pid, start time), compared three ways (psutil `_get_ident` style).

On Linux the start time is field 22 of /proc/<pid>/stat (clock ticks since boot), read
without any dependency; elsewhere psutil's create_time stands in (imported lazily).
"""

from __future__ import annotations

from typing import NamedTuple

from mcp_tether import platform

__all__ = [
    "SAME",
    "DIFFERENT",
    "UNKNOWN",
    "ProcessId",
    "ProcInfo",
    "read_info",
    "identify",
    "compare",
    "is_running",
]

SAME = "same"
DIFFERENT = "different"  # gone, or the pid now belongs to another process
UNKNOWN = "unknown"  # not readable (permissions, no /proc): never act on it


class ProcessId(NamedTuple):
    """A process, not a pid: `start` tells a reused pid apart."""

    pid: int
    start: float

    def __str__(self) -> str:
        return f"{self.pid}@{self.start:g}"


class ProcInfo(NamedTuple):
    """One /proc/<pid>/stat reading."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str  # R S D Z T ... ; Z (zombie) and X (dead) count as exited
    start: float
    comm: str

    @property
    def ident(self) -> ProcessId:
        return ProcessId(self.pid, self.start)

    @property
    def exited(self) -> bool:
        return self.state in ("Z", "X", "x")


def _parse_stat(pid: int, data: bytes) -> ProcInfo:
    # comm is in parentheses and may itself contain spaces and ')': split at the last one.
    lpar = data.index(b"(")
    rpar = data.rindex(b")")
    comm = data[lpar + 1 : rpar].decode(errors="replace")
    f = data[rpar + 2 :].split()
    # f[0] is field 3 (state); start time is field 22 -> f[19].
    return ProcInfo(pid, int(f[1]), int(f[2]), int(f[3]), f[0].decode(), float(f[19]), comm)


def read_info(pid: int) -> ProcInfo | None:
    """The process's current stat, or None if there is no such process."""
    if platform.has_proc():
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                data = fh.read()
        except (FileNotFoundError, ProcessLookupError):
            return None
        except PermissionError:
            return None
        try:
            return _parse_stat(pid, data)
        except (ValueError, IndexError):
            return None
    return _read_info_psutil(pid)


def _read_info_psutil(pid: int) -> ProcInfo | None:
    import psutil  # non-Linux fallback only

    try:
        p = psutil.Process(pid)
        with p.oneshot():
            st = p.status()
            state = "Z" if st == psutil.STATUS_ZOMBIE else "S"
            import os

            try:
                pgid = os.getpgid(pid)
                sid = os.getsid(pid)
            except OSError:
                pgid = sid = -1
            return ProcInfo(pid, p.ppid(), pgid, sid, state, p.create_time(), p.name())
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except psutil.AccessDenied:
        return None


def identify(pid: int) -> ProcessId | None:
    """The identity of the live (non-zombie) process `pid`, or None."""
    info = read_info(pid)
    if info is None or info.exited:
        return None
    return info.ident


def compare(ident: ProcessId) -> str:
    """SAME if `ident` is still running (not a zombie), DIFFERENT if gone or reused."""
    info = read_info(ident.pid)
    if info is None:
        if platform.has_proc():
            return DIFFERENT
        return UNKNOWN
    if info.start != ident.start or info.exited:
        return DIFFERENT
    return SAME


def is_running(ident: ProcessId) -> bool:
    """True only when positively the same live process."""
    return compare(ident) == SAME
