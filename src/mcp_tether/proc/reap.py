"""Reaping children and reading their exit status: the one place for both.

Guarantees:
- `exit_status(raw)` turns a raw wait status into what a shell reports: the exit code,
  or 128+N after death by signal N (tini, bash). Nowhere else converts wait statuses.
- `reap_children()` collects every child that has exited *now* (waitpid(-1, WNOHANG)
  until none is left), never blocking; EINTR is retried.
- `has_children()` is False exactly when the kernel says ECHILD: no child, running or
  zombie, is left to reap. For a child subreaper this means its whole tree is gone,
  because every orphan of the tree reparents to it before its parent turns zombie.
  It reaps nothing (WNOWAIT), so it never steals a status from `reap_children`.
"""

from __future__ import annotations

import os

__all__ = ["exit_status", "reap_children", "has_children", "wait_child"]


def exit_status(raw_wait_status: int) -> int:
    """The exit code of a raw wait status, or 128+N if the process died of signal N."""
    if os.WIFSIGNALED(raw_wait_status):
        return 128 + os.WTERMSIG(raw_wait_status)
    if os.WIFEXITED(raw_wait_status):
        return os.WEXITSTATUS(raw_wait_status)
    code = os.waitstatus_to_exitcode(raw_wait_status)  # stopped/continued: not an exit
    return 128 - code if code < 0 else code


def reap_children() -> list[tuple[int, int]]:
    """(pid, raw status) of every child that has exited; [] when none has (or none left)."""
    out: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return out
        except InterruptedError:  # pragma: no cover  # PEP 475 retries; belt and braces
            continue
        if pid == 0:
            return out
        out.append((pid, status))


def has_children() -> bool:
    """True while any child (running or a zombie not yet reaped) is left; ECHILD -> False."""
    try:
        # WNOWAIT: look without reaping. WNOHANG: never block. Any answer but ECHILD
        # (a zombie's siginfo, or None while every child still runs) means "yes".
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    except InterruptedError:  # pragma: no cover  # PEP 475 retries; belt and braces
        return True
    return True


def poll_child(pid: int) -> int | None:
    """Reap child `pid` if it has exited: its raw wait status; None while it runs. For
    a backend without pidfds, where a caller polls for its own child's exit."""
    while True:
        try:
            got, status = os.waitpid(pid, os.WNOHANG)
        except InterruptedError:  # pragma: no cover
            continue
        return status if got == pid else None


def wait_child(pid: int) -> int:
    """Block until child `pid` exits, reap it; its raw wait status."""
    while True:
        try:
            _pid, status = os.waitpid(pid, 0)
        except InterruptedError:  # pragma: no cover
            continue
        return status
