"""The keeper's result line: the verdict and the words that explain it.

From what the keeper observed (an `Observation`: typed facts, no keeper) to the JSON
object the runner parses into a `ScenarioResult`. Verdicts come from `verdict.decide`;
here only the detail is worded: who was alive at the window's end, what the probe then
did, what outlived that, how long a `lingered` process took and what
ended it, and, for a guarded server, which rung of the guard ended it. Survivors and
events become dicts here, at the JSON edge, and nowhere else.
"""

from __future__ import annotations

import resource
import signal
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from mcp_tether.guard.report import ReportPipe
from mcp_tether.guard.result import signame
from mcp_tether.probe.scenarios import get as get_scenario
from mcp_tether.probe.spec import Spec
from mcp_tether.probe.verdict import Facts, Survivor, decide
from mcp_tether.proc import ProcessId

if TYPE_CHECKING:
    from mcp_tether.probe.record import (
        ScenarioRecord,
        SurvivorRecord,
        TetherShutdown,
        TimelineEvent,
        WindowRecord,
    )

__all__ = ["Event", "Exit", "Observation", "result", "cause", "death_signal", "guard_rung"]


@dataclass
class Event:
    """One event of the timeline: its monotonic instant, what, which process, details."""

    t: float
    what: str
    pid: int | None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Exit:
    """A process of the tree seen to exit: when, and its status if we reaped it."""

    ident: ProcessId
    t: float
    status: int | None


@dataclass
class Observation:
    """Everything one keeper saw of its scenario, as the result line needs it."""

    spec: Spec
    facts: Facts
    stderr: str  # the tail of the server's stderr
    status: int | None  # the server's exit status, as the scenario saw it
    server: ProcessId | None
    exits: list[Exit]  # of every process of the tree seen to exit
    cleanup_at: float  # when the keeper's clean-up began (inf: never)
    t0: float  # when the client was forked: the timeline's zero
    events: list[Event] = field(default_factory=list)
    at_window_end: list[Survivor] = field(default_factory=list)  # escalation: alive then
    warnings: list[str] = field(default_factory=list)
    startup: float | None = None  # spawn -> handshake answered, seconds
    handshake: str | None = None  # the method that was answered
    error_code: int | None = None  # the spawn's exit code (127, 126) when it failed
    client_cpu: float = 0.0  # seconds of CPU the probe's client used
    report: ReportPipe | None = None  # a guarded server: the guard's report (guard.report)
    shutdowns: list[TetherShutdown] = field(default_factory=list)  # Node tether() records
    # The status was a death by a signal (True), an exit code (False); None: not seen.
    signaled: bool | None = None

# A status of 128+N read as a death by signal N; any other status is an exit code.
_DEATHS = (signal.SIGHUP, signal.SIGINT, signal.SIGABRT, signal.SIGKILL, signal.SIGSEGV,
           signal.SIGPIPE, signal.SIGTERM)


def death_signal(status: int | None) -> str | None:
    """The signal's name when a status of 128+N reads as a death by signal N (the
    shell's convention, which wrappers such as npx and sh -c pass on); else None."""
    if status is None or status <= 128 or status - 128 not in _DEATHS:
        return None
    return signame(status - 128)


def cause(status: int | None, stderr: str) -> str:
    """What ended a process that lingered, as far as it can be seen from outside."""
    if status is None:
        return "exited (status not seen: not our child)"
    name = death_signal(status)
    if name is not None:
        if name == "SIGPIPE":
            return "SIGPIPE (EPIPE: it wrote to a closed stdout)"
        return f"killed by {name}"
    if "EPIPE" in stderr:
        return f"exit status {status} after EPIPE (a write to its closed stdout failed)"
    return f"exit status {status}"


def guard_rung(report: ReportPipe | None) -> str | None:
    """Which rung of our guard ended the server, from the guard's report line
    (`guard.report`), never from its human summary: "self", "sigterm", "sigkill",
    "none" (something outlived the guard's ladder), "unknown" (a report this probe cannot
    read: another version, garbage); None without a report (the guard was killed, or a
    launcher in front of it did not pass the descriptor on)."""
    if report is None:
        return None
    got = report.read()
    if got is None:
        return "unknown" if report.error else None
    if got.counts.get("survivors", len(got.survivors)):
        return "none"
    return got.ended_by


