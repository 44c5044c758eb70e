"""The survey's renderings of one `SurveyResult`: Markdown, JSON, HTML.

Guarantees: the three say the same thing (one table, then each failing row's diagnosis
and remedy) and are computed from the result alone; HTML is self-contained and every
value is escaped; a failure is never shown without its remedy when the probe gave one.
Every cell follows one rule (`repeat.judge`, `ServerResult.judged`), in every column and
file: a failure that repeats (2 of 3 runs) is a FAIL, named by what its failing runs did
(`lingered` is never LEFT); one that does not is `flaky`, with its runs. An SDK host's
re-check that did not confirm a failure is shown beside it; the header counts the rows
(with results, did not start, ...) and the probe runs they made; a survey whose load
stayed above the CPU count says so first.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from mcp_tether.escape import html_text, md_cell, md_code, md_text
from mcp_tether.jsonout import envelope
from mcp_tether.survey import PROBE_FLOOR, Failure, ServerResult, SurveyResult

__all__ = ["to_markdown", "to_json", "to_html", "COLUMNS", "cells", "fix_numbers", "busy_text",
           "STATUS_WORDS"]

COLUMNS = ("server", "used", "version", "language", "SDK", "launch", "spec (node / python)",
           "robust (node / python)", "`kill PID` (node / python)", "behind the guard",
           "failures")
# The `sigterm-pid` cell, as the column says it: does the whole tree end when only the
# spawned pid gets SIGTERM (a user's `kill PID`, a one-pid supervisor)? By the one rule
# (`ServerResult.judged`): a FAIL names what its failing runs did (LEFT running, or
# `lingered`: gone by itself after the window, never LEFT), a cell that failed once is
# `flaky`, one whose repeats got no verdict `?`.
_KILL_PID = {"exited": "ends", "terminated": "ends", "orphaned": "LEFT", "killed": "LEFT",
             "lingered": "lingered", "flaky": "flaky"}
# A row without verdicts: what the table says instead (its status).
STATUS_WORDS = {"needs-service": "needs a service", "did-not-start": "did not start",
                "install-failed": "cannot be installed here", "no-command": "no server command",
                "stopped": "not run (stopped)", "error": "error", "timeout": "timed out"}
# The same, counted in the header: "33 did not start".
_COUNTED = {"results": "with results", "needs-service": "need a service",
            "did-not-start": "did not start", "install-failed": "cannot be installed here",
            "no-command": "have no server command", "stopped": "not run (stopped)",
            "error": "ended in an error", "timeout": "timed out"}


def used(row: ServerResult) -> str:
    """How much the server is used, as the list says: npm downloads a month, PyPI rank."""
    if row.downloads is not None:
        return f"{row.downloads:,}/month"
    return f"PyPI #{row.rank:,}" if row.rank is not None else "—"


def _mark(v: bool | None) -> str:
    return "?" if v is None else ("pass" if v else "FAIL")


def _failed_scenarios(row: ServerResult, style: str) -> list[str]:
    return [f.scenario + (f" (SDK host: {f.sdk_recheck})"
                          if f.sdk_recheck.startswith("not confirmed") else "")
            for f in row.failures if f.style == style]


def runs_text(f: Failure) -> str:
    """A cell's runs: `lingered at load 3.1, exited at load 0.4, ...`."""
    return ", ".join(f"{r['verdict']} at load {float(r['load']):g}" for r in f.runs)


def _flaky_text(row: ServerResult) -> str:
    if not row.flaky:
        return ""
    what = {"flaky": "flaky", "unrepeated": "failed once, not rerun"}
    return "; ".join(f"{what.get(f.repeated, f.repeated)}: {f.style} {f.scenario}"
                     for f in row.flaky)


