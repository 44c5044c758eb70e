"""The Linux backend: /proc read directly, pidfds, prctl (subreaper, PDEATHSIG).

Guarantees:
- One /proc/<pid>/stat parser (`_parse`) fills the one `ProcRecord` for every caller:
  `read(pid)` (zombies included: the keeper and the guard must see them exit) and the
  table's `fill` (zombies and kernel threads left out). Speed matters in `fill` (`ps`
  reads every process of the machine): one open/read/close per process, argv only for
  the names a caller asks for.
- `pidfd_open` pins a process (exact identity, exact exit instant); prctl is reached
  through ctypes, loaded on first use. Call `load()` before a fork when the child will
  need prctl: loading a library after fork in a threaded parent can deadlock.
- Who holds a pipe or socket (`holds`) is read from /proc/<pid>/fd; the table's channel
  checks (fd modes, pipe peers, sock_diag) live in `linux_fds`, loaded by `channels()`.
- Stdlib only: the guard's start-up path loads this module.
"""

from __future__ import annotations

import os
import select

from mcp_tether._plat import fstat_key, memo
from mcp_tether._plat.record import ProcRecord

TYPE_CHECKING = False  # typing stays off the guard's start-up path
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

NAME = "linux"
# poll(2) events that tell a socket's peer stopped writing (a half-close shows only so).
SOCKET_HANGUP = getattr(select, "POLLRDHUP", 0x2000)

HAS_SUBREAPER = True  # PR_SET_CHILD_SUBREAPER (Linux >= 3.4)
HAS_PDEATHSIG = True  # PR_SET_PDEATHSIG
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
_PF_KTHREAD = 0x00200000
_PAGE = os.sysconf("SC_PAGE_SIZE")

_fn: list[Any] = []


# ----- prctl: subreaper and parent-death signal ------------------------------------------


def load() -> Any:  # a ctypes foreign function
    """libc's prctl, loaded once."""
    if not _fn:
        import ctypes  # deferred: only callers of prctl pay for it

        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.prctl
        fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                       ctypes.c_ulong]
        fn.restype = ctypes.c_int
        _fn.append(fn)
    return _fn[0]


