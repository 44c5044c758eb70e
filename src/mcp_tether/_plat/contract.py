"""The seam's contract as code: what every backend module under `_plat/` provides.

`platform.py` imports exactly one backend (`linux`, `portable` or `darwin`) and types it
as `Backend`; `backend.channels()` is a `Channels`. Type checkers hold each backend module
to these protocols (modules can implement protocols), and `tests/test_seam.py` checks
every backend's names and signatures against them at run time, and that no backend
answers a question the contract does not ask.

Meanings every backend keeps (the rules callers rely on):
- None means "cannot know" (never "none"); PermissionError from a table read means
  present but unreadable (unknown, never gone); False from a capability means the OS
  has no such thing (callers then use their portable strategy: group + scan).
- A process is `(pid, start)` (`record.ProcessId`); start times compare within one
  backend only.

A new question is one member here, with its meaning, and one function in every backend
(None where that backend cannot know): the type checker and `tests/test_seam.py` name
each backend that lacks it, and each that answers a question not asked here.

Imported by type checkers and tests only: it loads `typing`, which the start-up paths
(`import mcp_tether`, `mcp-tether run`) must not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from mcp_tether._plat.ends import End, Far, FdState, Sock
from mcp_tether._plat.record import ProcRecord

__all__ = ["Backend", "Channels", "FarEnds"]


class FarEnds(Protocol):
    """One look at far ends (one scan): what the kernel says of each end, asked once."""

    def far(self, pid: int, fd: int, end: End, side: str) -> Far:
        """The far end of `pid`'s `fd` (open on `end`), for `side` (in: what the fd reads,
        out: what it writes): open (its id where nameable, data flow each way), closed,
        unconnected, or unknown with why."""
        ...

    def holders(self, end_id: str, skip: set[int]) -> list[int]:
        """Pids (not in `skip`) this backend can see holding the end `end_id`. Empty
        proves nothing (unreadable processes, other pid namespaces, no look at all)."""
        ...

    def socket(self, pid: int, fd: int, end: End) -> Sock:
        """What `pid`'s socket `fd` (open on `end`) is for: its family, whether it listens,
        was accepted or connected out, the name it is bound to, and the socket of this
        machine on its other side (`Sock`); "" where the backend cannot tell. What the
        tree kill asks of a detached member (`proc.leave`): who holds that other side is
        `holders`."""
        ...

    def close(self) -> None:
        """Release what the look holds (a netlink socket)."""
        ...


class Channels(Protocol):
    """fd ends, far ends and how other processes wait: `Backend.channels()`."""

    CHANNEL_DETAIL: bool  # this backend sees other processes' fds; False: all unknown

    def fd_ends(self, pid: int, only: tuple[int, ...] | None = None,
                limit: int | None = None,
                known: dict[int, End] | None = None) -> dict[int, End] | None:
        """fd -> the `End` it is open on; None if the fds cannot be read. `only`: just
        these fds (those not open are absent); `limit`: None when the process has more
        fds than that (nothing read past the count); `known`: ends already read."""
        ...

    def fd_state(self, pid: int, fd: int) -> FdState | None:
        """How `fd` was opened (access, close-on-exec) and which open file it is."""
        ...

    def far_ends(self) -> FarEnds:
        """A fresh `FarEnds` look (close it when done)."""
        ...

    def root_pid_namespace(self) -> bool | None:
        """This table shows the machine's initial pid namespace (pid 1 is its init)."""
        ...

    def epoll_items(self, pid: int, ends: dict[int, End] | None = None
                    ) -> tuple[list[tuple[int, int, tuple[int, int] | None]], bool] | None:
        """Every item of every epoll set `pid` holds, (tfd, events, the watched file's
        (st_dev, st_ino) or None), and whether it holds an io_uring."""
        ...

    def fd_file(self, pid: int, fd: int) -> tuple[int, int] | None:
        """(st_dev, st_ino) of the open file behind `pid`'s `fd`."""
        ...

    def thread_waits(self, pid: int) -> list[tuple[int, str, int | None]] | None:
        """Each thread: (tid, read | epoll | poll | uring | running | other, the fd a
        "read" waits on)."""
        ...

    def io_counters(self, pid: int) -> tuple[int, int, int, int] | None:
        """(rchar, wchar, syscr, syscw) so far."""
        ...

    def environ(self, pid: int) -> dict[str, str] | None:
        """The environment `pid` was started with."""
        ...


