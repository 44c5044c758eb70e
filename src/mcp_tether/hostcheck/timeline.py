"""A scenario's events in the probe's timeline form (`events`: what, pid, t_ms, ...).

The probe's HTML renderer (`report.html`) draws them: the host is the "client" lane, the
recorder the "server" lane, its grandchild a child lane. Pure data shaping.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from mcp_tether.hostcheck.record import RecordedEvent
    from mcp_tether.probe.record import TimelineEvent
    from mcp_tether.proc.identity import ProcessId

__all__ = ["build", "WHAT", "Seen"]

# The recorder's event -> the timeline's `what` (None: not drawn)
WHAT = {
    "initialized": "handshake",
    "stdin-eof": "eof",
    "stdin-hangup": "eof",
    "stdin-error": "eof",
    "stdout-closed": "stdout-closed",
    "parent-changed": "parent-changed",
    "second-copy": "second-copy",
}


class Seen(Protocol):
    """What `build` reads of what the keeper saw (`outcome.State`, which imports this
    module: so a protocol, not that class)."""

    marks: list[dict[str, Any]]  # the keeper's own events: `t`, `what`, ...
    host: ProcessId | None
    host_status: int | None
    statuses: dict[int, int]  # pid -> the status the keeper reaped
    cleanup_at: float  # exits after this instant are the clean-up's


def build(state: Seen, recorded: list[RecordedEvent], exited: dict[ProcessId, float],
          killed: list[int], ms: Callable[[float], float]) -> list[TimelineEvent]:
    """The keeper's marks, the recorders' events and every exit, as timeline events in
    time order (`ms`: a monotonic instant as ms since the host was started)."""
    out: list[TimelineEvent] = []
    for m in state.marks:
        mark: dict[str, Any] = {**{k: v for k, v in m.items() if k != "t"}, "t_ms": ms(m["t"])}
        out.append(cast("TimelineEvent", mark))
    for e in recorded:
        what, pid = e.get("what"), e.get("pid")
        if what == "start":
            role = e.get("role")
            cmd = "recorder" if role == "server" else "recorder (grandchild)"
            seen: dict[str, Any] = {"what": "spawn" if role == "server" else "seen",
                                    "pid": pid, "cmd": cmd, "ppid": e.get("ppid")}
            if role == "server":
                seen["role"] = "server"
            out.append(cast("TimelineEvent", {**seen, "t_ms": ms(e["t"])}))
        elif what == "signal":
            out.append({"what": str(e.get("signal", "")).lower(), "pid": pid,
                        "t_ms": ms(e["t"]), "received": True})
        elif what in WHAT:
            out.append({"what": WHAT[what], "pid": pid, "t_ms": ms(e["t"]),
                        "recorded": what})
    host = state.host
    for ident, t in exited.items():
        ev: TimelineEvent = {"what": "exit", "pid": ident.pid, "t_ms": ms(t),
              "status": state.statuses.get(ident.pid)}
        if ident.pid in killed or t >= state.cleanup_at:
            ev["by"] = "hostcheck-cleanup"
        if host is not None and ident == host and state.host_status is not None:
            ev["status"] = state.host_status
        out.append(ev)
    return sorted(out, key=lambda e: (e["t_ms"] if e["t_ms"] is not None else 0.0))