def cells(row: ServerResult) -> list[str]:
    if not row.has_results:
        what = STATUS_WORDS.get(row.status, row.status)
        return [row.label, used(row), row.version or "—", row.language or "—",
                row.sdk or "—", row.launch or "—", "—", "—", "—", "—", f"{what}: {row.note}"]
    spec = " / ".join(_mark(row.spec_pass.get(s)) for s in ("node", "python"))
    robust = " / ".join(_mark(row.robust_pass.get(s)) for s in ("node", "python"))
    guard = row.robust_pass.get("guarded")
    guard_text = "passes" if guard else ("—" if guard is None else
                                         "FAIL: " + ", ".join(_failed_scenarios(row, "guarded")))
    fails = []
    for style in ("node", "python"):
        names = _failed_scenarios(row, style)
        if names:
            fails.append(f"{style}: {', '.join(names)}")
    if row.flaky:
        fails.append(_flaky_text(row))
    if row.status == "timeout":
        fails.append(row.note)
    kill_pid = " / ".join(_KILL_PID.get(row.judged(s, "sigterm-pid") or "", "?")
                          for s in ("node", "python"))
    if not any("sigterm-pid" in v for v in row.verdicts.values()):
        kill_pid = "—"  # not probed (a survey made before the scenario, or without it)
    return [row.label, used(row), row.version, row.language, row.sdk or "—", row.launch, spec,
            robust, kill_pid, guard_text, "; ".join(fails) or "none"]


def _details(row: ServerResult) -> list[tuple[str, str, str]]:
    """(what, diagnosis, remedy) per distinct failure: one line for a scenario that fails
    alike under several host styles."""
    groups: dict[tuple[str, str, str, str], list[str]] = {}
    for f in row.failures:
        groups.setdefault((f.scenario, f.level, f.verdict, f.diagnosis), []).append(f.style)
    remedies = {(f.scenario, f.level, f.verdict, f.diagnosis): f.remedy for f in row.failures}
    out = [(f"{scen} [{level}] ({'/'.join(styles)}): {verdict}", diag,
            remedies[(scen, level, verdict, diag)])
           for (scen, level, verdict, diag), styles in groups.items()]
    # Each cell's runs and SDK re-check, and the cells that did not repeat (no fix).
    for f in row.failures:
        sdk = f"SDK host: {f.sdk_recheck}" if f.sdk_recheck else ""
        if f.runs:
            failed = sum(1 for r in f.runs if not r["passed"] and r["verdict"] != "error")
            out.append((f"{f.scenario} ({f.style}): failed {failed} of {len(f.runs)} runs",
                        "; ".join(x for x in (runs_text(f), sdk) if x), ""))
        elif sdk:
            out.append((f"{f.scenario} ({f.style}): re-checked", sdk, ""))
    for f in row.flaky:
        out.append((f"{f.scenario} [{f.level}] ({f.style}): {f.repeated}, not a FAIL",
                    f"runs: {runs_text(f)}", ""))
    return out


def fix_numbers(result: SurveyResult) -> dict[str, int]:
    """Each distinct remedy of the survey, numbered once in order of first use: a fix that
    many rows share (the Node one-liner, the Python helper) is printed once and the rows
    point to it by number."""
    numbers: dict[str, int] = {}
    for row in result.rows:
        for _, _, remedy in _details(row):
            if remedy and remedy not in numbers:
                numbers[remedy] = len(numbers) + 1
    return numbers


def _rows_text(d: dict[str, Any]) -> str:
    """`184 servers (117 with results, 33 did not start, ...)`: the rows' own counts."""
    counts = d.get("statuses")
    if not counts:  # the facts of a survey saved before its rows were counted so
        return f"{d['servers']} servers ({d.get('probed', '?')} got to a probe)"
    said = ", ".join(f"{n} {_COUNTED.get(k, k)}" for k, n in
                     sorted(counts.items(), key=lambda kv: (kv[0] != "results", -kv[1])))
    return f"{d['servers']} servers ({said})"


def _run_line(d: dict[str, Any]) -> str:
    ns = "in a pid namespace" if d["pid_namespace"] else "in the host pid namespace"
    load = d.get("load_average")
    load_text = "" if not load else \
        f", load average {load['start']:g} at the start and {load['end']:g} at the end"
    others = d.get("others_running")
    if others:
        load_text += (f", other work's runnable tasks (the survey's own not counted) median "
                      f"{float(others['median']):g}, max {others['max']}")
    floor = float(d.get("floor_seconds") or 0)
    runs = f"{int(d.get('probe_runs') or 0)} probe runs"
    if d.get("repeat_runs"):
        runs += (f": {d['first_runs']} first runs + {d['repeat_runs']} repeat runs of "
                 "failures,")
    floor_text = "" if not floor else \
        f" Floor ({runs} x {PROBE_FLOOR:g} s / {d['jobs']}): {floor:.0f} s; " \
        f"this run {float(d['seconds']) / floor:.2f}x."
    return (f"Surveyed {d['started']}: {_rows_text(d)} in {d['seconds']} s, "
            f"{d['jobs']} at once, {ns}{load_text}.{floor_text}")