class Backend(Protocol):
    """One set of OS primitives, chosen once by `platform.py`."""

    NAME: str
    HAS_PIDFD: bool  # processes are pinned by pidfds
    HAS_SUBREAPER: bool
    HAS_PDEATHSIG: bool  # a child can ask the kernel to signal it when its parent dies;
    # False: the guard leaves a watcher behind it instead (`proc.watcher`)
    WATCHES_BEYOND_PARENT: bool  # a process can watch its host past an intermediate
    # parent, so the guard may fork a front
    SOCKET_HANGUP: int  # poll events that show a socket peer's half-close; 0: cannot tell
    PID_MAX: int  # pids are below this (0: unknown)

    # -- capabilities: False where the OS has no such thing -----------------------------
    def load(self) -> object:
        """Load what `set_pdeathsig` needs before a fork (no library loads in a child)."""
        ...

    def prctl(self, option: int, arg: int) -> bool: ...

    def set_subreaper(self, on: bool) -> bool: ...

    def is_subreaper(self) -> bool: ...

    def set_pdeathsig(self, sig: int) -> bool: ...

    def pidfd_open(self, pid: int) -> int | None:
        """A descriptor pinning `pid`, or None (then re-check identity right before
        kill(2)); ProcessLookupError when there is no such process."""
        ...

    def exit_fd(self, pid: int) -> int | None:
        """A descriptor that turns readable when `pid` exits (the caller closes it with
        os.close), or None (then exits are polled); ProcessLookupError when there is no
        such process, or it is already exiting."""
        ...

    # -- the process table: None means gone; PermissionError present but unreadable ---------
    def read(self, pid: int) -> ProcRecord | None:
        """`pid` now, zombies included (the keeper and the guard must see them exit)."""
        ...

    def read_record(self, pid: int,
                    want_argv: Callable[[str], bool] | None) -> ProcRecord | None:
        """One live process (None for a zombie); argv read when `want_argv(comm)`."""
        ...

    def fill(self, out: dict[int, ProcRecord],
             want_argv: Callable[[str], bool] | None) -> int:
        """Every live process into `out`; returns how many could not be read."""
        ...

    def pids(self) -> list[int]: ...

    def read_argv(self, pid: int) -> list[str] | None: ...

    def read_link(self, pid: int, what: str) -> str:
        """"cwd" or "exe" of `pid`; "" when unreadable."""
        ...

    def owner(self, pid: int) -> int | None: ...

    def clock(self) -> float:
        """The instant ages are counted to, in the unit start times use."""
        ...

    def age_seconds(self, start: float, now: float | None, ticks: int) -> float: ...

    def run_delay(self, pid: int) -> float | None:
        """Seconds `pid` waited for a CPU."""
        ...

    def last_pid(self) -> int | None:
        """The last pid handed out in our pid namespace."""
        ...

    def is_process(self, pid: int) -> bool:
        """A process, not another thread's id."""
        ...

    def children(self, pid: int) -> list[int] | None:
        """The children of `pid`, zombies included."""
        ...

    def terminal(self, pid: int) -> int | None:
        """`pid`'s controlling terminal, 0 for none (a daemon's); nonzero values are
        only compared with 0."""
        ...

    def stdio_key(self, fd: int) -> tuple[int, int] | None:
        """A key naming the pipe (either end) or the socket on our own `fd`, for `holds`;
        None for anything else (a tty, /dev/null, a file: shared by unrelated processes,
        they prove nothing). Opaque: compared by `holds` of the same backend only."""
        ...

    def holds(self, pid: int, keys: set[tuple[int, int]]) -> bool | None:
        """Whether `pid` has a pipe or socket that one of `keys` (`stdio_key`'s) names
        open on an fd."""
        ...

    def boot_paths(self) -> list[str]:
        """Folders a fresh `python -S` (the probe's keeper) must put on sys.path to load
        this backend's dependencies."""
        ...

    def channels(self) -> Channels:
        """The module answering fd ends, far ends and waits (loaded on first use)."""
        ...

    def reopen(self, fd: int, write: bool) -> int | None:
        """A fresh end of the pipe behind our own `fd`."""
        ...

    # -- what a process is doing and where it lives: evidence, `inspect`, containers -------
    def signal_masks(self, pid: int) -> dict[str, int] | None: ...

    def wait_channel(self, pid: int, tid: int | None = None) -> str | None: ...

    def threads(self, pid: int,
                limit: int | None = None) -> list[tuple[int, str, str | None]] | None: ...

    def running_tasks(self) -> int | None:
        """Runnable tasks on the whole machine now."""
        ...

    def running_threads(self, pid: int) -> int | None:
        """How many of `pid`'s threads are runnable now."""
        ...

    def pid_namespace(self, pid: int) -> int | None: ...

    def boot_id(self) -> str | None:
        """A name for this boot that another boot never has (Linux: the kernel's random
        boot id; macOS: kern.bootsessionuuid): what ties a file of observations to the
        boot it was made in."""
        ...

    def cgroup(self, pid: int) -> str | None: ...

    def cgroup_memory(self, pid: int) -> int | None: ...

    def mapped_files(self, pid: int) -> tuple[list[str], str] | None: ...
