"""The process record every platform backend of `proc.table` fills in.

One reading of one process: identity (`ProcessId(pid, start)`), family (ppid, pgid,
sid), state, name, CPU and memory. argv, cwd and exe cost a read each, so they are
fetched on first access through the backend the facade installed (`_backend`).
"""

from __future__ import annotations

from mcp_tether.proc.identity import ProcessId

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ProcRecord"]


class ProcRecord:
    __slots__ = ("pid", "ppid", "pgid", "sid", "state", "start", "comm", "cpu_ticks",
                 "rss_bytes", "_argv", "_cwd", "_exe")

    _backend: Any = None  # set once by proc.table: read_argv / read_cwd / read_exe

    def __init__(self, pid: int, ppid: int, pgid: int, sid: int, state: str, start: float,
                 comm: str, cpu_ticks: int, rss_bytes: int,
                 argv: list[str] | None = None) -> None:
        self.pid = pid
        self.ppid = ppid
        self.pgid = pgid
        self.sid = sid
        self.state = state
        self.start = start  # clock ticks since boot on Linux; an epoch time elsewhere
        self.comm = comm
        self.cpu_ticks = cpu_ticks
        self.rss_bytes = rss_bytes
        self._argv = argv
        self._cwd: str | None = None
        self._exe: str | None = None

    @property
    def ident(self) -> ProcessId:
        return ProcessId(self.pid, self.start)

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

    @argv.setter
    def argv(self, value: list[str]) -> None:
        self._argv = value

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
        return f"ProcRecord(pid={self.pid}, ppid={self.ppid}, comm={self.comm!r})"
