"""The platform seam: one backend for every OS-bound primitive, chosen once, at import.

This is the one place that asks what the platform is (psutil's habit: one facade over a
per-platform module). Everything else asks `platform.backend` (or the functions below)
and never tests the platform, a capability or an import itself. The backends live in
`mcp_tether._plat`, with the contract in its docstring:

- `linux` (the default where /proc is mounted): /proc read directly, pidfds, the child
  subreaper, PR_SET_PDEATHSIG, fd far ends through /proc and sock_diag. Stdlib only.
- `darwin` (macOS): libproc and sysctl through ctypes (stdlib only): identity,
  parents, fds, pipe and socket peers, exit waits on kqueue. What macOS does not show
  (I/O counters, a subreaper, how another process waits) it answers None.
- `portable` (everywhere else): psutil and POSIX only. What it cannot know (another
  process's fds, a socket's half-close, an exit's exact instant) it answers `unknown` /
  None, or by polling, never by guessing.

`MCP_TETHER_BACKEND=portable` forces the portable backend on Linux (CI runs a subset of
the tests that way); `linux` forces the Linux one; `darwin-sim` runs the darwin backend
on Linux against a simulated libproc answered from /proc (a test backend: never chosen
on its own); anything else is a usage error.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

from mcp_tether._plat import has_procfs
from mcp_tether._plat.record import ProcRecord
from mcp_tether.errors import UsageError

TYPE_CHECKING = False  # the helper's and the guard's start-up path: typing stays off it
if TYPE_CHECKING:
    from collections.abc import Callable

    from mcp_tether._plat import darwin_fds, linux_fds, portable
    from mcp_tether._plat.contract import Backend, Channels

    # every channels module, held to the contract by the type checker (`channels()` is
    # typed as a module, which would not say so)
    _CHANNELS: tuple[Channels, ...] = (linux_fds, darwin_fds, portable)

__all__ = [
    "BACKEND",
    "backend",
    "POSIX",
    "os_name",
    "state_home",
    "posix_shell",
    "has_pidfd",
    "pidfd_open",
    "exit_fd",
    "prctl",
    "set_subreaper",
    "is_subreaper",
    "has_pdeathsig",
    "subreaper",
    "set_pdeathsig",
    "load_prctl",
    "clock_ticks",
]

ENV = "MCP_TETHER_BACKEND"
BACKENDS = ("linux", "portable", "darwin", "darwin-sim")


def _choose() -> str:
    wanted = os.environ.get(ENV, "")
    if wanted and wanted not in BACKENDS:
        raise UsageError(f"{ENV}={wanted!r} is not a backend (choose one of: "
                         f"{', '.join(BACKENDS)}, or leave it unset)")
    if wanted == "darwin" and sys.platform != "darwin":
        raise UsageError(f"{ENV}=darwin needs macOS's libproc (darwin-sim simulates it "
                         "on Linux, for tests)")
    if wanted:
        return wanted
    if sys.platform.startswith("linux") and has_procfs():
        return "linux"
    return "darwin" if sys.platform == "darwin" else "portable"


BACKEND = _choose()
if BACKEND == "linux":
    from mcp_tether._plat import linux as _linux

    backend: Backend = _linux
elif BACKEND == "portable":
    from mcp_tether._plat import portable as _portable

    backend = _portable
else:
    from mcp_tether._plat import darwin as _darwin

    if BACKEND == "darwin-sim":  # the darwin logic, its C calls answered from /proc
        from mcp_tether._plat import darwin_sim

        _darwin.bind(darwin_sim.load)
    backend = _darwin
ProcRecord._backend = backend  # records read argv, cwd and exe through it, lazily


# Sessions, process groups and POSIX signals: what the guard stands on (all but Windows).
POSIX = sys.platform != "win32"


def os_name() -> str:
    """This machine's OS as a `sys.platform` value ("linux", "darwin", "win32"): data for
    tables keyed by OS (where each host keeps its config, on any machine), never a
    branch on what this machine can do (ask the backend or a capability here)."""
    return sys.platform


def state_home() -> str:
    """Where this OS keeps per-user application state: %LOCALAPPDATA% (Windows),
    ~/Library/Application Support (macOS), else $XDG_STATE_HOME or ~/.local/state."""
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        return os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support")
    return os.environ.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state")


def posix_shell() -> str | None:
    """A POSIX sh for short helper scripts, or None where the OS has none."""
    return "/bin/sh" if POSIX and os.path.exists("/bin/sh") else None


def signals(*names: str, realtime: bool = False) -> tuple[int, ...]:
    """The named signals this OS has, in order (a name it lacks is left out); with
    `realtime`, SIGRTMIN..SIGRTMAX after them where the OS has real-time signals."""
    out = tuple(getattr(signal, n) for n in names if hasattr(signal, n))
    if realtime:
        out += tuple(range(getattr(signal, "SIGRTMIN", 0), getattr(signal, "SIGRTMAX", -1) + 1))
    return out


def euid() -> int | None:
    """This process's effective uid; None where the OS has no uids."""
    return os.geteuid() if hasattr(os, "geteuid") else None


