"""Process identity: (pid, start time), compared three ways (psutil `_get_ident` style).

On Linux the start time is field 22 of /proc/<pid>/stat (clock ticks since boot), read
without any dependency; elsewhere psutil's create_time stands in (imported lazily).
"""

from __future__ import annotations

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
    "split_stat",
]

SAME = "same"
DIFFERENT = "different"  # gone, or the pid now belongs to another process
UNKNOWN = "unknown"  # not readable (permissions, no /proc): never act on it


# Plain tuple subclasses, not typing.NamedTuple: importing `typing` costs ~11 ms, and
# this module is on the guard's and the probe keeper's start-up path.
class ProcessId(tuple):  # type: ignore[type-arg]  # a (pid, start) pair, hashable
    """A process, not a pid: `start` tells a reused pid apart."""

    __slots__ = ()

    def __new__(cls, pid: int, start: float) -> ProcessId:
        return tuple.__new__(cls, (pid, start))

    @property
    def pid(self) -> int:
        return self[0]  # type: ignore[no-any-return]  # tuple items are untyped here

    @property
    def start(self) -> float:
        return self[1]  # type: ignore[no-any-return]  # tuple items are untyped here

    def __repr__(self) -> str:
        return f"ProcessId(pid={self.pid}, start={self.start!r})"

    def __str__(self) -> str:
        return f"{self.pid}@{self.start:g}"


class ProcInfo(tuple):  # type: ignore[type-arg]  # one /proc/<pid>/stat reading
    """pid, ppid, pgid, sid, state, start, comm of one process."""

    __slots__ = ()

    def __new__(
        cls, pid: int, ppid: int, pgid: int, sid: int, state: str, start: float, comm: str
    ) -> ProcInfo:
        return tuple.__new__(cls, (pid, ppid, pgid, sid, state, start, comm))

    pid = property(lambda self: self[0], doc="process id")
    ppid = property(lambda self: self[1], doc="parent process id")
    pgid = property(lambda self: self[2], doc="process group id")
    sid = property(lambda self: self[3], doc="session id")
    # R S D Z T ... ; Z (zombie) and X (dead) count as exited
    state = property(lambda self: self[4], doc="state letter")
    start = property(lambda self: self[5], doc="start time, clock ticks since boot")
    comm = property(lambda self: self[6], doc="command name")

    def __repr__(self) -> str:
        return (f"ProcInfo(pid={self.pid}, ppid={self.ppid}, pgid={self.pgid}, "
                f"state={self.state!r}, start={self.start!r}, comm={self.comm!r})")

    @property
    def ident(self) -> ProcessId:
        return ProcessId(self.pid, self.start)

    @property
    def exited(self) -> bool:
        return self.state in ("Z", "X", "x")


def split_stat(data: bytes) -> tuple[str, list[bytes]]:
    """(comm, fields) of a /proc/<pid>/stat line; fields[k] is stat field k+3.

    comm is in parentheses and may itself hold spaces and ')': split at the last one.
    """
    lpar = data.index(b"(")
    rpar = data.rindex(b")")
    return data[lpar + 1 : rpar].decode(errors="replace"), data[rpar + 2 :].split()


def _parse_stat(pid: int, data: bytes) -> ProcInfo:
    comm, f = split_stat(data)
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
