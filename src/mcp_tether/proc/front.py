"""A thin front for a supervisor: the pid the host knows, so a SIGKILL of it spares the work.

A host that gives up on its child SIGKILLs that one pid. If that pid is the guard
itself, its subreaper role dies with it and the server's descendants (behind `sh -c` or
`npx`, a launcher's daemon, an escaped helper) are reparented to init and live on.
`split()` forks once, early:

- the parent (the *front*) keeps the pid the host started and every fd it passed; it
  only forwards SIGTERM, SIGINT and SIGHUP to its one child, waits for it, and exits
  with its status (its code, 128+N after signal N). It never reads or writes a byte.
- the child (the *supervisor*) returns from `split()` with the front's pid, in a
  process group of its own (a terminal's Ctrl-C reaches the front alone, which forwards
  it once, so "a second SIGINT" still means a second Ctrl-C). It is the one that must
  watch the front: the front's death, SIGKILL included, is its parent's death.

The front signals only its own unreaped child, whose pid cannot be reused before the
front reaps it. Only where the backend can watch a host past the front (a pidfd on
it: Linux); elsewhere `split()` returns None and nothing forks.
"""

from __future__ import annotations

import os
import signal
import sys

from mcp_tether import platform

__all__ = ["split", "FORWARDED"]

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def split() -> int | None:
    """Fork a front; return its pid in the child (the supervisor's parent, which cannot
    change while the front waits for it), never return in the front.

    None (and no fork) where the platform cannot keep the contract (no pidfds)."""
    if not (platform.backend.WATCHES_BEYOND_PARENT):
        return None
    front = os.getpid()
    for stream in (sys.stdout, sys.stderr):  # nothing buffered may be written twice
        try:  # noqa: SIM105  # contextlib would cost the guard's start-up an import
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    child = os.fork()
    if child == 0:
        os.setpgid(0, 0)
        return front
    _be_front(child)  # never returns
    return None  # pragma: no cover


def _be_front(child: int) -> None:
    unreaped = [True]  # the child's pid is ours until we reap it: only then stop forwarding

    def forward(signum: int, _frame: object) -> None:
        if not unreaped[0]:
            return
        try:  # noqa: SIM105  # contextlib would cost the guard's start-up an import
            os.kill(child, signum)  # our own child, not reaped yet (maybe a zombie)
        except ProcessLookupError:
            pass

    for sig in FORWARDED:
        signal.signal(sig, forward)
    try:
        # Wait for the exit without reaping (WNOWAIT): the pid stays the child's while a
        # handler may still forward a signal; stop forwarding, then reap.
        os.waitid(os.P_PID, child, os.WEXITED | os.WNOWAIT)  # EINTR retried (PEP 475)
        unreaped[0] = False
        _, status = os.waitpid(child, 0)
    except ChildProcessError:
        os._exit(1)
    if os.WIFSIGNALED(status):
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status))
