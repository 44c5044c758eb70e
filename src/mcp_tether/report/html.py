"""One self-contained HTML page of probe timelines: inline SVG and CSS, no network.

    write_html("probe.html", [(title, payload)])   # payload: `probe --json`'s object

Per scenario: a lane per process of the tree (client, server, wrapper children,
helpers) drawn from the result's `events` (ms since the client was forked), marks for
spawn, handshake, trigger, EOF, SIGTERM/SIGINT/SIGKILL and each exit, the window (and a
horizon, when the result has one) shaded, the verdict's colour, and the diagnosis beside
it. Every mark carries `data-what`, `data-pid` and `data-t-ms` with the JSON's own
values, so a test can check the picture against the numbers. Pure rendering.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_tether.errors import UsageError
from mcp_tether.escape import html_text as escape
from mcp_tether.probe.diagnose import explain_line, summary
from mcp_tether.report.fixes import GUARD_LEGEND, Fixes, number_fixes
from mcp_tether.report.legend import legend

if TYPE_CHECKING:
    from mcp_tether.probe.record import ScenarioRecord, TimelineEvent
    from mcp_tether.report.picture import Section

__all__ = ["render_html", "write_html", "VERDICT_COLOUR"]

VERDICT_COLOUR = {
    "exited": "#2e7d32", "alive": "#2e7d32", "terminated": "#e69500", "killed": "#c62828",
    "orphaned": "#8e0000", "lingered": "#d84315", "early-exit": "#6a1b9a",
    "error": "#6a1b9a", "skipped": "#78909c", "disabled": "#78909c",
    # the host check's verdicts (hostcheck/scenarios.py)
    "clean": "#2e7d32", "host-stayed": "#2e7d32", "server-left": "#8e0000",
    "wrapper-child-left": "#d84315", "abandoned": "#8e0000",
}
# An exit caused by the tool's own clean-up (the probe's, the host check's): drawn as a cross.
CLEANUP_BY = ("probe-cleanup", "hostcheck-cleanup")
# what -> (shape, colour, short label drawn above the mark)
MARKS = {
    "spawn": ("dot", "#37474f", ""),
    "seen": ("ring", "#37474f", ""),
    "handshake": ("diamond", "#2e7d32", "init"),
    "eof": ("tri", "#1565c0", "EOF"),
    "client-exit": ("tri", "#1565c0", "exit"),
    "client-killed": ("tri", "#000000", "KILL"),
    "sigterm": ("square", "#e69500", "TERM"),
    "sigint": ("square", "#8e24aa", "INT"),
    "sigkill": ("square", "#c62828", "KILL"),
    "exit": ("bar", "#2e7d32", ""),
}
PLOT_X, PLOT_W, LANE_H, TOP = 170, 600, 30, 22
SPAN_LABEL_H = 12  # the row under the lanes where "window" and "horizon" are written

CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:18px;color:#222;
background:#fafafa}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 6px}
.sum{color:#444;margin:0 0 8px}ul.sum{font-size:13px;padding-left:20px}
.legend{font-size:12px;color:#444;margin:6px 0 12px}
.legend svg{vertical-align:middle}
.card{display:grid;grid-template-columns:790px 1fr;gap:14px;background:#fff;
border:1px solid #ddd;border-left:6px solid var(--v);border-radius:4px;margin:6px 0;
padding:6px 10px}
.head{font-weight:600}.badge{display:inline-block;padding:0 7px;border-radius:9px;
color:#fff;background:var(--v);font-size:12px;margin-left:6px}
.why{font-size:13px;margin-top:3px}.fix{font-size:12px;margin-top:3px}
ul.fixes{font-size:13px;padding-left:20px;max-width:1100px}ul.fixes li{margin:4px 0}
.diag{font-size:12px;color:#555;margin-top:3px}
details{font-size:12px;color:#333;margin-top:3px}summary{cursor:pointer;color:#1565c0}
svg text{font-size:11px;fill:#333}svg .lbl{font-size:9px;font-weight:600}
code{font-size:11px;background:#f1f1f1;padding:1px 3px;border-radius:3px}
"""


