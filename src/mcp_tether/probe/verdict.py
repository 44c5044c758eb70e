"""From the facts a keeper observed to a verdict: a pure function, tested without processes.

Facts (all instants CLOCK_MONOTONIC seconds):
- judge: how the scenario is judged: "window", "ladder" (close) or "answer" (idle)
- trigger: when the client went away / EOF was sent / the signal was sent (None: never)
- gone_at: when the last process of the server's tree was seen to exit (None: not gone)
- survivors: processes of the tree alive when the window closed; each may carry
  `gone_at` (it exited later, within the horizon: the scenario `lingered`)
- rungs: the client's ladder [{action, sent_at, outcome}] (close and idle)
- early_exit: the server exited before the trigger
- killed_by_probe: for sigterm/sigint, the probe (as host) had to SIGKILL after the window
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

__all__ = ["Facts", "decide"]


class Facts:
    """What one scenario showed. A plain class: the keeper starts without dataclasses."""

    def __init__(
        self,
        scenario: str,
        trigger: float | None = None,
        trigger_what: str | None = None,  # eof | parent-death | sigterm | sigint
        gone_at: float | None = None,
        survivors: list[dict[str, Any]] | None = None,
        rungs: list[dict[str, Any]] | None = None,
        early_exit: bool = False,
        error: str | None = None,
        answered: bool | None = None,  # idle
        killed_by_probe: float | None = None,
        judge: str | None = None,
    ) -> None:
        self.scenario = scenario
        self.trigger = trigger
        self.trigger_what = trigger_what
        self.gone_at = gone_at
        self.survivors = survivors if survivors is not None else []
        self.rungs = rungs if rungs is not None else []
        self.early_exit = early_exit
        self.error = error
        self.answered = answered
        self.killed_by_probe = killed_by_probe
        self.judge = judge or "window"
        self.call_answered: bool | None = None  # call-in-flight


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
        last = f.rungs[-1]["action"] if f.rungs else f.trigger_what
        if all(s.get("gone_at") is not None for s in f.survivors):
            late = max(float(s["gone_at"]) for s in f.survivors)
            return "lingered", _rung_name(last), round((late - f.trigger) * 1000, 1)
        return "orphaned", _rung_name(last), None
    if f.judge == "ladder":
        sent = {r["action"]: r["sent_at"] for r in f.rungs}
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


def passed(scenario: str, verdict: str, guarded: bool = False) -> bool:
    from mcp_tether.probe.scenarios import get

    return get(scenario).passes(verdict, guarded)