def prctl(option: int, arg: int) -> bool:
    """Call prctl(2); False where it is refused or libc lacks it."""
    try:
        return bool(load()(option, arg, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def set_subreaper(on: bool) -> bool:
    return prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0)


def is_subreaper() -> bool:
    """The current PR_GET_CHILD_SUBREAPER flag (False if it cannot be read)."""
    try:
        import ctypes

        flag = ctypes.c_int(0)
        ok = load()(PR_GET_CHILD_SUBREAPER, ctypes.addressof(flag), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
    return bool(ok and flag.value)


def set_pdeathsig(sig: int) -> bool:
    return prctl(PR_SET_PDEATHSIG, sig)


# ----- pidfds ------------------------------------------------------------------------------


def _probe_pidfd() -> bool:
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (OSError, AttributeError):  # no pidfd_open (kernel < 5.3, Python < 3.9)
        return False
    return True


HAS_PIDFD = _probe_pidfd()
# The guard's front may fork: its supervisor watches the host through a pidfd.
WATCHES_BEYOND_PARENT = HAS_PIDFD


def pidfd_open(pid: int) -> int | None:
    """A pidfd for `pid`, readable once it exits. ProcessLookupError if there is no such
    process (or `pid` is not a thread-group leader); None if none can be had (no pidfds,
    EPERM, EMFILE): the caller falls back to re-checking identity."""
    if not HAS_PIDFD:
        return None
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        raise
    except OSError as exc:
        if exc.errno == 2:  # ENOENT: not a process (a thread id)
            raise ProcessLookupError(exc.errno, exc.strerror) from None
        return None


def exit_fd(pid: int) -> int | None:
    """A descriptor that turns readable when `pid` exits: its pidfd (see `pidfd_open`)."""
    return pidfd_open(pid)


# ----- the process table --------------------------------------------------------------


def _read_all(path: str, size: int = 65536) -> bytes:
    # procfs hands over everything available up to `size` in one read: read again only
    # when the buffer came back full (saves a syscall per file on every process).
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.read(fd, size)
        if len(data) < size:
            return data
        chunks = [data]
        while True:
            b = os.read(fd, size)
            if not b:
                return b"".join(chunks)
            chunks.append(b)
    finally:
        os.close(fd)


def _never(comm: str) -> bool:
    return False


def _parse(pid: int, data: bytes, want_argv: Callable[[str], bool] | None,
           live_only: bool = True) -> ProcRecord | None:
    """The one /proc/<pid>/stat parser. `live_only`: None for a zombie or kernel thread.

    comm is in parentheses and may itself hold spaces and ')': split at the last one.
    Fields up to cstime/rss only (split(None, 22) allocates 23 words, not 50)."""
    rpar = data.rindex(b")")
    comm = data[data.index(b"(") + 1 : rpar].decode(errors="replace")
    f = data[rpar + 2 :].split(None, 22)
    # f[k] is stat field k+3: state 3, ppid 4, pgrp 5, session 6, flags 9, utime 14,
    # stime 15, cutime 16, cstime 17, starttime 22, rss 24.
    state = f[0]
    if live_only and (int(f[6]) & _PF_KTHREAD or state in (b"Z", b"X", b"x")):
        return None
    argv = None
    if want_argv is None or want_argv(comm):
        argv = read_argv(pid)
        if argv is None:
            return None
    return ProcRecord(pid, int(f[1]), int(f[2]), int(f[3]), state.decode(), float(f[19]),
                      comm, int(f[11]) + int(f[12]), int(f[21]) * _PAGE, argv,
                      int(f[13]) + int(f[14]))


def read(pid: int) -> ProcRecord | None:
    """`pid` now, zombie or not; None if there is no such process. PermissionError if
    it exists but may not be read."""
    try:
        data = _read_all(f"/proc/{pid}/stat", 4096)
    except (FileNotFoundError, ProcessLookupError):
        return None
    try:
        return _parse(pid, data, _never, False)  # positional: tests wrap `_parse`
    except (ValueError, IndexError):
        return None


def read_record(pid: int, want_argv: Callable[[str], bool] | None) -> ProcRecord | None:
    """One live user-space process; None if gone, a kernel thread or a zombie.
    PermissionError if the process exists but may not be read."""
    try:
        data = _read_all(f"/proc/{pid}/stat", 4096)
    except (FileNotFoundError, ProcessLookupError):
        return None
    return _parse(pid, data, want_argv)


def pids() -> list[int]:
    """Every pid now (threads' ids are not listed; zombies are)."""
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def fill(out: dict[int, ProcRecord], want_argv: Callable[[str], bool] | None) -> int:
    """Every live process into `out`; the number that may not be read. The hot loop of
    `ps`: one open/read/close of stat per process, names judged once per distinct comm."""
    if want_argv is not None:
        want_argv = memo(want_argv)
    unreadable = 0
    open_, read_, close, flags = os.open, os.read, os.close, os.O_RDONLY | os.O_CLOEXEC
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fd = open_(f"/proc/{name}/stat", flags)
            try:
                data = read_(fd, 4096)
            finally:
                close(fd)
            p = _parse(int(name), data, want_argv)
        except PermissionError:
            unreadable += 1
            continue
        except (OSError, ValueError, IndexError):
            continue  # vanished mid-read, or a stat we cannot parse
        if p is not None:
            out[p.pid] = p
    return unreadable


def terminal(pid: int) -> int | None:
    """`pid`'s controlling terminal (stat's tty_nr: 0 for none, as a daemon has); None
    where unreadable."""
    try:
        data = _read_all(f"/proc/{pid}/stat", 4096)
        return int(data[data.rindex(b")") + 2 :].split(None, 5)[4])
    except (OSError, ValueError, IndexError):
        return None


def read_argv(pid: int) -> list[str] | None:
    try:
        raw = _read_all(f"/proc/{pid}/cmdline")
    except (FileNotFoundError, ProcessLookupError):
        return None
    except OSError:
        return []
    if not raw:
        return []
    # One decode, then split: not a decode per word. A process that rewrote its title
    # (node's process.title: `npm exec X`) shows one space-joined string without the
    # trailing NUL.
    parts = raw.decode(errors="replace").split("\0")
    if parts[-1] == "":
        parts.pop()
    return parts


def read_link(pid: int, what: str) -> str:
    try:
        return os.readlink(f"/proc/{pid}/{what}")
    except OSError:
        return ""


def owner(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def clock() -> float:
    """The instant ages are counted to: seconds since boot, as start times are."""
    try:
        return float(_read_all("/proc/uptime", 256).split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0


def age_seconds(start: float, now: float | None, ticks: int) -> float:
    return max(0.0, (clock() if now is None else now) - start / ticks)


def run_delay(pid: int) -> float | None:
    """Seconds `pid` waited for a CPU (schedstat run_delay); None where unreadable."""
    try:
        return int(_read_all(f"/proc/{pid}/schedstat", 256).split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


# ----- trees: pids handed out, threads, children -----------------------------------------


def _read_int(path: str) -> int | None:
    try:
        return int(_read_all(path, 64))
    except (OSError, ValueError):
        return None


PID_MAX = _read_int("/proc/sys/kernel/pid_max") or 4194304


def last_pid() -> int | None:
    """The last pid the kernel handed out in our pid namespace (None: cannot know)."""
    return _read_int("/proc/sys/kernel/ns_last_pid")


def is_process(pid: int) -> bool:
    """True for a process (thread-group leader), False for another thread's id.

    /proc/<tid>/stat of a thread reads like a process whose parent is the process's
    parent; signalling its "pid" would signal that process a second time."""
    try:
        fd = pidfd_open(pid)  # only thread-group leaders have pidfds
    except ProcessLookupError:
        return False
    if fd is not None:
        os.close(fd)
        return True
    try:
        for line in _read_all(f"/proc/{pid}/status").splitlines():
            if line.startswith(b"Tgid:"):
                return int(line.split()[1]) == pid
    except (OSError, ValueError):
        return False
    return False


def children(pid: int) -> list[int] | None:
    """The children of `pid` (zombies included), from its tasks' `children` files;
    None where the kernel lacks CONFIG_PROC_CHILDREN or they are unreadable."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        return [int(k) for tid in tasks
                for k in _read_all(f"/proc/{pid}/task/{tid}/children").split()]
    except (OSError, ValueError):
        return None


# ----- open files ----------------------------------------------------------------------------


stdio_key = fstat_key  # a pipe's inode is both ends': holders of either end match


def holds(pid: int, keys: set[tuple[int, int]]) -> bool | None:
    """Whether `pid` has any of `keys` ((st_dev, st_ino)) open on an fd; None: unknown."""
    base = f"/proc/{pid}/fd"
    try:
        names = os.listdir(base)
    except OSError:
        return None
    for name in names:
        try:
            st = os.stat(f"{base}/{name}")  # follows the magic link to the open file
        except OSError:
            continue  # closed meanwhile
        if (st.st_dev, st.st_ino) in keys:
            return True
    return False


def reopen(fd: int, write: bool) -> int | None:
    """A fresh open file of the pipe our `fd` refers to, for writing or reading (a pipe
    reopened through /proc gives a new end of the same pipe); None where it cannot be."""
    flags = (os.O_WRONLY if write else os.O_RDONLY) | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        return os.open(f"/proc/self/fd/{fd}", flags)
    except OSError:
        return None


# ----- what a process is doing: the probe's evidence, `inspect`, containers ----------------

_MASKS = {"SigBlk": "blocked", "SigIgn": "ignored", "SigCgt": "caught"}


def _text(path: str) -> str | None:
    try:
        return _read_all(path).decode(errors="replace")
    except OSError:
        return None


def signal_masks(pid: int) -> dict[str, int] | None:
    """`pid`'s "blocked", "ignored" and "caught" signal sets (bit N-1 for signal N);
    None where unreadable."""
    text = _text(f"/proc/{pid}/status")
    if text is None:
        return None
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in _MASKS:
            try:
                out[_MASKS[key]] = int(value.strip() or "0", 16)
            except ValueError:
                return None
    return out


def wait_channel(pid: int, tid: int | None = None) -> str | None:
    """The kernel function `pid` (or its thread `tid`) sleeps in; None when running or
    unreadable."""
    path = f"/proc/{pid}/wchan" if tid is None else f"/proc/{pid}/task/{tid}/wchan"
    text = (_text(path) or "").strip()
    return text if text and text != "0" else None


def threads(pid: int, limit: int | None = None) -> list[tuple[int, str, str | None]] | None:
    """`pid`'s threads, the main one first, then by id, at most `limit`: (tid, name, its
    `wait_channel`). None where the list is unreadable."""
    try:
        tids = sorted((int(t) for t in os.listdir(f"/proc/{pid}/task")),
                      key=lambda t: (t != pid, t))
    except (OSError, ValueError):
        return None
    out = []
    for tid in tids[:limit]:
        name = _text(f"/proc/{pid}/task/{tid}/comm")
        if name is not None:
            out.append((tid, name.strip(), wait_channel(pid, tid)))
    return out


def running_tasks() -> int | None:
    """Tasks (threads) runnable on the whole machine now, whatever pid namespace we are
    in: /proc/loadavg's fourth field, the count the load average averages."""
    text = _text("/proc/loadavg")
    try:
        return int(text.split()[3].split("/")[0]) if text else None
    except (IndexError, ValueError):
        return None


def running_threads(pid: int) -> int | None:
    """How many of `pid`'s threads are runnable now (state R); None: unreadable."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    n = 0
    for tid in tids:
        stat = _text(f"/proc/{pid}/task/{tid}/stat") or ""
        n += stat[stat.rfind(")") + 2:stat.rfind(")") + 3] == "R"
    return n


def pid_namespace(pid: int) -> int | None:
    """An id of `pid`'s pid namespace (the inode of its ns/pid link); None: unknown."""
    try:
        return os.stat(f"/proc/{pid}/ns/pid").st_ino
    except OSError:
        return None


def boot_id() -> str | None:
    """This boot's random id (a reboot makes a new one); None if unreadable."""
    try:
        return _read_all("/proc/sys/kernel/random/boot_id", 256).decode("ascii", "replace")\
            .strip() or None
    except OSError:
        return None


def cgroup(pid: int) -> str | None:
    """`pid`'s cgroup membership, as the kernel lists it (a container's names its id)."""
    return _text(f"/proc/{pid}/cgroup")


def cgroup_memory(pid: int) -> int | None:
    """Bytes used by `pid`'s memory cgroup (v1 or v2); None where unreadable."""
    for line in (cgroup(pid) or "").splitlines():
        _h, ctrl, path = line.split(":", 2)
        candidates = []
        if "memory" in ctrl.split(","):
            candidates.append(f"/sys/fs/cgroup/memory{path}/memory.usage_in_bytes")
        if ctrl == "":
            candidates.append(f"/sys/fs/cgroup{path}/memory.current")
            candidates.append(f"/sys/fs/cgroup/unified{path}/memory.current")
        for c in candidates:
            try:
                return int(_read_all(c, 256).strip())
            except (OSError, ValueError):
                continue
    return None


_MAPS_READ = 4 << 20  # bytes of a maps file read: a process's own libraries come first


def mapped_files(pid: int) -> tuple[list[str], str] | None:
    """The files `pid` has mapped (its libraries and extension modules), in the order
    mapped, and where that was read; None where unreadable."""
    where = f"/proc/{pid}/maps"
    try:
        with open(where) as fh:
            text = fh.read(_MAPS_READ)
    except OSError:
        return None
    out = []
    for line in text.splitlines():
        f = line.split(None, 5)
        if len(f) == 6:
            out.append(f[5])
    return out, where


def boot_paths() -> list[str]:
    """Folders a fresh `python -S` needs on sys.path to use this backend: none."""
    return []


def channels() -> ModuleType:
    """fd links, pipe peers and sock_diag: loaded only by the callers that look."""
    from mcp_tether._plat import linux_fds

    return linux_fds
