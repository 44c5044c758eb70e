"""What a backend answers for Linux's process controls its OS does not have.

Guarantees: no prctl, no child subreaper, no parent-death signal, no pidfd (False or
None: callers then use their portable strategy, group + scan, and re-check identity
right before kill(2)); no pid namespace, no cgroup (None: callers say nothing, never
"none"). Stdlib-free, so a backend on a start-up path can share it.
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


def pidfd_open(pid: int) -> int | None:
    return None


def pid_namespace(pid: int) -> int | None:
    return None


def cgroup(pid: int) -> str | None:
    return None


def cgroup_memory(pid: int) -> int | None:
    return None