def at_fork_in_child(fn: Callable[[], object]) -> bool:
    """Run `fn` in the child after every os.fork(); False where the OS cannot fork."""
    if not hasattr(os, "register_at_fork"):
        return False
    os.register_at_fork(after_in_child=fn)
    return True


def copy_mode(fd: int, mode: int, owner: tuple[int, int] | None = None) -> None:
    """Give the open file `fd` the permission bits `mode` (and `owner` (uid, gid) where
    the OS has owners and we may: not root, it stays ours). Nothing where the OS has
    neither: the file keeps what its creation gave it."""
    if owner is not None and hasattr(os, "fchown"):
        with contextlib.suppress(OSError):
            os.fchown(fd, *owner)
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)


def has_pidfd() -> bool:
    """The backend pins processes with pidfds (Linux >= 5.3, Python >= 3.9)."""
    return bool(backend.HAS_PIDFD)


def pidfd_open(pid: int) -> int | None:
    """A descriptor that pins `pid` and turns readable at its exit; None where the
    backend has none (or may not open one now). ProcessLookupError: no such process."""
    return backend.pidfd_open(pid)


def exit_fd(pid: int) -> int | None:
    """A descriptor that turns readable when `pid` exits (a pidfd on Linux, a kqueue
    watching it on macOS), closed with os.close; None where the backend has none (then
    exits are polled). ProcessLookupError: no such process (or it is exiting)."""
    return backend.exit_fd(pid)


def load_prctl() -> None:
    """Load what `set_pdeathsig` needs *before* a fork (no library loading in a child)."""
    backend.load()


def prctl(option: int, arg: int) -> bool:
    """Call prctl(2); False where it is missing or refused."""
    return backend.prctl(option, arg)


# A test switch: with it set (to anything), this process never becomes a child subreaper
# and says it is none, so Linux runs the trees' no-subreaper strategy (group, scan, marks)
# that macOS runs. Read once, here; never set by the package itself.
NO_SUBREAPER = "MCP_TETHER_NO_SUBREAPER"
_NO_SUBREAPER = bool(os.environ.get(NO_SUBREAPER))


def set_subreaper(on: bool = True) -> bool:
    """Make orphaned descendants reparent to this process instead of init (Linux).

    `on=False` turns it off again: a library call that made its caller a subreaper for
    a while (the probe run from pytest) must not leave it so. Prefer `subreaper()`.
    """
    if on and _NO_SUBREAPER:
        return False
    return backend.set_subreaper(on)


def is_subreaper() -> bool:
    """Whether this process is a child subreaper now (False where there is none, or
    MCP_TETHER_NO_SUBREAPER is set)."""
    return not _NO_SUBREAPER and backend.is_subreaper()


def has_pdeathsig() -> bool:
    """A child can have the kernel signal it when its parent dies (Linux's
    PR_SET_PDEATHSIG); False: the guard leaves a watcher behind it (`proc.watcher`)."""
    return bool(backend.HAS_PDEATHSIG)


class subreaper:  # noqa: N801  # used like a function: `with platform.subreaper() as ok:`
    """Context manager: a child subreaper inside, the previous setting again after.

    `__enter__` returns whether the flag is on (False where the OS has no subreaper:
    callers then fall back to group + scan). Nesting is safe: the outermost exit restores
    what was there before it. (A class, not contextlib: contextlib costs start-up time.)
    """

    def __init__(self) -> None:
        self.was = False
        self.on = False

    def __enter__(self) -> bool:
        self.was = is_subreaper()
        self.on = self.was or set_subreaper(True)
        return self.on

    def __exit__(self, *exc: object) -> None:
        if self.on and not self.was:
            set_subreaper(False)


def set_pdeathsig(sig: int) -> bool:
    """Ask the kernel to send `sig` to this process when its parent *thread* dies (Linux).

    Call it in the child (e.g. in preexec_fn) and re-check getppid() afterwards: the
    parent may have died before the call. `proc.spawn.prepare_child` does both.
    """
    return backend.set_pdeathsig(sig)


_ticks: list[int] = []


def clock_ticks() -> int:
    """USER_HZ, the unit of Linux start times and of every record's CPU ticks."""
    if not _ticks:
        try:
            _ticks.append(int(os.sysconf("SC_CLK_TCK")))
        except (ValueError, OSError, AttributeError):
            _ticks.append(100)
    return _ticks[0]
