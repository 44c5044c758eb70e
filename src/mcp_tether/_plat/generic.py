"""Any other POSIX system (macOS, the BSDs): no subreaper and no parent-death signal.

Every function answers honestly "not available" so callers fall back to their
portable strategy (process group + scan, parent watch by getppid/kqueue).
"""

from __future__ import annotations


def load() -> None:
    return None


def prctl(option: int, arg: int) -> bool:
    return False


def set_subreaper(on: bool) -> bool:
    return False


def is_subreaper() -> bool:
    return False


def set_pdeathsig(sig: int) -> bool:
    return False
