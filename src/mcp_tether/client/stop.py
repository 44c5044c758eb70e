"""The client's last word: wait for the guard to be gone, and a safety rung if it is not.

The guard runs the ladder on the server's whole tree and exits only once that tree is
gone, so "the guard has exited" is "the last process is gone". `settle` waits for that
with the best exit wait the core has (a pidfd on Linux: the exit instant, no polling).

Safety rung: if the guard is still there after its own worst case (grace + term grace +
the time to see SIGKILLed processes go, plus a margin), it is stuck (stopped, traced, a
bug). Then its tree is read once (its descendants, and what carries its mark: a daemon
that left it where there is no subreaper), and the guard and every process of that tree get
SIGKILL, each identity-checked right before the signal by `mcp_tether.proc`, but for
what the server detached on purpose for its user (`proc.leave`, as the guard decides it:
the server is the oldest session leader under it).
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field

from mcp_tether.ladder import KILL_WAIT
from mcp_tether.proc import (
    ExitWaiter,
    ProcessId,
    descendants,
    mark,
    signal_process,
    snapshot,
    wait_gone,
)
from mcp_tether.proc.leave import decide
from mcp_tether.proc.tree import carrying

__all__ = ["SAFETY_MARGIN", "settle_budget", "settle", "Settled"]

# Beyond the guard's own worst case before we stop trusting it.
SAFETY_MARGIN = 1.0


def settle_budget(grace: float, term_grace: float) -> float:
    """How long the guard may take to end its tree after its stdin hangs up."""
    return grace + term_grace + KILL_WAIT + SAFETY_MARGIN


@dataclass
class Settled:
    """How the wait ended: "exited" (by itself, the normal case), "killed" (safety
    rung), "survived" (even SIGKILL was not seen to work: D state), with the instant."""

    how: str
    at: float
    survivors: list[ProcessId] = field(default_factory=list)


def settle(guard: ProcessId | None, timeout: float, kill_wait: float = KILL_WAIT) -> Settled:
    """Block until `guard` is gone (at most `timeout`), then the safety rung if needed."""
    if guard is None:
        return Settled("exited", time.monotonic())
    gone = wait_gone(guard, timeout)
    if gone is not None:
        return Settled("exited", gone)
    snap = snapshot()
    members = descendants(guard.pid, snap)
    # Without a subreaper (macOS), a daemon that left the guard's tree is found by the
    # mark the guard (or its supervisor, behind a front) put in the server's environment.
    tokens = {mark.token(guard.pid, guard.start)} | {mark.token(p.pid, p.start) for p in members}
    have = {m.pid for m in members}
    members += [p for p in carrying(tokens, snap, guard.start) if p.pid not in have]
    # The server: the oldest session leader under the guard (it starts the server in a
    # session of its own; its front and supervisor are not leaders).
    leaders = sorted((m for m in members if m.sid == m.pid), key=lambda m: (m.start, m.pid))
    left = decide(members, root=guard.pid, server_sid=leaders[0].sid) if leaders else {}
    tree = [info.ident for info in members if info.ident not in left]
    for ident in (guard, *tree):
        signal_process(ident, signal.SIGKILL)
    deadline = time.monotonic() + kill_wait
    with ExitWaiter([guard, *tree]) as waiter:
        while waiter.pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return Settled("survived", time.monotonic(), sorted(waiter.pending))
            waiter.wait(remaining)
    return Settled("killed", time.monotonic())
