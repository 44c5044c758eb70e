"""Capability probes for the OS primitives mcp-tether uses, each computed once.

This is the one place that asks what the platform is. Callers ask for a capability
(`has_pidfd()`, `subreaper()`), never `sys.platform`. The OS-bound primitives live in
one module per platform under `mcp_tether._plat` (Linux now, `generic` for other POSIX
systems), chosen once below; macOS (kqueue NOTE_EXIT, no subreaper) and Windows (Job
Objects) slot in as new modules behind the same names.
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
    "is_subreaper",
    "subreaper",
    "set_pdeathsig",
    "load_prctl",
    "clock_ticks",
]

IS_LINUX = sys.platform.startswith("linux")
IS_POSIX = os.name == "posix"

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs ~11 ms at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol, TypeVar

    _T = TypeVar("_T")
    _T_co = TypeVar("_T_co", covariant=True)

    class _Cached(Protocol[_T_co]):
        def __call__(self) -> _T_co: ...
        def cache_clear(self) -> None: ...


class _Once:
    """A no-argument probe: computed on first call, then remembered (functools.lru_cache
    pulls in collections). `_once` gives it the probe's return type for mypy."""

    def __init__(self, fn: Callable[[], object]) -> None:
        self._fn = fn
        self._memo: list[object] = []
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__

    def __call__(self) -> Any:  # Any: `_once` narrows it to the probe's own return type
        if not self._memo:
            self._memo.append(self._fn())
        return self._memo[0]

    def cache_clear(self) -> None:
        self._memo.clear()


def _once(fn: Callable[[], _T]) -> _Cached[_T]:
    """Cache a no-argument probe: computed on first call, then remembered."""
    return _Once(fn)


PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

# The platform choice, made once: every OS-bound primitive below goes through `_impl`.
if IS_LINUX:
    from mcp_tether._plat import linux as _impl
else:
    from mcp_tether._plat import generic as _impl  # type: ignore[no-redef]  # same API


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


def load_prctl() -> None:
    """Load what `set_pdeathsig` needs *before* a fork (no library loading in a child)."""
    _impl.load()


def prctl(option: int, arg: int) -> bool:
    """Call prctl(2); False where it is missing or refused."""
    return _impl.prctl(option, arg)


def set_subreaper(on: bool = True) -> bool:
    """Make orphaned descendants reparent to this process instead of init (Linux).

    `on=False` turns it off again: a library call that made its caller a subreaper for
    a while (the probe run from pytest) must not leave it so. Prefer `subreaper()`.
    """
    return _impl.set_subreaper(on)


def is_subreaper() -> bool:
    """Whether this process is a child subreaper now (False where there is none)."""
    return _impl.is_subreaper()


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
    return _impl.set_pdeathsig(sig)


@_once
def clock_ticks() -> int:
    """USER_HZ, the unit of start times in /proc/<pid>/stat."""
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):
        return 100
