"""The shutdown ladder: close stdin -> grace -> SIGTERM -> grace -> SIGKILL.

MCP spec 2026-07-28, stdio transport, shutdown: the client SHOULD close the server's
stdin, wait for it to exit, and if it does not exit "within a reasonable time" send
SIGTERM, then SIGKILL. The spec names no number; both official SDKs wait 2 s per rung
(TypeScript `StdioClientTransport.close()`, Python `stdio_client`), so we do too.

`run_ladder` is the only implementation; what it signals (a direct child, a process
group, a group plus escaped descendants) is the target's business. It returns every
rung it climbed (action, instant sent, outcome) so callers can say which rung ended a
server. Time comes from an injectable clock, so fakes can test it without waiting.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # not typing's: typing stays off the guard's and the helper's start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Protocol
else:
    Protocol = object

__all__ = [
    "GRACE_AFTER_EOF",
    "TERM_GRACE",
    "KILL_WAIT",
    "Step",
    "Rung",
    "LadderResult",
    "LadderTarget",
    "run_ladder",
]

GRACE_AFTER_EOF = 2.0  # seconds a server gets to exit on its own after stdin closes
TERM_GRACE = 2.0  # seconds between SIGTERM and SIGKILL
KILL_WAIT = 5.0  # how long we wait to *see* a SIGKILLed process go (D state, NFS ...)


class Step:
    """What one rung did and how it went, whoever tells it. Two kinds say when: a `Rung`
    in monotonic instants, which its climber compares with the rest of its own clock, and
    the guard report's `RungTaken` in ms after the trigger, the only time a reader in
    another process can use. (Plain classes: dataclasses cost ~8 ms to import.)"""

    __slots__ = ("action", "outcome")
    action: str  # "close-stdin" | "sigterm" | "sigkill"
    outcome: str  # "exited" (target gone before the next rung), "timeout", "gone", "denied"


class Rung(Step):
    """One step taken, its instants on the monotonic clock, which is one per machine: the
    probe's client sends its rungs as they are to the keeper, whose verdict reads them."""

    __slots__ = ("sent_at", "exited_at")

    def __init__(
        self, action: str, sent_at: float, outcome: str, exited_at: float | None = None
    ) -> None:
        self.action = action
        self.sent_at = sent_at  # monotonic instant the action was taken
        self.outcome = outcome
        self.exited_at = exited_at

    def __repr__(self) -> str:
        return f"Rung({self.action!r}, {self.sent_at!r}, {self.outcome!r}, {self.exited_at!r})"


class LadderResult:
    __slots__ = ("rungs", "ended_by", "exited_at")

    def __init__(self) -> None:
        self.rungs: list[Rung] = []
        self.ended_by: str | None = None  # action of the rung that ended it; None: alive
        self.exited_at: float | None = None

    @property
    def survived(self) -> bool:
        return self.ended_by is None


class LadderTarget(Protocol):
    def close_stdin(self) -> None: ...

    def signal(self, sig: int) -> str:
        """Send sig; return "sent", "gone" or "denied"."""
        ...

    def wait(self, timeout: float) -> float | None:
        """Wait up to timeout for the target to be gone; its exit instant or None."""
        ...


def run_ladder(
    target: LadderTarget,
    *,
    close_stdin: bool = True,
    grace: float = GRACE_AFTER_EOF,
    term_grace: float = TERM_GRACE,
    kill_wait: float = KILL_WAIT,
    clock: Callable[[], float] = time.monotonic,
) -> LadderResult:
    """Climb the ladder until the target is gone; report each rung."""
    import signal  # here: `ps` and `hosts` read this module's defaults, never climb

    result = LadderResult()
    steps: list[tuple[str, float]] = []
    if close_stdin:
        steps.append(("close-stdin", grace))
    else:
        steps.append(("wait", grace))
    steps += [("sigterm", term_grace), ("sigkill", kill_wait)]
    for action, wait_s in steps:
        sent_at = clock()
        if action == "close-stdin":
            target.close_stdin()
            outcome = "sent"
        elif action == "wait":
            outcome = "sent"
        else:
            outcome = target.signal(signal.SIGTERM if action == "sigterm" else signal.SIGKILL)
        if outcome == "denied":
            result.rungs.append(Rung(action, sent_at, "denied"))
            return result
        exited_at = target.wait(wait_s) if wait_s > 0 or outcome == "gone" else target.wait(0)
        if action != "wait":
            rung = Rung(action, sent_at, "exited" if exited_at is not None else "timeout")
            rung.exited_at = exited_at
            if outcome == "gone":
                rung.outcome = "gone"
            result.rungs.append(rung)
        if exited_at is not None:
            # "wait" (no stdin to close: a parent died) counts as leaving by itself.
            result.ended_by = "self" if action == "wait" else action
            result.exited_at = exited_at
            return result
    return result
