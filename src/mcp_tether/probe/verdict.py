"""From the facts a keeper observed to a verdict: a pure function, tested without processes.

Every instant is CLOCK_MONOTONIC seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcp_tether.ladder import Rung

if TYPE_CHECKING:
    from mcp_tether.probe.record import Evidence

__all__ = ["Facts", "Rung", "Survivor", "decide"]


@dataclass
class Survivor:
    """A process of the tree alive at a deadline, with what keeps it alive.

    The keeper fills in what it saw (up to `status`); the result line words `gone_at` and
    `status` as `lingered_ms` and `cause`, and a `ScenarioResult` read back from that line
    carries pid, ppid, cmdline and those two (`api.SURVIVOR_FIELDS`, its JSON)."""

    pid: int
    cmdline: str = ""
    ppid: int | None = None
    ppid_is_probe: bool = False
    evidence: Evidence | None = None  # `evidence.collect`; None for a container
    container: str | None = None  # the short id, when the member is a container
    gone_at: float | None = None  # it exited later, within the horizon
    status: int | None = None  # its exit status, when we reaped it
    lingered_ms: float | None = None  # gone this long after the trigger (within the horizon)
    cause: str | None = None  # what ended it, when it lingered


@dataclass
class Facts:
    """What one scenario showed."""

    scenario: str
    judge: str = "window"  # "window", "ladder" (close) or "answer" (idle): Scenario.judge
    trigger: float | None = None  # the client went / EOF was sent / the signal was sent
    trigger_what: str | None = None  # eof | parent-death | sigterm | sigint
    gone_at: float | None = None  # the last process of the server's tree was seen to exit
    # Alive when the window closed; one that exited within the horizon has `gone_at`.
    survivors: list[Survivor] = field(default_factory=list)
    rungs: list[Rung] = field(default_factory=list)  # the client's ladder (close, idle)
    early_exit: bool = False  # the server exited before the trigger
    error: str | None = None
    answered: bool | None = None  # idle: it still answered
    killed_by_probe: float | None = None  # sigterm/sigint: the probe, as a host, SIGKILLed
    call_answered: bool | None = None  # call-in-flight


def decide(f: Facts) -> tuple[str, str | None, float | None]:
    """(verdict, rung, exit_ms)."""
    if f.error is not None:
        return "error", None, None
    if f.early_exit:
        return "early-exit", None, None
    if f.judge == "answer":
        return ("alive" if f.answered else "error"), None, None
    if f.trigger is None:
        return "error", None, None
    exit_ms = None if f.gone_at is None else round((f.gone_at - f.trigger) * 1000, 1)
    if f.survivors:
        last = f.rungs[-1].action if f.rungs else f.trigger_what
        gone = [s.gone_at for s in f.survivors]
        if all(t is not None for t in gone):
            late = max(t for t in gone if t is not None)
            return "lingered", _rung_name(last), round((late - f.trigger) * 1000, 1)
        return "orphaned", _rung_name(last), None
    if f.judge == "ladder":
        sent = {r.action: r.sent_at for r in f.rungs}
        assert f.gone_at is not None
        if "sigterm" not in sent or f.gone_at < sent["sigterm"]:
            return "exited", "eof", exit_ms
        if "sigkill" not in sent or f.gone_at < sent["sigkill"]:
            return "terminated", "sigterm", exit_ms
        return "killed", "sigkill", exit_ms
    if f.killed_by_probe is not None:
        return "killed", "sigkill", exit_ms
    return "exited", _rung_name(f.trigger_what), exit_ms


def _rung_name(action: str | None) -> str | None:
    return {"close-stdin": "eof"}.get(action or "", action)
