"""Capability probes for the OS primitives mcp-tether uses, each computed once.

This is the one place that asks what the platform is. Callers ask for a capability
(`has_pidfd()`, `set_subreaper()`), never `sys.platform`. Linux is first class; macOS
(kqueue NOTE_EXIT, no subreaper) and Windows (Job Objects) slot in behind the same names.
"""

from __future__ import annotations

import os
import sys

__all__ = [
    "IS_LINUX",
    "IS_POSIX",
    "has_pidfd",
    "has_proc",
    "prctl",
    "set_subreaper",
    "set_pdeathsig",
    "clock_ticks",
]

IS_LINUX = sys.platform.startswith("linux")
IS_POSIX = os.name == "posix"

_cache: dict[str, object] = {}


def _once(fn):  # type: ignore[no-untyped-def]  # functools.lru_cache pulls in collections
    """Cache a no-argument probe: computed on first call, then remembered."""

    def cached():  # type: ignore[no-untyped-def]
        if fn.__name__ not in _cache:
            _cache[fn.__name__] = fn()
        return _cache[fn.__name__]

    cached.__name__ = fn.__name__
    cached.__doc__ = fn.__doc__
    cached.cache_clear = lambda: _cache.pop(fn.__name__, None)
    return cached


PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


@_once
def has_proc() -> bool:
    """A Linux-style /proc with per-pid stat files."""
    return IS_LINUX and os.path.exists("/proc/self/stat")


@_once
def has_pidfd() -> bool:
    """pidfd_open works here (Linux >= 5.3 and Python >= 3.9), tested once for real."""
    if not hasattr(os, "pidfd_open"):
        return False
    try:
        fd = os.pidfd_open(os.getpid())
    except OSError:
        return False
    os.close(fd)
    return True


@_once
def _libc_prctl():  # type: ignore[no-untyped-def]  # ctypes function object
    import ctypes  # deferred: only Linux callers pay for it

    libc = ctypes.CDLL(None, use_errno=True)
    fn = libc.prctl
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    fn.restype = ctypes.c_int
    return fn


def prctl(option: int, arg: int) -> bool:
    """Call prctl(2); False where it is missing or refused."""
    if not IS_LINUX:
        return False
    try:
        return bool(_libc_prctl()(option, arg, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def set_subreaper(on: bool = True) -> bool:
    """Make orphaned descendants reparent to this process instead of init (Linux).

    `on=False` turns it off again: a library call that made its caller a subreaper for
    a while (the probe run from pytest) must not leave it so.
    """
    return prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0)


def set_pdeathsig(sig: int) -> bool:
    """Ask the kernel to send `sig` to this process when its parent *thread* dies (Linux).

    Call it in the child (e.g. in preexec_fn) and re-check getppid() afterwards: the
    parent may have died before the call.
    """
    return prctl(PR_SET_PDEATHSIG, sig)


@_once
def clock_ticks() -> int:
    """USER_HZ, the unit of start times in /proc/<pid>/stat."""
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):
        return 100
