"""The darwin backend: macOS's process table through libproc, exit waits on kqueue.

Guarantees:
- A process is `(pid, start)`, start being `pbi_start_tvsec + pbi_start_tvusec / 1e6`
  (`PROC_PIDTBSDINFO`, seconds since the epoch, as psutil's create_time): a reused pid is
  another process. Parents, process groups and states come from the same answer
  (zombies included: `arg` 1 asks the kernel for them too), sessions from getsid(2).
- Every call is a same-user libproc or sysctl call (`darwin_libproc`): another user's
  process raises PermissionError (unreadable, never gone); ESRCH means gone; any other
  short answer is unknown (None). Never `task_for_pid`.
- argv and the environment come from `sysctl KERN_PROCARGS2` (`darwin_libproc.
  parse_procargs`), the executable from `proc_pidpath`, the working directory from
  `PROC_PIDVNODEPATHINFO`; CPU time and resident memory from `PROC_PIDTASKINFO`.
- Exit waits: `exit_fd` registers EVFILT_PROC / NOTE_EXIT on a kqueue of its own and
  hands back a descriptor of it, readable once the process exits (poll(2) sees a kqueue
  with a pending event as readable). The kernel refuses the registration (ESRCH) once
  the process is exiting (its refcount is marked dead before NOTE_EXIT is posted:
  kern_exit.c), so a registration that succeeds cannot miss the exit.
- What macOS does not show, this backend answers None and callers say unknown: I/O
  counters (there is no rchar/syscr; `pti_syscalls_unix` also moves on timers), so
  `superseded` says unknown here; how another process waits (its kqueues' contents);
  signal masks, wait channels, pid namespaces and cgroups (none exist or none are
  public); a subreaper and a parent-death signal (none exist: False).
- Channels (fd ends, pipe and socket peers, holders) are `darwin_fds`, loaded by
  `channels()`.
- Stdlib only; nothing but os and select at import (this module is on the helper's and
  the guard's start-up path on a Mac): ctypes and libproc load on the first process read.
"""

from __future__ import annotations

import os
import time

from mcp_tether._plat import fill_from, memo
from mcp_tether._plat.absent import cgroup as cgroup  # Linux's process controls,
from mcp_tether._plat.absent import cgroup_memory as cgroup_memory  # namespaces and
from mcp_tether._plat.absent import is_subreaper as is_subreaper
from mcp_tether._plat.absent import load as load  # cgroups: none here (re-exported)
from mcp_tether._plat.absent import pid_namespace as pid_namespace
from mcp_tether._plat.absent import pidfd_open as pidfd_open
from mcp_tether._plat.absent import prctl as prctl
from mcp_tether._plat.absent import set_pdeathsig as set_pdeathsig
from mcp_tether._plat.absent import set_subreaper as set_subreaper
from mcp_tether._plat.record import ProcRecord

TYPE_CHECKING = False  # typing stays off the guard's start-up path
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

NAME = "darwin"
HAS_PIDFD = False
HAS_SUBREAPER = False  # macOS has none: the tree is the group, the session and a scan
HAS_PDEATHSIG = False  # none either: a watcher waits on the guard's exit (kqueue)
WATCHES_BEYOND_PARENT = False  # no pidfd to watch the host through a front
SOCKET_HANGUP = 0  # poll(2) has no POLLRDHUP here: a half-close is not seen by poll
PID_MAX = 99999  # bsd/sys/proc_internal.h:749
_TICKS = os.sysconf("SC_CLK_TCK")
_STATE = {1: "I", 2: "R", 3: "S", 4: "T", 5: "Z"}  # SIDL SRUN SSLEEP SSTOP SZOMB (sys/proc.h)


def _api() -> Any:
    from mcp_tether._plat import darwin_libproc

    return darwin_libproc.api()


def bind(loader: Callable[[], Any]) -> None:
    """Answer libproc's calls through `loader()` (the simulation: `darwin_sim.load`)."""
    from mcp_tether._plat import darwin_libproc

    darwin_libproc.bind(loader)


def exit_fd(pid: int) -> int | None:
    """A kqueue's descriptor that turns readable when `pid` exits (module docstring);
    ProcessLookupError once it is exiting or gone; None where kqueue refuses otherwise."""
    from mcp_tether._plat import darwin_libproc as abi

    lib = abi.api().lib
    kq = lib.kqueue()
    try:
        ev = lib.kevent(pid, abi.EVFILT_PROC, abi.EV_ADD | abi.EV_ONESHOT, abi.NOTE_EXIT)
        kq.control([ev], 0, 0)
        # A descriptor of our own, closed with os.close: the knote belongs to the
        # kqueue, which lives while any descriptor of it is open.
        return os.dup(kq.fileno())
    except ProcessLookupError:
        raise
    except OSError:
        return None
    finally:
        kq.close()