def busy_text(result: SurveyResult) -> str:
    """Why a busy survey is busy, in one clause (its measure and median)."""
    medians = result.others_medians()
    if medians is not None:
        return (f"other work kept more tasks runnable than the {result.cpus} CPUs (median "
                f"{max(medians):g}, the survey's own not counted)")
    return (f"the load average stayed above the {result.cpus} CPUs (median "
            f"{statistics.median(result.loads()):g}, the survey's own probes included)")


def _busy_line(result: SurveyResult) -> str:
    if not result.busy:
        return ""
    return (f"BUSY MACHINE: {busy_text(result)}; "
            "timings and start-ups here are the machine's, not the servers'. ")


def _header(result: SurveyResult) -> str:
    return _busy_line(result) + _runs_header(result)


def _runs_header(result: SurveyResult) -> str:
    if result.runs:
        return (f"Put together from {len(result.runs)} surveys of one list (a later one's "
                "row replaces an earlier one's): " +
                " ".join(_run_line(r) for r in result.runs))
    return _run_line({**result.to_dict(), "servers": len(result.rows),
                      "statuses": result.statuses()})


def to_markdown(result: SurveyResult) -> str:
    lines = [_header(result), "", "| " + " | ".join(COLUMNS) + " |",
             "|" + "---|" * len(COLUMNS)]
    for row in result.rows:
        lines.append("| " + " | ".join(md_cell(c) for c in cells(row)) + " |")
    fixes = fix_numbers(result)
    lines += ["", "### Why each failing row fails, and what fixes it", "",
              "Each fix is said once, under \"The fixes\" below; a row points to it by "
              "number.", ""]
    for row in result.rows:
        details = _details(row)
        if not details:
            continue
        cmd = md_code(" ".join(row.command))
        lines.append(f"**{md_text(row.label)}** ({md_text(row.version)}, {cmd})")
        lines.append("")
        for what, diag, remedy in details:
            fix = f" Fix: [{fixes[remedy]}]." if remedy else ""
            lines.append(f"- {md_text(what)}: {md_text(diag) or 'no diagnosis'}{fix}")
        lines.append("")
    if fixes:
        lines += ["### The fixes", ""]
        lines += [f"{n}. {md_text(remedy)}" for remedy, n in fixes.items()]
        lines.append("")
    return "\n".join(lines) + "\n"


def to_json(result: SurveyResult) -> str:
    """The survey as one `mcp-tether/survey` document (jsonout): its rows are `results`."""
    payload: dict[str, Any] = result.to_dict()
    rows = payload.pop("rows")
    return json.dumps(envelope("survey", rows, **payload), indent=1) + "\n"


def to_html(result: SurveyResult) -> str:
    e = html_text
    head = "".join(f"<th>{e(c)}</th>" for c in COLUMNS)
    body = []
    for row in result.rows:
        tds = []
        for c in cells(row):
            cls = ' class="fail"' if "FAIL" in c else (' class="pass"' if c.startswith("pass")
                                                       else "")
            tds.append(f"<td{cls}>{e(c)}</td>")
        body.append("<tr>" + "".join(tds) + "</tr>")
    fixes = fix_numbers(result)
    detail = []
    for row in result.rows:
        items = "".join(
            f"<li><b>{e(w)}</b>: {e(d) or 'no diagnosis'}"
            + (f' <i>Fix:</i> <a href="#fix-{fixes[r]}">[{fixes[r]}]</a>' if r else "")
            + "</li>" for w, d, r in _details(row))
        if items:
            detail.append(f"<h3>{e(row.label)} {e(row.version)}</h3><ul>{items}</ul>")
    if fixes:
        detail.append("<h2>The fixes</h2><ol>" + "".join(
            f'<li id="fix-{n}">{e(remedy)}</li>' for remedy, n in fixes.items()) + "</ol>")
    return ("<!doctype html><meta charset=utf-8><title>mcp-tether survey</title><style>"
            "body{font:14px system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top;text-align:left}"
            ".fail{background:#fdd}.pass{background:#dfd}</style>"
            f"<h1>mcp-tether survey</h1><p>{e(_header(result))}</p>"
            f"<table><tr>{head}</tr>{''.join(body)}</table>"
            f"<h2>Why each failing row fails, and what fixes it</h2>{''.join(detail)}\n")
