"""The keeper's result line: the verdict and the words that explain it.

From what the keeper observed (facts, exit status, stderr, the runner's spec) to the
JSON object the runner parses into a `ScenarioResult`. Verdicts come from
`verdict.decide`; here only the detail is worded: who was alive at the window's end,
what the probe then did, what outlived that (issue 9 item 4), how long a `lingered`
process took and what ended it, and, for a guarded server, which rung of the guard
ended it.
"""

from __future__ import annotations

import resource
from typing import TYPE_CHECKING

from mcp_tether.probe.verdict import decide

if TYPE_CHECKING:
    from typing import Any

    from mcp_tether.guard.report import ReportPipe
    from mcp_tether.probe.keeper import Keeper

SIGNAL_NAMES = {1: "SIGHUP", 2: "SIGINT", 6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV",
                13: "SIGPIPE", 15: "SIGTERM"}


def cause(status: int | None, stderr: str) -> str:
    """What ended a process that lingered, as far as it can be seen from outside."""
    if status is None:
        return "exited (status not seen: not our child)"
    if status > 128 and status - 128 in SIGNAL_NAMES:
        name = SIGNAL_NAMES[status - 128]
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


def _who(survivors: list[dict[str, Any]]) -> str:
    return ", ".join(
        s["cmdline"] if s.get("container") else  # "container 5a74…: `sleep`"
        f"pid {s['pid']} (ppid {s['ppid']}{' = probe' if s.get('ppid_is_probe') else ''})"
        f" {s['cmdline']}"
        for s in survivors
    )


def result(k: Keeper, interrupted: bool) -> dict[str, Any]:
    f = k.facts
    spec = k.spec
    if interrupted:
        f.error = k.stop_why
    verdict, rung, exit_ms = decide(f)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    stderr = k.stderr_tail.decode(errors="replace")
    detail = f.error or ""
    window = f"{k.window:g} s"
    if verdict in ("orphaned", "lingered"):
        gone = [s for s in f.survivors if s.get("gone_at") is not None]
        alive = [s for s in f.survivors if s.get("gone_at") is None]
        parts = []
        if k.at_window_end:
            parts.append(f"alive {window} after {k.scenario.upper()}: {_who(k.at_window_end)};"
                         " the probe then SIGKILLed the server, as a host would")
            parts.append(f"outlived that: {_who(f.survivors)}")
        else:
            parts.append(f"alive {window} after the trigger: {_who(f.survivors)}")
        for s in gone:
            assert f.trigger is not None
            ms = (s["gone_at"] - f.trigger) * 1000
            parts.append(f"pid {s['pid']} lingered: gone {ms:.0f} ms after the trigger, "
                         + cause(s.get("status"), stderr))
        if alive and gone:
            parts.append(f"still alive {spec.horizon_s:g} s after the window")
        elif alive:
            parts.append(f"still alive {spec.horizon_s:g} s after the window (orphaned)")
        detail = "; ".join(parts)
    elif verdict == "early-exit":
        detail = f"server exited before the trigger (status {k.status})"
        if f.survivors:  # named, never removed silently; the clean-up ended them
            detail += (f"; it left running: {_who(f.survivors)} "
                       "(the probe's clean-up ended them)")
    elif verdict == "killed" and f.killed_by_probe is not None:
        detail = (f"did not exit within {window} of {k.scenario.upper()}: "
                  f"alive then: {_who(k.at_window_end)}; the probe SIGKILLed the server, "
                  "as a host would; nothing outlived that")
    if k.server is not None and k.status is None:
        # Only an exit seen before our clean-up is the server's own doing.
        exited = k.waiter.exited.get(k.server)
        if exited is not None and exited < k.cleanup_at:
            k.status = k.reaped.get(k.server.pid)
    status = None if verdict in ("alive", "error") else k.status
    # ...what our clean-up did to an idle or failed server says nothing about it.
    g_rung = guard_rung(k.report) if spec.guarded and verdict != "error" else None
    if g_rung is not None and k.report is not None and k.report.error:
        k.warnings.append(k.report.error)
    if spec.guarded and detail == "" and g_rung:
        detail = f"guarded: the guard ended it at rung {g_rung}"
    return {
        "scenario": k.scenario,
        "host_style": spec.host_style,
        "level": k.sc.level,
        "verdict": verdict,
        "passed": k.sc.passes(verdict, spec.guarded),
        "exit_ms": exit_ms,
        "rung": rung,
        "exit_status": status,
        "survivors": [
            {"pid": s["pid"], "ppid": s["ppid"], "cmdline": s["cmdline"],
             "evidence": s.get("evidence"), "container": s.get("container"),
             "lingered_ms": None if s.get("gone_at") is None or f.trigger is None
             else round((s["gone_at"] - f.trigger) * 1000, 1),
             "cause": None if s.get("gone_at") is None else cause(s.get("status"), stderr)}
            for s in f.survivors
        ],
        "warnings": k.warnings,
        "detail": detail,
        "guarded": spec.guarded,
        "guard_rung": g_rung,
        "call_answered": f.call_answered,
        "window_s": k.window,
        "startup_ms": None if k.startup is None else round(k.startup * 1000, 1),
        "handshake": k.handshake,
        "error_code": k.error_code,
        "stderr_tail": stderr,
        "probe_cpu_ms": round((ru.ru_utime + ru.ru_stime + k.client_cpu) * 1000, 1),
        "trigger_at": f.trigger,
        "gone_at": f.gone_at,
        "t0": k.t0,
        "events": timeline(k),
        "killed_at_window": k.at_window_end,
    }


def timeline(k: Keeper) -> list[dict[str, Any]]:
    """The keeper's events plus each process's exit, in ms since the client was forked.

    Only what was alive at the window's end was ended by the clean-up; any other exit
    seen after the clean-up began was noticed late (a loaded keeper), not caused by it.
    """
    evs = list(k.events)
    alive = {d["pid"] for d in k.facts.survivors + k.at_window_end}
    for p in k.seen:
        t = k.waiter.exited.get(p)
        if t is not None:
            extra: dict[str, Any] = {"status": k.reaped.get(p.pid)}
            if t >= k.cleanup_at:
                extra["by" if p.pid in alive else "noticed"] = (
                    "probe-cleanup" if p.pid in alive else "late")
            evs.append((t, "exit", p.pid, extra))
    evs.sort(key=lambda e: e[0])
    return [dict(e[3], t_ms=round((e[0] - k.t0) * 1000, 1), what=e[1], pid=e[2]) for e in evs]