def _shape(kind: str, x: float, y: float, colour: str) -> str:
    if kind == "dot":
        return f'<circle cx="{x:.1f}" cy="{y}" r="4" fill="{colour}"/>'
    if kind == "ring":
        return f'<circle cx="{x:.1f}" cy="{y}" r="4" fill="#fff" stroke="{colour}"/>'
    if kind == "diamond":
        return (f'<path d="M{x:.1f} {y - 6}l5 6l-5 6l-5-6z" fill="{colour}"/>')
    if kind == "tri":
        return f'<path d="M{x - 5:.1f} {y - 7}h10l-5 9z" fill="{colour}"/>'
    if kind == "square":
        return f'<rect x="{x - 4:.1f}" y="{y - 4}" width="8" height="8" fill="{colour}"/>'
    if kind == "cross":
        return (f'<path d="M{x - 5:.1f} {y - 5}l10 10m0-10l-10 10" stroke="{colour}" '
                f'stroke-width="2.5"/>')
    return f'<rect x="{x - 1.5:.1f}" y="{y - 8}" width="3" height="16" fill="{colour}"/>'


def _lanes(events: list[TimelineEvent]) -> list[dict[str, Any]]:
    """One lane per pid, in order: client, server, then by first appearance."""
    lanes: dict[int, dict[str, Any]] = {}
    for e in events:
        pid = e.get("pid")
        if pid is None:
            continue
        lane = lanes.setdefault(pid, {"pid": pid, "start": None, "end": None, "role": None,
                                      "cmd": "", "by": None, "ppid": None})
        if e["what"] in ("spawn", "seen") and lane["start"] is None:
            lane["start"] = e["t_ms"]
            lane["role"] = e.get("role")
            lane["cmd"] = e.get("cmd") or ""
            lane["ppid"] = e.get("ppid")
        elif e["what"] == "exit":
            lane["end"], lane["by"] = e["t_ms"], e.get("by")
    # Tree order: client, helper, then the server and its descendants depth first.
    start = {pid: (ln["start"] if ln["start"] is not None else 0.0) for pid, ln in lanes.items()}
    kids: dict[int | None, list[int]] = {}
    for pid, ln in lanes.items():
        kids.setdefault(ln["ppid"], []).append(pid)
    out = [ln for ln in lanes.values() if ln["role"] in ("client", "helper")]
    server = next((ln for ln in lanes.values() if ln["role"] == "server"), None)

    def walk(pid: int, depth: int) -> None:
        lanes[pid]["depth"] = depth
        out.append(lanes[pid])
        for kid in sorted(kids.get(pid, []), key=start.__getitem__):
            if kid not in [ln["pid"] for ln in out]:
                walk(kid, depth + 1)

    if server is not None:
        walk(server["pid"], 0)
    out += sorted((ln for ln in lanes.values() if ln not in out), key=lambda ln: start[ln["pid"]])
    return out


def _name(lane: dict[str, Any]) -> str:
    words = [w.rsplit("/", 1)[-1] if "/" in w and not w.startswith("-") else w
             for w in lane["cmd"].split()]
    text = " ".join(words) or lane["role"] or "process"
    if lane["role"] == "client":
        text = "client"
    elif lane["role"] == "helper":
        text = "client's helper"
    elif lane.get("depth"):
        text = "\u00a0\u00a0\u00a0" * (lane["depth"] - 1) + "└ " + text  # SVG collapses spaces
    return (text if len(text) <= 19 else text[:18] + "…") + f" {lane['pid']}"


def _timeline(r: ScenarioRecord, span: float) -> str:
    """A scenario's timeline as SVG: the window's span, the time axis, a lane per
    process, and a mark per event."""
    events = list(r.get("events") or [])
    lanes = _lanes(events)
    scale = PLOT_W / span if span > 0 else 1.0

    def X(t: float) -> float:
        return PLOT_X + max(0.0, t) * scale

    marks = {e["what"]: e["t_ms"] for e in events if e.get("pid") is None}
    # The span labels ("window", "horizon") get a row of their own under the lanes: in
    # the last lane the handshake's "init" is written below its mark, and on exit/crash
    # cards the window opens right after the handshake: on one row the two overlap.
    spans = any(f"{n}-start" in marks for n in ("window", "horizon"))
    height = TOP + LANE_H * max(1, len(lanes)) + 4 + (SPAN_LABEL_H if spans else 0)
    return "".join([f'<svg xmlns="http://www.w3.org/2000/svg" width="{PLOT_X + PLOT_W + 20}" '
                    f'height="{height}" role="img">',
                    *_spans(X, marks, height), *_axis(X, span, height),
                    *_lane_bars(r, lanes, events, X, marks, span),
                    *_event_marks(lanes, events, X), "</svg>"])