def _who(survivors: list[Survivor]) -> str:
    return ", ".join(
        s.cmdline if s.container else  # "container 5a74…: `sleep`"
        f"pid {s.pid} (ppid {s.ppid}{' = probe' if s.ppid_is_probe else ''}) {s.cmdline}"
        for s in survivors
    )


def described(s: Survivor) -> WindowRecord:
    """A survivor as it was described at its deadline (`killed_at_window` in the JSON)."""
    d: WindowRecord = {"pid": s.pid, "ppid": s.ppid, "ppid_is_probe": s.ppid_is_probe,
                       "cmdline": s.cmdline}
    if s.container is not None:
        d["container"] = s.container
    else:
        d["evidence"] = s.evidence
    return d


def result(o: Observation) -> ScenarioRecord:
    """The result line: the verdict (`verdict.decide`), the words that explain it, and
    the facts behind it, as the JSON object the runner parses."""
    f = o.facts
    spec = o.spec
    sc = get_scenario(spec.scenario)
    verdict, rung, exit_ms = decide(f)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    detail = _detail(o, verdict)
    # What our clean-up did to an idle or failed server says nothing about it.
    status = None if verdict in ("alive", "error") else _server_status(o)
    g_rung = _guard_rung(o, verdict)
    if spec.guarded and detail == "" and g_rung:
        detail = f"guarded: the guard ended it at rung {g_rung}"
    return {
        "scenario": spec.scenario,
        "host_style": spec.host_style,
        "level": sc.level,
        "verdict": verdict,
        "passed": sc.passes(verdict, spec.guarded),
        "exit_ms": exit_ms,
        "rung": rung,
        "exit_status": status,
        "signaled": None if status is None or status != o.status else o.signaled,
        "survivors": [_survivor(s, f.trigger, o.stderr) for s in f.survivors],
        "warnings": o.warnings,
        "detail": detail,
        "guarded": spec.guarded,
        "guard_rung": g_rung,
        "call_answered": f.call_answered,
        "window_s": spec.effective_window,
        "startup_ms": None if o.startup is None else round(o.startup * 1000, 1),
        "handshake": o.handshake,
        "error_code": o.error_code,
        "stderr_tail": o.stderr,
        "probe_cpu_ms": round((ru.ru_utime + ru.ru_stime + o.client_cpu) * 1000, 1),
        "trigger_at": f.trigger,
        "gone_at": f.gone_at,
        "t0": o.t0,
        "events": timeline(o),
        "killed_at_window": [described(s) for s in o.at_window_end],
        "tether": _tether_shutdowns(o),
    }


def _detail(o: Observation, verdict: str) -> str:
    """The words that explain the verdict: who was alive at the window's end, what the
    probe then did, what outlived that; else the observation's own error, if any."""
    f = o.facts
    spec = o.spec
    window = f"{spec.effective_window:g} s"
    if verdict in ("orphaned", "lingered"):
        return _leak_detail(o, window)
    if verdict == "early-exit":
        detail = f"server exited before the trigger (status {o.status})"
        if f.survivors:  # named, never removed silently; the clean-up ended them
            detail += (f"; it left running: {_who(f.survivors)} "
                       "(the probe's clean-up ended them)")
        return detail
    if verdict == "killed" and f.killed_by_probe is not None:
        return (f"did not exit within {window} of {spec.scenario.upper()}: "
                f"alive then: {_who(o.at_window_end)}; the probe SIGKILLed the server, "
                "as a host would; nothing outlived that")
    return f.error or ""