# ----- the process table --------------------------------------------------------------


def _never(comm: str) -> bool:
    return False


def _record(pid: int, want_argv: Callable[[str], bool] | None,
            live_only: bool) -> ProcRecord | None:
    """One process from PROC_PIDTBSDINFO (+ PROC_PIDTASKINFO while it lives); None when
    gone, or (`live_only`) a zombie or the kernel's own; PermissionError: another user's."""
    from mcp_tether._plat import darwin_libproc as abi

    api = abi.api()
    try:
        info = api.pidinfo(pid, abi.PROC_PIDTBSDINFO, 1, abi.proc_bsdinfo)
    except abi.Gone:
        return None
    if info is None:
        raise PermissionError(13, f"process {pid}: its record cannot be read")
    state = _STATE.get(info.pbi_status, "S")
    zombie = state == "Z"
    if live_only and (zombie or info.pbi_flags & abi.PROC_FLAG_SYSTEM):
        return None
    comm = info.pbi_comm.decode("utf-8", "replace")
    start = info.pbi_start_tvsec + info.pbi_start_tvusec / 1e6
    cpu = rss = 0
    if not zombie:
        try:
            task = api.pidinfo(pid, abi.PROC_PIDTASKINFO, 0, abi.proc_taskinfo)
        except (abi.Gone, PermissionError):
            task = None
        if task is not None:
            cpu = int(api.seconds(task.pti_total_user + task.pti_total_system) * _TICKS)
            rss = task.pti_resident_size
    argv = None
    if not zombie and (want_argv is None or want_argv(comm)):
        argv = read_argv(pid)
        if argv is None:
            return None
    return ProcRecord(pid, info.pbi_ppid, info.pbi_pgid or _pgid(api, pid), _sid(api, pid),
                      state, start, comm, cpu, rss, argv if not zombie else [])


def _pgid(api: Any, pid: int) -> int:
    try:
        return int(api.lib.getpgid(pid))
    except OSError:
        return -1


def _sid(api: Any, pid: int) -> int:
    try:
        return int(api.lib.getsid(pid))
    except OSError:  # a zombie (getsid finds live processes only)
        return -1


def terminal(pid: int) -> int | None:
    """`pid`'s controlling terminal: PROC_PIDTBSDINFO's `e_tdev` (proc_info.c sets it to
    NODEV, then to the tty's device when the process has one): 0 for none; None where
    unreadable."""
    from mcp_tether._plat import darwin_libproc as abi

    try:
        info = abi.api().pidinfo(pid, abi.PROC_PIDTBSDINFO, 0, abi.proc_bsdinfo)
    except (abi.Gone, PermissionError):
        return None
    if info is None:
        return None
    return 0 if info.e_tdev in (abi.NODEV, 0) else int(info.e_tdev)


def read(pid: int) -> ProcRecord | None:
    """`pid` now, zombie or not; None if there is no such process. PermissionError if
    it exists but may not be read (another user's)."""
    return _record(pid, _never, False)


def read_record(pid: int, want_argv: Callable[[str], bool] | None) -> ProcRecord | None:
    """One live process; None if gone, a zombie or the kernel's. PermissionError if
    unreadable."""
    return _record(pid, want_argv, True)


def pids() -> list[int]:
    return [p for p in _api().pids() or [] if p > 0]


def fill(out: dict[int, ProcRecord], want_argv: Callable[[str], bool] | None) -> int:
    """Every live process into `out`; the number that may not be read (other users'
    processes, unless root: libproc answers the same user only)."""
    return fill_from(pids(), read_record, out, None if want_argv is None else memo(want_argv))


def read_argv(pid: int) -> list[str] | None:
    """argv (KERN_PROCARGS2); None if gone, [] if it may not be read (the kernel says
    EINVAL for both: whether the process is still there decides)."""
    got = _api().args(pid)
    if got is not None:
        argv: list[str] = got[0]
        return argv
    return [] if is_process(pid) else None


def read_link(pid: int, what: str) -> str:
    from mcp_tether._plat import darwin_libproc as abi

    api = abi.api()
    if what == "exe":
        return str(api.path(pid))
    try:
        got = api.pidinfo(pid, abi.PROC_PIDVNODEPATHINFO, 0, abi.proc_vnodepathinfo)
    except (abi.Gone, PermissionError):
        return ""
    return "" if got is None else got.pvi_cdir.vip_path.decode("utf-8", "surrogateescape")


def _short(pid: int) -> Any:
    """PROC_PIDT_SHORTBSDINFO (no same-user check; zombies too), or None if gone."""
    from mcp_tether._plat import darwin_libproc as abi

    try:
        return abi.api().pidinfo(pid, abi.PROC_PIDT_SHORTBSDINFO, 1, abi.proc_bsdshortinfo)
    except (abi.Gone, PermissionError):
        return None