def _spans(X: Callable[[float], float], marks: dict[str, float], height: int) -> list[str]:
    """The shaded spans: the window (and the horizon, when the result carries one)."""
    out = []
    for name, fill in (("horizon", "#fde3d3"), ("window", "#fff1b8")):
        a, b = marks.get(f"{name}-start"), marks.get(f"{name}-end")
        if a is not None and b is not None and X(a) < PLOT_X + PLOT_W:
            width = max(1.0, min(X(b), PLOT_X + PLOT_W) - X(a))  # clipped at the edge
            out.append(f'<rect x="{X(a):.1f}" y="{TOP - 6}" width="{width:.1f}" '
                       f'height="{height - TOP + 4}" fill="{fill}" data-what="{name}-start" '
                       f'data-t-ms="{a}" data-end-ms="{b}"/>')
            out.append(f'<text x="{X(a) + width - 3:.1f}" y="{height - 3}" text-anchor="end" '
                       f'class="lbl" fill="#9a7b00">{name}</text>')
    return out


def _axis(X: Callable[[float], float], span: float, height: int) -> list[str]:
    """The time axis: a tick per second (per 5 s past 12 s)."""
    out = []
    step = 1000 if span <= 12000 else 5000
    t = 0
    while t <= span:
        out.append(f'<line x1="{X(t):.1f}" x2="{X(t):.1f}" y1="{TOP - 4}" y2="{height}" '
                   f'stroke="#e3e3e3"/>')
        out.append(f'<text x="{X(t):.1f}" y="10" text-anchor="middle">{t // 1000} s</text>')
        t += step
    return out


def _lane_bars(r: ScenarioRecord, lanes: list[dict[str, Any]], events: list[TimelineEvent],
               X: Callable[[float], float], marks: dict[str, float], span: float) -> list[str]:
    """Each lane's name and the bar of its life: grey, red past the window's end, and a
    cross where an orphan was still alive at the horizon's end."""
    out = []
    window_end, horizon_end = marks.get("window-end"), marks.get("horizon-end")
    # Survivors still alive at the horizon's end (orphaned): the clean-up that ends them
    # comes after the timeline was taken, so their lane ends at the horizon with a cross.
    orphans = {s.get("pid") for s in r.get("survivors") or [] if s.get("lingered_ms") is None
               } if r.get("verdict") == "orphaned" and horizon_end is not None else set()
    for i, lane in enumerate(lanes):
        y = TOP + LANE_H * i + LANE_H // 2
        out.append(f'<text x="4" y="{y + 4}">{escape(_name(lane))}</text>')
        start = lane["start"] if lane["start"] is not None else 0.0
        end = lane["end"] if lane["end"] is not None else span
        orphan = lane["end"] is None and lane["pid"] in orphans
        if orphan:
            end = horizon_end
        if lane["role"] == "client" and lane["end"] is None:
            ends = [e["t_ms"] for e in events if e.get("pid") == lane["pid"]
                    and e["what"] in ("client-exit", "client-killed")]
            end = ends[0] if ends else end
        alive_to = end
        server_side = lane["role"] not in ("client", "helper")
        if server_side and window_end is not None and end > window_end:
            alive_to = max(start, window_end)  # alive after the window: red from there
            out.append(f'<line x1="{X(alive_to):.1f}" x2="{X(end):.1f}" y1="{y}" y2="{y}" '
                       f'stroke="#e53935" stroke-width="6"/>')
        out.append(f'<line x1="{X(start):.1f}" x2="{X(alive_to):.1f}" y1="{y}" y2="{y}" '
                   f'stroke="#b0bec5" stroke-width="6"/>')
        if orphan:
            out.append(f'<g class="orphan" data-pid="{lane["pid"]}"><title>pid {lane["pid"]} '
                       f"still alive at the horizon's end ({end} ms): orphaned</title>"
                       + _shape("cross", X(end), y, "#8e0000")
                       + f'<text x="{X(end):.1f}" y="{y - 8}" text-anchor="middle" '
                       f'class="lbl" fill="#8e0000">alive</text></g>')
    return out


