"""The one process record: what every backend reads, and what every caller gets.

Guarantees:
- A process is a `ProcessId(pid, start)`; `start` is the backend's start time (clock
  ticks since boot on Linux, psutil's epoch `create_time` in the portable backend), so
  a reused pid is a different process. Identities are compared within one backend only.
- A `ProcRecord` is one reading of one process: identity, family (ppid, pgid, sid),
  state letter (R S D T Z X ...; Z and X count as exited), name (the kernel's comm),
  CPU ticks (its own and its reaped children's) and resident memory. The keeper, the
  guard, the client and `ps` all read this type; there is no other.
- argv, cwd and exe cost a read each: they are fetched on first access through the
  backend `platform` chose (`ProcRecord._backend`), and then kept.
- Stdlib only and no import of the package: the guard's start-up path loads it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing stays off the guard's start-up path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ProcessId", "ProcRecord"]


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


class ProcRecord:
    """One reading of one process (see the module doc); nothing changes it once read."""

    __slots__ = ("pid", "ppid", "pgid", "sid", "state", "start", "comm", "cpu_ticks",
                 "child_ticks", "rss_bytes", "_argv", "_cwd", "_exe")

    _backend: Any = None  # the chosen backend (read_argv / read_link), set by `platform`

    def __init__(self, pid: int, ppid: int, pgid: int, sid: int, state: str, start: float,
                 comm: str, cpu_ticks: int = 0, rss_bytes: int = 0,
                 argv: list[str] | None = None, child_ticks: int = 0) -> None:
        self.pid = pid
        self.ppid = ppid
        self.pgid = pgid
        self.sid = sid
        self.state = state
        self.start = start
        self.comm = comm
        self.cpu_ticks = cpu_ticks  # user + system, in clock ticks (platform.clock_ticks)
        self.child_ticks = child_ticks  # what its reaped children used, same unit
        self.rss_bytes = rss_bytes
        self._argv = argv
        self._cwd: str | None = None
        self._exe: str | None = None

    @property
    def ident(self) -> ProcessId:
        return ProcessId(self.pid, self.start)

    @property
    def exited(self) -> bool:
        """A zombie or a dead process: it has exited, whatever kill(pid, 0) says."""
        return self.state in ("Z", "X", "x")

    @property
    def argv_read(self) -> bool:
        return self._argv is not None

    @property
    def argv(self) -> list[str]:
        """argv, read now if the snapshot skipped it ([] if unreadable or gone)."""
        if self._argv is None:
            try:
                self._argv = self._backend.read_argv(self.pid) or []
            except OSError:
                self._argv = []
        return self._argv

    @property
    def cwd(self) -> str:
        """Working directory ("" if unreadable): resolves a relative script path."""
        if self._cwd is None:
            self._cwd = self._backend.read_link(self.pid, "cwd")
        return self._cwd

    @property
    def exe(self) -> str:
        """The executable's path ("" if unreadable)."""
        if self._exe is None:
            self._exe = self._backend.read_link(self.pid, "exe")
        return self._exe

    def __repr__(self) -> str:
        return (f"ProcRecord(pid={self.pid}, ppid={self.ppid}, pgid={self.pgid}, "
                f"state={self.state!r}, start={self.start!r}, comm={self.comm!r})")
