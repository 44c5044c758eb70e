"""What a host check scenario's keeper saw (`State`), made its result row: the host check's
side of what `probe/outcome.py` is for the probe.

The keeper watches and acts; this module judges what it saw and writes it down:
`preempted` instead of a verdict when the host was already ending the recorder before
the trigger, what else the host left and what stood between it and its server
(`named_left`), the timeline (`timeline.build`) and who got which signal
(`who.processes`).

Guarantees:
- Nothing here starts, waits for or signals a process: it reads the keeper's `State`,
  the events files the recorders wrote (`recorded_events`) and what the keeper hands
  over.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, cast

from mcp_tether.hostcheck.record import (
    HostCheckRow,
    Layer,
    OtherLeft,
    Outcome,
    RecordedEvent,
)
from mcp_tether.hostcheck.scenarios import PASSING, VERDICT_WORDS, HostScenario
from mcp_tether.hostcheck.spec import CheckSpec
from mcp_tether.hostcheck.timeline import build
from mcp_tether.hostcheck.who import SIGNS, processes
from mcp_tether.proc.identity import ProcessId

__all__ = ["State", "recorded_events", "preempted", "named_left", "result_row"]


@dataclass
class State:
    """What the keeper saw of the host and its recorders, as it saw it."""

    t0: float = 0.0
    host: ProcessId | None = None
    host_exit: float | None = None
    host_status: int | None = None
    action_at: float | None = None
    action_note: str = ""
    triggered: bool = False  # the scenario's action reached a live host
    initialized_at: float | None = None
    hold_at: float | None = None  # the recorder began holding its answer
    hold_point: str | None = None
    released_at: float | None = None
    first_sign: dict[str, Any] | None = None  # the first sign of an ending, as recorded
    host_family: tuple[int, int] | None = None  # the host's (pgid, sid) before the trigger
    recorders: dict[int, ProcessId] = field(default_factory=dict)  # pid -> ident
    roles: dict[int, str] = field(default_factory=dict)
    statuses: dict[int, int] = field(default_factory=dict)  # the keeper's (the core's)
    # The keeper's own events (t, what, pid and its details): the timeline's marks.
    marks: list[dict[str, Any]] = field(default_factory=list)
    cleanup_at: float = float("inf")  # exits after this instant are the clean-up's
    tail: bytes = b""
    # The processes between the host and the server it started (a hidden `sh -c`, a
    # relaunched CLI), host side first, and every process of the host's tree: both read
    # while the handshake holds them (`read_tree`).
    layers: list[Layer] = field(default_factory=list)
    host_tree: set[int] = field(default_factory=set)


def recorded_events(events_dir: str) -> list[RecordedEvent]:
    """Every event the recorders wrote to their files (`*.jsonl`), oldest first."""
    out: list[RecordedEvent] = []
    try:
        names = sorted(os.listdir(events_dir))
    except OSError:
        return out
    for name in names:
        if not name.endswith(".jsonl"):
            continue
        with open(os.path.join(events_dir, name), "rb") as fh:
            for line in fh:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
    return sorted(out, key=lambda e: e.get("t", 0.0))


def preempted(outcome: Outcome, s: State, events_dir: str) -> Outcome:
    """`preempted` instead of a verdict when the recorder saw the host begin ending it
    before the trigger (from the events files: the FIFO may lag)."""
    acted = s.action_at
    if outcome["verdict"] in ("error", "skipped") or not s.triggered or acted is None:
        return outcome
    signs = [e for e in recorded_events(events_dir)
             if e.get("what") in SIGNS and float(e.get("t", 0.0)) < acted]
    if not signs:
        return outcome
    first = signs[0]
    what = first.get("signal") or first.get("what")
    ms = round((float(first["t"]) - s.t0) * 1000, 1)
    return {**outcome, "verdict": "preempted", "after": outcome["verdict"],
            "detail": f"{VERDICT_WORDS['preempted']} (the {first.get('role')} saw {what} "
            f"at {ms:g} ms, the trigger came at {(acted - s.t0) * 1000:.1f} ms; "
            f"what was left after: {outcome['verdict']})"}


def named_left(s: State, others: list[OtherLeft], verdict: str) -> str:
    """What the detail adds to a verdict: what every other process of the host's tree did
    (`exit_ms`: it exited by itself that long after the host; None or absent: still
    running, so left, or beside a host that lives on: `host_lives`), the host's own and
    its layers said so, and every layer between the host and its server."""
    out = []
    if others and verdict not in ("error", "skipped"):
        layers = {x["pid"] for x in s.layers}

        def name(o: OtherLeft) -> str:
            return (f"pid {o['pid']} ({o['cmdline'][:80]})"
                    + (", a layer the host put before its server" if o["pid"] in layers else
                       ", the host's own" if o["pid"] in s.host_tree else ""))

        gone = [o for o in others if o.get("exit_ms") is not None]
        beside = [o for o in others if o.get("exit_ms") is None and o.get("host_lives")]
        left = [o for o in others if o.get("exit_ms") is None and not o.get("host_lives")]
        if gone:
            out.append("exited by itself after the host: " + ", ".join(
                f"{name(o)}, {o['exit_ms']:g} ms after the host" for o in gone))
        if beside:
            out.append("still running beside the live host: "
                       + ", ".join(name(o) for o in beside))
        if left:
            out.append("also left: " + ", ".join(name(o) for o in left))
    if s.layers:
        out.append("between the host and its server: " + " > ".join(
            f"pid {x['pid']} ({x['cmdline'][:80]})" for x in s.layers))
    return "".join(f"; {x}" for x in out)


def _in_row(e: RecordedEvent, t_ms: float | None) -> RecordedEvent:
    """A recorder's line as a row lists it: its instant `t` as `t_ms`, without its argv
    (the row's `host_argv` and the start event say what it ran)."""
    return cast("RecordedEvent", {**{k: v for k, v in e.items() if k not in ("t", "argv")},
                                  "t_ms": t_ms})


def result_row(outcome: Outcome, s: State, sc: HostScenario, spec: CheckSpec, *,
               host_exit: float | None, host_config: str | None, others: list[OtherLeft],
               killed: list[int], exited: dict[ProcessId, float],
               recorded: list[RecordedEvent], tail: bytes) -> HostCheckRow:
    """The scenario's result row: `outcome` (the keeper's verdict, detail and the recorder
    pids `left`), `host_exit` (the host's exit instant, as the keeper last saw it),
    `others` (the other processes left), `killed` (the recorders the clean-up killed),
    `exited` (every exit instant seen), `recorded` (the events files), `tail` (the host's
    last output)."""
    left = outcome.pop("left", [])
    by_cleanup = host_exit is not None and host_exit >= s.cleanup_at
    verdict = outcome["verdict"]

    def at(t: float) -> float:
        return round((t - s.t0) * 1000, 1)

    def ms(t: float | None) -> float | None:
        return None if t is None else at(t)

    row: HostCheckRow = {
        "scenario": sc.name,
        "title": sc.title,
        "verdict": verdict,
        "after": outcome.get("after"),
        "hold": spec.hold,
        "hold_point": s.hold_point,
        "held_ms": ms(s.hold_at),
        "released_ms": ms(s.released_at),
        "wrapper": spec.wrapper,
        "recorder_signals": spec.signals,
        "host_pgid": s.host_family[0] if s.host_family else None,
        "host_sid": s.host_family[1] if s.host_family else None,
        "passed": verdict in PASSING,
        "detail": (outcome["detail"] + (f" ({s.action_note})" if s.action_note
                                        and s.action_note not in outcome["detail"] else "")
                   + named_left(s, others, verdict)),
        "spec": sc.spec,
        "host_argv": spec.argv,
        "host_config": host_config,
        "after_edit": spec.after_edit,  # reconnect: the steps typed after the edit
        "host_pid": s.host.pid if s.host else None,
        "host_exit_ms": ms(host_exit),
        "host_status": s.host_status,
        "host_ended_by_cleanup": by_cleanup,
        "initialized_ms": ms(s.initialized_at),
        "action": sc.action,
        "action_ms": ms(s.action_at),
        "left": [{"pid": p, "role": s.roles.get(p, "server")} for p in left],
        "others_left": [{**o, "hosts_own": o["pid"] in s.host_tree} for o in others],
        "layers": s.layers,
        "also": named_left(s, others, verdict).removeprefix("; "),  # the detail's last words
        "ps": outcome.get("ps"),  # reconnect: `ps` on the copies still running
        "calls": outcome.get("calls"),  # the tool-calling scenarios' facts (`calls.py`)
        "killed_by_cleanup": killed,
        "recorded": [_in_row(e, ms(e.get("t"))) for e in recorded],
        "events": build(s, recorded, exited, killed, at),
        "host_output_tail": tail.decode("utf-8", "replace"),
    }
    row["processes"] = processes(row)
    return row