def _event_marks(lanes: list[dict[str, Any]], events: list[TimelineEvent],
                 X: Callable[[float], float]) -> list[str]:
    """A mark per event of a process on its lane, with a tooltip saying what it was."""
    out = []
    lane_y = {ln["pid"]: TOP + LANE_H * i + LANE_H // 2 for i, ln in enumerate(lanes)}
    for e in events:
        pid = e.get("pid")
        if pid is None or pid not in lane_y:
            continue
        kind, colour, label = MARKS.get(e["what"], ("ring", "#777", e["what"]))
        if e["what"] == "exit" and e.get("by") in CLEANUP_BY:
            kind, colour, label = "cross", "#c62828", ""
        elif e["what"] == "exit" and (e.get("status") or 0) >= 128:
            colour = "#e69500"  # died of a signal
        y = lane_y[pid]
        below = e["what"] == "handshake"  # it often coincides with the trigger above
        tip = f"{e['what']} pid {pid} at {e['t_ms']} ms"
        if e.get("status") is not None:
            tip += f" (status {e['status']})"
        if e.get("by"):
            tip += f" by {e['by']}"
        if e.get("noticed"):
            tip += " (noticed late: it was gone at the window's end)"
        out.append(f'<g class="mark" data-what="{escape(e["what"])}" data-pid="{pid}" '
                   f'data-t-ms="{e["t_ms"]}"><title>{escape(tip)}</title>'
                   + _shape(kind, X(e["t_ms"]), y, colour)
                   + (f'<text x="{X(e["t_ms"]):.1f}" y="{y + (17 if below else -8)}" '
                      f'text-anchor="middle" '
                      f'class="lbl" fill="{colour}">{label}</text>' if label else "")
                   + "</g>")
    return out


def _card(r: ScenarioRecord, span: float, fixes: Fixes) -> str:
    verdict = r.get("verdict", "")
    # A verdict that passes its scenario is drawn as a pass: a guarded `close` ended by
    # the guard's SIGTERM (`terminated`) is what the guard promises, not a warning.
    colour = VERDICT_COLOUR["exited"] if r.get("passed") else VERDICT_COLOUR.get(verdict, "#555")
    label = r.get("label") or ""
    exit_ms = r.get("exit_ms")
    how = f"{exit_ms:.0f} ms" if isinstance(exit_ms, (int, float)) else ""
    if r.get("rung"):
        how += f" via {r['rung']}"
    text = [f'<div class="head">{escape(label)} {escape(r.get("scenario", ""))} '
            f'<span style="font-weight:400;color:#666">({escape(r.get("host_style", ""))})'
            f'</span><span class="badge">{escape(verdict)}</span> '
            f'<span style="font-weight:400">{escape(how)}</span></div>']
    line = explain_line(r)
    if not line and not r.get("passed") and r.get("detail"):
        line = str(r["detail"])  # an error without a diagnosis: the probe's own words
    if line:
        text.append(f'<div class="why">{escape(line)}</div>')
    rest = (r.get("diagnosis") or "").split(". ", 1)
    if len(rest) == 2 and rest[1].strip():
        text.append(f'<div class="diag">{escape(rest[1])}</div>')
    if r.get("remedy"):
        own = " and ".join(f'<a href="#fix-{n}">[{n}]</a>' for n in fixes.of(r))
        guard = fixes.guard_of(r)
        alt = f'<a href="#fix-G">[G]</a> <code>{escape(guard)}</code>' if guard else ""
        text.append(f'<div class="fix">fix {own}{", or " if own and alt else ""}{alt}</div>')
    scenario = escape(r.get("scenario", ""))
    return (f'<div class="card" style="--v:{colour}" data-scenario="{scenario}"'
            f' data-verdict="{escape(verdict)}"><div>{_timeline(r, span)}</div>'
            f'<div>{"".join(text)}</div></div>')


def _legend() -> str:
    items = [("spawn", "spawn"), ("handshake", "handshake answered"),
             ("eof", "EOF / client exit"), ("client-killed", "client SIGKILLed"),
             ("sigterm", "SIGTERM"), ("sigint", "SIGINT"), ("sigkill", "SIGKILL"),
             ("exit", "exit")]
    out = []
    for what, text in items:
        kind, colour, _ = MARKS[what]
        out.append(f'<svg width="14" height="16">{_shape(kind, 7, 9, colour)}</svg> {text}')
    out.append(f'<svg width="14" height="16">{_shape("cross", 7, 8, "#c62828")}</svg> '
               "killed by the probe's clean-up")
    out.append(f'<svg width="14" height="16">{_shape("cross", 7, 8, "#8e0000")}</svg> '
               "still alive at the horizon (orphaned)")
    out.append('<svg width="26" height="10"><rect width="26" height="10" fill="#fff1b8"/>'
               '</svg> window <svg width="26" height="10"><rect width="26" height="10" '
               'fill="#fde3d3"/></svg> horizon <svg width="26" height="10"><line x1="0" '
               'x2="26" y1="5" y2="5" stroke="#e53935" stroke-width="6"/></svg> '
               "alive after the window")
    return '<div class="legend">' + " &nbsp; ".join(out) + "</div>"


def _needs(r: ScenarioRecord) -> float:
    """How much time axis a result needs: its last process event, and its window and
    horizon when a process was still there as the window opened. A window that opens
    after the tree is gone (devnull's start-up allowance, still --ready-timeout when the
    server exited before any scenario measured its start-up) does not stretch the page;
    it is drawn clipped at the plot's edge."""
    events = r.get("events") or []
    last = max([float(e["t_ms"]) for e in events if e.get("pid") is not None] or [0.0])
    marks = {e["what"]: float(e["t_ms"]) for e in events if e.get("pid") is None}
    if marks.get("window-start", last + 1) <= last or marks.get("horizon-end") is not None:
        last = max([last, *marks.values()])
    return last or 1000.0


def render_html(sections: list[Section], *, title: str = "") -> str:
    styles = [str(r.get("host_style", "")) for _, p in sections for r in p.get("results", [])]
    body = [f"<h1>{escape(title or 'mcp-tether probe')}</h1>", _legend()]
    if said := legend(styles):
        body.append(f'<p class="sum">{escape(said)}</p>')
    fixes = number_fixes(r for _, p in sections for r in p.get("results", []))
    for heading, payload in sections:
        results = payload.get("results", [])
        span = max([_needs(r) for r in results] or [1000.0]) * 1.03
        passed = sum(1 for r in results if r.get("passed"))
        if not (len(sections) == 1 and heading == title):  # the page title, once
            body.append(f"<h2>{escape(heading)}</h2>")
        per_server = payload.get("server_summaries")
        if per_server:  # the lab: several servers in one section
            items = "".join(f"<li><b>{escape(name)}</b>: {escape(text)}</li>"
                            for name, text in per_server)
            body.append(f'<p class="sum">{passed}/{len(results)} passed</p>'
                        f'<ul class="sum">{items}</ul>')
        else:
            probed = any(r.get("scenario") != "*" for r in results)  # "*": not probed
            count = f"{passed}/{len(results)} passed — " if probed else ""
            body.append(f'<p class="sum">{count}'
                        f"{escape(payload.get('summary') or summary(results))}</p>")
        body += [_card(r, span, fixes) for r in results]
    if fixes.steps or fixes.guarded:
        fix_items = [f'<li id="fix-{n}"><b>[{n}]</b> {escape(s)}</li>'
                     for n, s in enumerate(fixes.steps, 1)]
        if fixes.guarded:
            fix_items.append(f'<li id="fix-G"><b>[G]</b> {escape(GUARD_LEGEND)}</li>')
        body.append('<h2>Fixes</h2><p class="sum">Each said once; the rows point to them.'
                    f'</p><ul class="fixes">{"".join(fix_items)}</ul>')
    return ("<!doctype html><html><head><meta charset=\"utf-8\">"
            f"<title>{escape(title or 'mcp-tether probe')}</title><style>{CSS}</style></head>"
            f"<body>{''.join(body)}</body></html>\n")


def write_html(path: str, sections: list[Section], *, title: str = "") -> None:
    page = render_html(sections, title=title or (sections[0][0] if sections else ""))
    try:
        with open(path, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(page)
    except OSError as exc:
        raise UsageError(f"--html {path}: {exc.strerror}") from None
