"""The one process table of the package: records, lazy details, open channels.

Guarantees:
- A record's identity is the core's `ProcessId(pid, start)`; every other field is one
  reading of the process. argv, cwd and exe are read lazily, on first use, so a scan
  reads them only for processes that survive the cheap name filter or the evidence.
- The platform is chosen once, in `mcp_tether.platform` (psutil's habit: one facade
  over per-platform modules): the Linux backend reads /proc directly, the portable one
  asks psutil. A macOS or Windows port is a new backend, not edits in callers. Callers
  never test the platform themselves.
- Channels are asked about in the seam's words (`_plat.ends`): what end an fd is open
  on (`fd_ends`), where its far end is and who holds it (`far_ends`). Reading never
  disturbs a process (nothing is read from or written to a channel); a backend that
  cannot tell says "unknown", never a guess.
- A process that vanishes mid-read is simply absent; one that may not be read is
  counted in `Table.unreadable`. Never an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_tether import platform
from mcp_tether._plat.ends import (
    CHANNEL_KINDS,
    CLOSED,
    OPEN,
    UNCONNECTED,
    UNKNOWN,
    End,
    Far,
    FdState,
)
from mcp_tether._plat.record import ProcRecord
from mcp_tether.platform import backend as _impl

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from mcp_tether._plat.contract import Channels, FarEnds

__all__ = [
    "ProcRecord",
    "Table",
    "table",
    "record",
    "name_filter",
    "End",
    "Far",
    "FdState",
    "CHANNEL_KINDS",
    "OPEN",
    "CLOSED",
    "UNCONNECTED",
    "UNKNOWN",
    "fd_ends",
    "fd_state",
    "far_ends",
    "root_pid_namespace",
    "epoll_items",
    "fd_file",
    "thread_waits",
    "io_counters",
    "environ",
    "pid_namespace",
    "listening",
    "boot_id",
    "owner",
    "username",
    "age_seconds",
    "clock_ticks",
    "CHANNEL_DETAIL",
]

_ch: Channels = _impl.channels()
CHANNEL_DETAIL: bool = _ch.CHANNEL_DETAIL  # can this backend see fds and peers?


class Table(dict):  # type: ignore[type-arg]  # pid -> ProcRecord
    """Every readable user-space process (no kernel threads, no zombies); `now` is the
    instant it was read, for `age_seconds` (one clock reading for the whole table)."""

    unreadable: int = 0
    now: float | None = None


def table(want_argv: Callable[[str], bool] | None = None) -> Table:
    """A snapshot. argv is read at once for processes whose name `want_argv` accepts
    (all when None); the others read theirs on first access."""
    out = Table()
    out.now = _impl.clock()
    out.unreadable = _impl.fill(out, want_argv)
    return out


def record(pid: int) -> ProcRecord | None:
    """One process now, or None (gone, zombie, kernel thread or unreadable)."""
    try:
        return _impl.read_record(pid, None)
    except (OSError, ValueError, IndexError):
        return None


def name_filter(names: Iterable[str], prefixes: Iterable[str] = (),
                contains: Iterable[str] = ()) -> Callable[[str], bool]:
    """A `want_argv` that accepts a process name (the kernel's comm: first 15 characters)
    equal to one of `names`, starting with one of `prefixes` or containing one of
    `contains`, case-insensitively."""
    exact = frozenset(n[:15].lower() for n in names)
    pre = tuple(p.lower() for p in prefixes)
    sub = tuple(c.lower() for c in contains)

    def want(comm: str) -> bool:
        c = comm.lower()
        return (c in exact or c.split(" ", 1)[0] in exact or c.startswith(pre)
                or any(s in c for s in sub))

    return want


def fd_ends(pid: int, only: tuple[int, ...] | None = None, limit: int | None = None,
            known: dict[int, End] | None = None) -> dict[int, End] | None:
    """fd -> the `End` it is open on (a pipe's or socket's end, /dev/null, a tty, a
    file); None if unknown. `only`: just these fds (those not open are absent); `limit`:
    None when the process has more open fds than this (nothing is read past the count);
    `known`: ends this scan already read (fd 0 and 1), taken as they are if still open."""
    return _ch.fd_ends(pid, only, limit, known)


def fd_state(pid: int, fd: int) -> FdState | None:
    """How an fd was opened (access mode, close-on-exec) and which open file it is."""
    return _ch.fd_state(pid, fd)


def far_ends() -> FarEnds:
    """A look at far ends: `far(pid, fd, end, side)` (a `Far`: open, closed, unconnected
    or unknown) and `holders(end_id, skip)` (pids seen holding an end; empty proves
    nothing). Close it when done."""
    return _ch.far_ends()


def root_pid_namespace() -> bool | None:
    """Does this process table show the machine's initial pid namespace (where pid 1 is
    the machine's init)? None if it cannot tell."""
    return _ch.root_pid_namespace()


def epoll_items(pid: int, ends: dict[int, End] | None = None
                ) -> tuple[list[tuple[int, int, tuple[int, int] | None]], bool] | None:
    """Every item of every epoll set `pid` holds, (tfd, events, the watched file's
    (st_dev, st_ino) or None), and whether it holds an io_uring; None if this backend
    or this process cannot show them."""
    return _ch.epoll_items(pid, ends)


def fd_file(pid: int, fd: int) -> tuple[int, int] | None:
    """(st_dev, st_ino) of the open file behind `pid`'s `fd`; None if unknown."""
    return _ch.fd_file(pid, fd)


def thread_waits(pid: int) -> list[tuple[int, str, int | None]] | None:
    """Each thread of `pid`: (tid, read | epoll | poll | uring | running | other, the fd
    a "read" waits on); None if this backend or this process cannot show them."""
    return _ch.thread_waits(pid)


def io_counters(pid: int) -> tuple[int, int, int, int] | None:
    """(rchar, wchar, syscr, syscw): bytes `pid` has read and written so far and the
    read and write calls it made; None if unknown."""
    return _ch.io_counters(pid)


def environ(pid: int) -> dict[str, str] | None:
    """The environment `pid` was started with; None if unknown (unreadable, or a backend
    that cannot read another process's environment)."""
    return _ch.environ(pid)


def pid_namespace(pid: int) -> int | None:
    """An id of `pid`'s pid namespace; None: unknown."""
    return _impl.pid_namespace(pid)


def listening(pid: int) -> list[str] | None:
    """The listening sockets `pid` holds (`tcp 127.0.0.1:8080`, `unix /run/x.sock`): who
    can connect to it. [] when none; None when this backend or this process cannot
    show them (unknown, never "none")."""
    ends = _ch.fd_ends(pid)
    if ends is None:
        return None
    look = _ch.far_ends()
    try:
        socks = [(e, look.socket(pid, fd, e)) for fd, e in ends.items() if e.kind == "socket"]
    finally:
        look.close()
    return [f"{s.family or 'socket'} {s.address or e.name}" for e, s in socks
            if s.role == "listen"]


def boot_id() -> str | None:
    """This boot's name (another boot never has it); None if unknown."""
    return _impl.boot_id()


def owner(pid: int) -> int | None:
    return _impl.owner(pid)


_users: dict[int, str] = {}


def username(uid: int | None) -> str:
    if uid is None:
        return "?"
    if uid not in _users:
        try:
            import pwd

            _users[uid] = pwd.getpwuid(uid).pw_name
        except (ImportError, KeyError):
            _users[uid] = str(uid)
    return _users[uid]


def age_seconds(rec: ProcRecord, now: float | None = None) -> float:
    """Seconds since `rec` started, counted to `now` (a `Table.now`) or to this instant."""
    return _impl.age_seconds(rec.start, now, platform.clock_ticks())


def clock_ticks() -> int:
    return platform.clock_ticks()

