"""Each scenario's timeline as text (`probe --detail`): the events the HTML draws, in words.

    print_timelines(results)        # results: `probe --json`'s result objects

One block per scenario: a heading with its verdict and why, then one line per event in
time order, in ms since the probe's client was forked (the JSON's `t_ms`, unrounded
further): each process's spawn (client, server, the server's children, the client's
helper), the handshake answered, the trigger (EOF, client exit or SIGKILL, SIGTERM,
SIGINT sent), the probe's own signals, every exit with its cause (status, signal, ended
by the probe's clean-up, noticed late), and the window and horizon. Pure rendering: the
same numbers as `--json` and `--html`, nothing recomputed.
"""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING, Any

from mcp_tether.escape import terminal
from mcp_tether.probe.describe import short
from mcp_tether.probe.diagnose import explain_line
from mcp_tether.probe.outcome import death_signal

if TYPE_CHECKING:
    from mcp_tether.probe.record import ScenarioRecord

__all__ = ["timeline_lines", "print_timelines"]

# what -> the words after the process name ({} = nothing more to say)
# how EOF came, per scenario
_EOF_HOW = {
    "close": " (the client closed it)", "call-in-flight": " (the client closed it)",
    "half-close": " (the client half-closed the socket)",
    "devnull": " (it was started with stdin at /dev/null)",
}
_SAY = {
    "handshake": "answered the handshake",
    "eof": "EOF on its stdin",
    "client-exit": "the client exited (its end of the stdio closed with it)",
    "client-killed": "the client was SIGKILLed",
    "sigterm": "SIGTERM sent to it",
    "sigint": "SIGINT sent to it",
    "sigkill": "SIGKILL sent to it",
}


def _status(status: int | None) -> str:
    if status is None:
        return ""
    name = death_signal(status)  # 128+N shown with the name of signal N
    return f" (status {status}: {name})" if name else f" (status {status})"


def timeline_lines(r: ScenarioRecord) -> list[str]:
    """The lines of one scenario's timeline (without its heading)."""
    events = list(r.get("events") or [])
    names: dict[int, str] = {}
    for e in events:
        pid = e.get("pid")
        if pid is None or pid in names or e["what"] not in ("spawn", "seen"):
            continue
        role = e.get("role")
        names[pid] = (f"{role} {pid}" if role in ("client", "server")
                      else "client's helper " + str(pid) if role == "helper"
                      else f"child {pid}")
    server = next((pid for pid, n in names.items() if n.startswith("server")), None)
    marks = {e["what"]: float(e["t_ms"]) for e in events if e.get("pid") is None}
    # When every process of the server's tree had exited (None: some never did).
    exits = {e.get("pid"): float(e["t_ms"]) for e in events if e["what"] == "exit"}
    tree = [pid for pid, n in names.items() if not n.startswith("client")]
    gone = max(exits[p] for p in tree) if tree and all(p in exits for p in tree) else None
    out: list[str] = []
    said: set[tuple[str, Any, float]] = set()
    for e in events:
        what, pid, t = e["what"], e.get("pid"), float(e["t_ms"])
        if (what, pid, t) in said:
            continue  # one fact noted twice (the client and the keeper both saw it)
        said.add((what, pid, t))
        who = names.get(pid, f"pid {pid}") if pid is not None else ""
        if what == "spawn" or what == "seen":
            text = "spawned" if what == "spawn" else "seen"
            if e.get("role") not in ("client", "helper"):
                text += f": {short(e.get('cmd') or '', 60)}"
            ppid = e.get("ppid")
            if what == "seen" and ppid is not None:
                text += f" (parent {names.get(ppid, ppid)})"
        elif what == "exit":
            status = e.get("status")
            if status is None and pid == server:
                status = r.get("exit_status")
            text = "exited" + _status(status)
            if e.get("by") == "probe-cleanup":
                text = "still alive: ended by the probe's clean-up (SIGKILL)"
            elif e.get("noticed"):
                text += ", noticed late (it was gone by the window's end)"
        elif what in ("window-start", "horizon-start"):
            name = what.split("-")[0]
            end = marks.get(f"{name}-end")
            span = f" until {end:.1f} ms ({(end - t) / 1000:g} s)" if end is not None else ""
            text = (f"{name}: the tree must be gone{span}" if name == "window"
                    else f"horizon: survivors watched{span}")
            if gone is not None and gone <= t:
                text += "; the tree was already gone"
        elif what in ("window-end", "horizon-end"):
            continue  # said with its start
        else:
            text = _SAY.get(what, what)
            if e.get("missed"):  # a launcher already gone: the host's signal found no one
                text = f"{what.upper()} meant for it: already gone, it reached no one"
            if what == "eof":
                text += _EOF_HOW.get(str(r.get("scenario")), "")
        out.append(f"  {t:>9.1f} ms  {who:<22} {text}" if who else f"  {t:>9.1f} ms  {text}")
    horizon_end = marks.get("horizon-end")
    for s in r.get("survivors") or []:
        name = names.get(s["pid"], f"pid {s['pid']}")
        who = f"{name} ({short(s.get('cmdline') or '', 40)})"
        if s.get("lingered_ms") is not None:
            cause = f", {s['cause']}" if s.get("cause") else ""
            out.append(f"  survivor {who} lingered: gone {s['lingered_ms']:.0f} ms after "
                       f"the trigger{cause}")
        elif horizon_end is not None:
            out.append(f"  survivor {who} still alive at the horizon's end "
                       f"({horizon_end:.1f} ms): orphaned; the probe's clean-up ended it")
    return out


def print_timelines(results: list[ScenarioRecord], out: IO[str] | None = None) -> None:
    """Every scenario's heading (verdict, why) and timeline, after the table."""
    out = out or sys.stdout
    print("timelines (ms since the probe's client was forked):", file=out)
    for r in results:
        why = explain_line(r) or ("" if r.get("passed") else str(r.get("detail") or ""))
        label = f"{r['label']} " if r.get("label") else ""
        head = f"{label}{r.get('scenario', '')} ({r.get('host_style', '')}): {r.get('verdict')}"
        print(terminal(head + (f" — {why}" if why else "")), file=out)
        lines = timeline_lines(r)
        for line in lines or ["  (no events: the scenario did not run)"]:
            print(terminal(line), file=out)
