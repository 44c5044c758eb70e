"""Linux: prctl(2) for the child subreaper flag and the parent-death signal.

prctl is reached through ctypes, loaded on first use (ctypes costs a few ms; only the
guard, the keeper and spawns that ask for PDEATHSIG pay it). Call `load()` before a
fork when the child will need prctl: loading a library after fork in a threaded
parent can deadlock.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing stays off the guard's start-up path
if TYPE_CHECKING:
    from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37

_fn: list[Any] = []


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
