"""The portable backend: psutil and POSIX only, what macOS (and the BSDs) offer.

Chosen where there is no Linux /proc, or on Linux with `MCP_TETHER_BACKEND=portable`,
which is how CI proves the promises below on a machine that has more.

Guarantees:
- Process records come from psutil (`create_time` is the start time of the identity),
  process groups and sessions from getpgid/getsid. The identity rule holds unchanged:
  (pid, start) is re-checked right before every signal.
- What this backend cannot do, it says: no pidfd (`pidfd_open` is None, so waits poll
  and signals re-check then kill(2)), no subreaper and no parent-death signal (False),
  no socket half-close event (POLLHUP only), no front for the guard (it cannot watch
  its host past a front without a pidfd), no look at another process's fds: `holds` is
  None, every channel answer is "unknown", `CHANNEL_DETAIL` is False. Callers treat
  unknown as "do not act" (never "nobody holds it").
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import TYPE_CHECKING

from mcp_tether._plat import fill_from, fstat_key
from mcp_tether._plat.absent import cgroup as cgroup  # Linux's process controls,
from mcp_tether._plat.absent import cgroup_memory as cgroup_memory  # namespaces and
from mcp_tether._plat.absent import is_subreaper as is_subreaper
from mcp_tether._plat.absent import load as load  # cgroups: none here (re-exported)
from mcp_tether._plat.absent import pid_namespace as pid_namespace
from mcp_tether._plat.absent import pidfd_open as pidfd_open
from mcp_tether._plat.absent import prctl as prctl
from mcp_tether._plat.absent import set_pdeathsig as set_pdeathsig
from mcp_tether._plat.absent import set_subreaper as set_subreaper
from mcp_tether._plat.ends import UNKNOWN, End, Far, FdState, Sock
from mcp_tether._plat.record import ProcRecord

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

    import psutil

NAME = "portable"
WATCHES_BEYOND_PARENT = False
SOCKET_HANGUP = 0  # poll reports POLLHUP only once both directions are closed
HAS_PIDFD = False
HAS_SUBREAPER = False
HAS_PDEATHSIG = False
PID_MAX = 0
CHANNEL_DETAIL = False

_TICKS = os.sysconf("SC_CLK_TCK")
_STATES = {"running": "R", "sleeping": "S", "disk-sleep": "D", "stopped": "T",
           "tracing-stop": "t", "zombie": "Z", "dead": "X", "idle": "I"}  # psutil.STATUS_*


def _psutil() -> ModuleType:
    """psutil, imported on the first process read (not at `import mcp_tether`, nor by a
    guard or helper that never reads the table); a clear error where it is missing."""
    try:
        import psutil
    except ImportError as exc:
        raise ImportError("mcp-tether's portable backend needs psutil "
                          "(pip install psutil, or install mcp-tether with its "
                          "dependencies)") from exc
    return psutil


def boot_paths() -> list[str]:
    """Folders a fresh `python -S` needs on sys.path to use this backend: psutil's."""
    return [os.path.dirname(os.path.dirname(_psutil().__file__ or ""))]


def exit_fd(pid: int) -> int | None:
    return None  # exits are polled


# ----- the process table --------------------------------------------------------------


def _family(pid: int) -> tuple[int, int]:
    with contextlib.suppress(OSError):
        return os.getpgid(pid), os.getsid(pid)
    return -1, -1


def _record(p: psutil.Process, want_argv: Callable[[str], bool] | None) -> ProcRecord:
    with p.oneshot():
        state = _STATES.get(p.status(), "S")
        pgid, sid = _family(p.pid)
        name = p.name()
        if state == "Z":  # a zombie: only its family and start are still readable
            return ProcRecord(p.pid, p.ppid(), pgid, sid, state, p.create_time(), name,
                              argv=[] if want_argv is None else None)
        t = p.cpu_times()
        argv = list(p.cmdline()) if want_argv is None or want_argv(name) else None
        return ProcRecord(
            p.pid, p.ppid(), pgid, sid, state, p.create_time(), name,
            int((t.user + t.system) * _TICKS), p.memory_info().rss, argv,
            int((getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0))
                * _TICKS))


def read(pid: int) -> ProcRecord | None:
    """`pid` now, zombie or not; None if there is no such process. PermissionError if
    it exists but may not be read."""
    try:
        return _record(_psutil().Process(pid), _never)
    except _psutil().ZombieProcess:
        return _zombie(pid)
    except _psutil().AccessDenied as exc:
        raise PermissionError(13, "access denied") from exc
    except _psutil().Error:
        return None


def _zombie(pid: int) -> ProcRecord | None:
    # psutil refuses most questions about a zombie on some systems: what it still answers.
    try:
        p = _psutil().Process(pid)
        return ProcRecord(pid, p.ppid(), *_family(pid), "Z", p.create_time(), "")
    except _psutil().Error:
        return None


def _never(comm: str) -> bool:
    return False