def owner(pid: int) -> int | None:
    got = _short(pid)
    return None if got is None else int(got.pbsi_uid)


def clock() -> float:
    return time.time()  # start times are seconds since the epoch


def age_seconds(start: float, now: float | None, ticks: int) -> float:
    return max(0.0, (time.time() if now is None else now) - start)


def run_delay(pid: int) -> float | None:
    return None  # no scheduler delay per process: no credit for waiting for a CPU


def last_pid() -> int | None:
    return None


def is_process(pid: int) -> bool:
    """A process (zombies included). macOS's thread ids never collide with pids."""
    return _short(pid) is not None


def children(pid: int) -> list[int] | None:
    """The children of `pid` (zombies included): proc_listpids(PROC_PPID_ONLY)."""
    from mcp_tether._plat import darwin_libproc as abi

    got = abi.api().pids(abi.PROC_PPID_ONLY, pid)
    return None if got is None else [p for p in got if p > 0]


def stdio_key(fd: int) -> tuple[int, int] | None:
    """Our `fd`'s pipe, by both ends' handles (so that a holder of either end matches, as
    on Linux), or its UNIX socket by its pcb; None for anything else."""
    from mcp_tether._plat import darwin_libproc as abi

    api = abi.api()
    me = os.getpid()
    kind = dict(api.fds(me) or ()).get(fd)
    if kind == abi.PROX_FDTYPE_PIPE:
        p = api.fdinfo(me, fd, abi.PROC_PIDFDPIPEINFO, abi.pipe_fdinfo)
        if p is not None:
            h, peer = p.pipeinfo.pipe_handle, p.pipeinfo.pipe_peerhandle
            return (min(h, peer or h), max(h, peer))
    elif kind == abi.PROX_FDTYPE_SOCKET:
        s = api.fdinfo(me, fd, abi.PROC_PIDFDSOCKETINFO, abi.socket_fdinfo)
        if s is not None:
            return (s.psi.soi_pcb, s.psi.soi_pcb)
    return None


def holds(pid: int, keys: set[tuple[int, int]]) -> bool | None:
    """Whether `pid` has an end of one of the pipes, or one of the sockets, that `keys`
    (`stdio_key`'s) name open on an fd; None where its fds cannot be read."""
    from mcp_tether._plat import darwin_libproc as abi

    api = abi.api()
    fds = api.fds(pid)
    if fds is None:
        return None
    handles = {h for key in keys for h in key}
    for fd, kind in fds:
        if kind == abi.PROX_FDTYPE_PIPE:
            p = api.fdinfo(pid, fd, abi.PROC_PIDFDPIPEINFO, abi.pipe_fdinfo)
            if p is not None and p.pipeinfo.pipe_handle in handles:
                return True
        elif kind == abi.PROX_FDTYPE_SOCKET:
            s = api.fdinfo(pid, fd, abi.PROC_PIDFDSOCKETINFO, abi.socket_fdinfo)
            if s is not None and s.psi.soi_pcb in handles:
                return True
    return False


def reopen(fd: int, write: bool) -> int | None:
    return None  # /dev/fd/N dups the same open file: no fresh end of the other mode


# ----- what a process is doing: what libproc shows, None for the rest -------------------


def signal_masks(pid: int) -> dict[str, int] | None:
    return None


def wait_channel(pid: int, tid: int | None = None) -> str | None:
    return None


def threads(pid: int, limit: int | None = None) -> list[tuple[int, str, str | None]] | None:
    return None


def running_tasks() -> int | None:
    return None


def running_threads(pid: int) -> int | None:
    """`pti_numrunning` of PROC_PIDTASKINFO."""
    from mcp_tether._plat import darwin_libproc as abi

    try:
        got = abi.api().pidinfo(pid, abi.PROC_PIDTASKINFO, 0, abi.proc_taskinfo)
    except (abi.Gone, PermissionError):
        return None
    return None if got is None else int(got.pti_numrunning)


def boot_id() -> str | None:
    """This boot's session uuid (sysctl kern.bootsessionuuid, made at each boot)."""
    got: str | None = _api().sysctl_text(b"kern.bootsessionuuid")
    return got


def mapped_files(pid: int) -> tuple[list[str], str] | None:
    return None  # the region walk can hang on another's process (psutil #2885)


def boot_paths() -> list[str]:
    """Folders a fresh `python -S` needs on sys.path to use this backend: none."""
    return []


def channels() -> ModuleType:
    """fd ends, pipe and socket peers, holders: loaded only by the callers that look."""
    from mcp_tether._plat import darwin_fds

    return darwin_fds