def _leak_detail(o: Observation, window: str) -> str:
    """An orphaned or lingered tree: who was alive after the window (and what the probe
    did then), how long each that lingered took and what ended it, who is still alive."""
    f = o.facts
    spec = o.spec
    gone = [s for s in f.survivors if s.gone_at is not None]
    alive = [s for s in f.survivors if s.gone_at is None]
    parts = []
    if o.at_window_end:
        parts.append(f"alive {window} after {spec.scenario.upper()}: "
                     f"{_who(o.at_window_end)}; the probe then SIGKILLed the server, "
                     "as a host would")
        parts.append(f"outlived that: {_who(f.survivors)}")
    else:
        parts.append(f"alive {window} after the trigger: {_who(f.survivors)}")
    for s in gone:
        assert f.trigger is not None and s.gone_at is not None
        ms = (s.gone_at - f.trigger) * 1000
        parts.append(f"pid {s.pid} lingered: gone {ms:.0f} ms after the trigger, "
                     + cause(s.status, o.stderr))
    if alive and gone:
        parts.append(f"still alive {spec.horizon_s:g} s after the window")
    elif alive:
        parts.append(f"still alive {spec.horizon_s:g} s after the window (orphaned)")
    return "; ".join(parts)


def _server_status(o: Observation) -> int | None:
    """The server's exit status: as the scenario saw it, or from its exit seen before
    our clean-up began (only that one is the server's own doing)."""
    if o.server is None or o.status is not None:
        return o.status
    status = None
    for e in o.exits:
        if e.ident == o.server and e.t < o.cleanup_at:
            status = e.status
    return status


def _guard_rung(o: Observation, verdict: str) -> str | None:
    """A guarded server's: which rung of the guard ended it (`guard_rung`); a report the
    probe could not read is named in the warnings."""
    g_rung = guard_rung(o.report) if o.spec.guarded and verdict != "error" else None
    if g_rung is not None and o.report is not None and o.report.error:
        o.warnings.append(o.report.error)
    return g_rung


def _survivor(s: Survivor, trigger: float | None, stderr: str) -> SurvivorRecord:
    """A survivor as the result line lists it: how long it lingered and what ended it
    (None for one still alive)."""
    return {"pid": s.pid, "ppid": s.ppid, "cmdline": s.cmdline,
            "evidence": s.evidence, "container": s.container,
            "lingered_ms": None if s.gone_at is None or trigger is None
            else round((s.gone_at - trigger) * 1000, 1),
            "cause": None if s.gone_at is None else cause(s.status, stderr)}


def _tether_shutdowns(o: Observation) -> list[TetherShutdown]:
    """Shutdowns that ran through a Node server's tether() (probe.shutdowns) in answer to
    the trigger: by processes of this tree that exited within the window. One set off
    later (by the window's SIGKILL of a launcher, or our clean-up) says nothing about it."""
    if not o.shutdowns:
        return []
    ends = [e.t for e in o.events if e.what == "window-end"]
    cutoff = min([o.cleanup_at, *ends[:1],
                  *([o.facts.killed_by_probe] if o.facts.killed_by_probe is not None else [])])
    pids = {e.ident.pid for e in o.exits if e.t < cutoff}
    return [x for x in o.shutdowns if x["pid"] in pids]


def timeline(o: Observation) -> list[TimelineEvent]:
    """The keeper's events plus each process's exit, in ms since the client was forked.

    Only what was alive at the window's end was ended by the clean-up; any other exit
    seen after the clean-up began was noticed late (a loaded keeper), not caused by it.
    """
    evs = list(o.events)
    alive = {s.pid for s in o.facts.survivors + o.at_window_end}
    for e in o.exits:
        extra: dict[str, Any] = {"status": e.status}
        if e.t >= o.cleanup_at:
            pid = e.ident.pid
            extra["by" if pid in alive else "noticed"] = (
                "probe-cleanup" if pid in alive else "late")
        evs.append(Event(e.t, "exit", e.ident.pid, extra))
    evs.sort(key=lambda e: e.t)
    # The event's own details first, as the keeper noted them (`TimelineEvent`'s keys).
    return [cast("TimelineEvent", dict(e.extra, t_ms=round((e.t - o.t0) * 1000, 1),
                                       what=e.what, pid=e.pid))
            for e in evs]