def read_record(pid: int, want_argv: Callable[[str], bool] | None) -> ProcRecord | None:
    """One live process; None if gone or a zombie. PermissionError if unreadable."""
    try:
        rec = _record(_psutil().Process(pid), want_argv)
    except _psutil().AccessDenied as exc:
        raise PermissionError(13, "access denied") from exc
    except _psutil().Error:
        return None
    return None if rec.exited else rec


def pids() -> list[int]:
    return list(_psutil().pids())


def fill(out: dict[int, ProcRecord], want_argv: Callable[[str], bool] | None) -> int:
    return fill_from(_psutil().pids(), read_record, out, want_argv)


def terminal(pid: int) -> int | None:
    """1 when `pid` has a controlling terminal, 0 when it has none; None: unreadable."""
    try:
        return 0 if _psutil().Process(pid).terminal() is None else 1
    except (_psutil().Error, OSError):
        return None


def read_argv(pid: int) -> list[str] | None:
    try:
        return list(_psutil().Process(pid).cmdline())
    except _psutil().Error:
        return None


def read_link(pid: int, what: str) -> str:
    try:
        p = _psutil().Process(pid)
        return str(p.cwd() if what == "cwd" else p.exe())
    except _psutil().Error:
        return ""


def owner(pid: int) -> int | None:
    try:
        return int(_psutil().Process(pid).uids().real)
    except (_psutil().Error, AttributeError):
        return None


def clock() -> float:
    return time.time()  # start times are psutil's epoch create_time


def age_seconds(start: float, now: float | None, ticks: int) -> float:
    return max(0.0, (time.time() if now is None else now) - start)


def run_delay(pid: int) -> float | None:
    return None  # no portable schedstat: no credit for time spent waiting for a CPU


def last_pid() -> int | None:
    return None  # every look at a tree reads the whole table


def is_process(pid: int) -> bool:
    return bool(_psutil().pid_exists(pid))


def children(pid: int) -> list[int] | None:
    return None


stdio_key = fstat_key


def holds(pid: int, keys: set[tuple[int, int]]) -> bool | None:
    return None  # another process's open files cannot be seen portably


def channels() -> ModuleType:
    return sys.modules[__name__]


def reopen(fd: int, write: bool) -> int | None:
    return None  # no POSIX way to open a pipe's other end from one of its fds


# ----- what a process is doing: what psutil shows, None for the rest -----------------------


def signal_masks(pid: int) -> dict[str, int] | None:
    return None


def wait_channel(pid: int, tid: int | None = None) -> str | None:
    return None


def threads(pid: int, limit: int | None = None) -> list[tuple[int, str, str | None]] | None:
    return None  # psutil has thread ids, not names


def running_tasks() -> int | None:
    return None  # no portable count of the machine's runnable tasks


def running_threads(pid: int) -> int | None:
    return None  # psutil has a process's status, not each thread's


def mapped_files(pid: int) -> tuple[list[str], str] | None:
    try:
        maps = _psutil().Process(pid).memory_maps()
    except (_psutil().Error, AttributeError, NotImplementedError):
        return None  # AttributeError: psutil has no memory maps on this OS (macOS)
    return [m.path for m in maps if m.path], "psutil memory_maps"


# ----- channels: nothing is known ---------------------------------------------------------


def fd_ends(pid: int, only: tuple[int, ...] | None = None, limit: int | None = None,
            known: dict[int, End] | None = None) -> dict[int, End] | None:
    return None  # another process's fds cannot be seen portably


def fd_state(pid: int, fd: int) -> FdState | None:
    return None


def root_pid_namespace() -> bool | None:
    return None


class FarEnds:
    """Every far end is unknown here; no holder can be seen."""

    def far(self, pid: int, fd: int, end: End, side: str) -> Far:
        return Far(UNKNOWN, why="this backend cannot see other processes' fds")

    def holders(self, end_id: str, skip: set[int]) -> list[int]:
        return []

    def socket(self, pid: int, fd: int, end: End) -> Sock:
        return Sock("", "")

    def close(self) -> None:
        pass


def far_ends() -> FarEnds:
    return FarEnds()


def epoll_items(pid: int, ends: dict[int, End] | None = None
                ) -> tuple[list[tuple[int, int, tuple[int, int] | None]], bool] | None:
    return None  # how another process waits cannot be seen portably


def fd_file(pid: int, fd: int) -> tuple[int, int] | None:
    return None


def thread_waits(pid: int) -> list[tuple[int, str, int | None]] | None:
    return None


def io_counters(pid: int) -> tuple[int, int, int, int] | None:
    return None


def environ(pid: int) -> dict[str, str] | None:
    return None


def boot_id() -> str | None:
    """This boot, named by its boot time (psutil); None where it cannot be read."""
    try:
        return f"boot-time-{int(_psutil().boot_time())}"
    except (_psutil().Error, OSError, AttributeError):
        return None
