"""The host check's renderings: text, JSON, Markdown and HTML of one `HostCheck`.

Pure rendering of the results' own numbers (ms since the host was spawned); the HTML
page is the probe's timeline renderer (`report.html.render_html`), fed the same events.
The host's command, its output and every process's command line are untrusted: text
shows them through `escape.terminal`, Markdown through `escape.md_text` / `md_code`.
"""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING, Any, cast

from mcp_tether.escape import md_cell, md_code, md_text, terminal
from mcp_tether.hostcheck.scenarios import UNJUDGED, VERDICT_WORDS
from mcp_tether.hostcheck.who import ms_text, saw_line
from mcp_tether.report.html import render_html as page

if TYPE_CHECKING:
    from mcp_tether.hostcheck import HostCheck
    from mcp_tether.hostcheck.record import HostCheckRow, ProcessRow
    from mcp_tether.probe.record import ScenarioRecord

__all__ = ["render_text", "render_markdown", "render_html", "hold_line", "process_cell",
           "calls_line"]

_LABEL = {"wrapper": "wrapper", "server": "server (recorder)", "grandchild": "grandchild"}


def calls_line(facts: dict[str, Any]) -> str:
    """Each tool call of a tool-calling scenario and the copy that answered it."""
    out = []
    for c in facts.get("calls") or []:
        who = str(c["text"]).rsplit(" ", 1)[-1]
        got = (f"pid {c['copy']}" if c.get("ok") else
               f"failed ({str(c.get('result') or '')[-60:]})" if c.get("ok") is False else
               f"pid {c['copy']}, no result" if c.get("copy") else "unanswered")
        out.append(f"{who} {got}")
    return ", ".join(out) or "none"


def hold_line(r: HostCheckRow) -> str:
    """Which hold point was used, and when (or why none)."""
    asked = r.get("hold") or "none"
    if r.get("hold_point"):
        return (f"held at {r['hold_point']} from {ms_text(r.get('held_ms'))}, released at "
                f"{ms_text(r.get('released_ms'))} (after the trigger)")
    if asked == "none":
        return "no hold (--hold none)"
    return f"no hold: the host never sent {asked} before the trigger"


def _signals(p: ProcessRow) -> str:
    return ", ".join(f"{s['signal']} at {ms_text(s.get('t_ms'))}" for s in p["signals"]) \
        or "no signal"


def _stdin_first(p: ProcessRow) -> str:
    first = p.get("stdin_closed_first")
    if first is None:
        return "stdin not closed"
    if not p["signals"]:
        return f"stdin closed at {ms_text(p.get('stdin_closed_ms'))}"
    return "stdin closed first" if first else "stdin not closed first"


def _where(p: ProcessRow) -> str:
    if p.get("direct_child"):
        return "the host's direct child"
    return f"child of {p.get('ppid')}"


def process_cell(p: ProcessRow) -> str:
    """One process in a few words (a Markdown cell)."""
    sigs = "+".join(f"{s['signal']}@{ms_text(s.get('t_ms'))}" for s in p["signals"]) or "no signal"
    return (f"{sigs}; {_stdin_first(p)}; group {p['group']}, session {p['session']}; "
            f"{p['ended']}")


def _host_line(r: HostCheckRow) -> str:
    if r.get("host_exit_ms") is None:
        return "still running"
    if r.get("host_ended_by_cleanup"):
        return "still running (ended by the check's clean-up)"
    return f"exited at {ms_text(r['host_exit_ms'])} (status {r.get('host_status')})"


def _command(result: HostCheck) -> str:
    target = f"--host {result.host} -- " if result.host else "-- "
    return f"mcp-tether hostcheck {target}{' '.join(result.argv)}"


def render_text(result: HostCheck, out: IO[str] | None = None) -> None:
    out = out or sys.stdout
    print(terminal(_command(result)), file=out)
    print("(times in ms since the host was started)", file=out)
    for r in result.results:
        print(f"\n{r['scenario']:<10} {r['verdict'].upper()}: {terminal(r.get('detail', ''))}",
              file=out)
        if r["verdict"] in ("error", "skipped"):
            if r["verdict"] == "error" and r.get("host_output_tail"):
                tail = r["host_output_tail"].strip().splitlines()[-3:]
                print("  host output: " + terminal(" / ".join(tail)), file=out)
            continue
        print(f"  {terminal(r.get('title', ''))}: done at {ms_text(r.get('action_ms'))}; recorder "
              f"initialized at {ms_text(r.get('initialized_ms'))}; host {_host_line(r)}", file=out)
        print(f"  {terminal(hold_line(r))}", file=out)
        for p in r.get("processes") or []:
            ended = p["ended"] + (f" at {ms_text(p['ended_ms'])}" if p.get("ended_ms") is not None
                                  else "")
            print(f"  {_LABEL.get(p['role'], p['role'])} (pid {p['pid']}, {_where(p)}; group "
                  f"{p['group']}, session {p['session']}):\n"
                  f"      {terminal(f'signals: {_signals(p)}; {_stdin_first(p)}; {ended}')}\n"
                  f"      saw {terminal(saw_line(r, p['role'], p['pid']))}", file=out)
        for row in r.get("ps") or []:  # reconnect: what `ps` says of each running copy
            ev = f" [{', '.join(row['evidence'])}]" if row["evidence"] else ""
            print(f"  ps: pid {row['pid']} {row['state']}{ev}: {terminal(row['why'])}", file=out)
            if row.get("superseded", "n/a") != "n/a":
                print(f"      superseded: {row['superseded']}: "
                      f"{terminal(row.get('superseded_why', ''))}", file=out)
        if facts := r.get("calls"):
            print(f"  calls (agent/step/n: the copy that answered): "
                  f"{terminal(calls_line(facts))}", file=out)
        if r["verdict"] not in ("clean", "host-stayed", "measured"):
            print(f"  the spec: {terminal(r.get('spec', ''))}", file=out)
    bad = [r["scenario"] for r in result.results if not r.get("passed")]
    unjudged = [r["scenario"] for r in result.results if r["verdict"] in UNJUDGED]
    measured = any(r["verdict"] == "measured" for r in result.results)
    clean = "every scenario clean" + (" or measured" if measured else "")
    print("\n" + (f"not clean: {', '.join(bad)}" if bad else "every judged scenario clean"
                  if unjudged else clean), file=out)
    if unjudged:
        print(f"not judged: {', '.join(unjudged)}", file=out)


def render_markdown(result: HostCheck, out: IO[str] | None = None) -> None:
    out = out or sys.stdout
    print(f"{md_code(_command(result))}\n", file=out)
    wrapped = any(r.get("wrapper") for r in result.results)
    roles = ("wrapper", "server", "grandchild") if wrapped else ("server", "grandchild")
    print("| scenario | verdict | hold | host exit | server saw | "
          + " | ".join(_LABEL[x] for x in roles) + " |", file=out)
    print("|---" * (5 + len(roles)) + "|", file=out)
    for r in result.results:
        if r["verdict"] in ("error", "skipped"):
            print(f"| {r['scenario']} | {r['verdict']} | | {md_cell(r.get('detail', ''))} |"
                  + " |" * (1 + len(roles)), file=out)
            continue
        host = ("running" if r.get("host_exit_ms") is None or r.get("host_ended_by_cleanup")
                else ms_text(r.get("host_exit_ms")))
        hold = (f"{r['hold_point']} @{ms_text(r.get('held_ms'))}" if r.get("hold_point")
                else f"none ({r.get('hold') or 'none'} asked)")
        verdict = r["verdict"] + (f" (after: {r['after']})" if r.get("after") else "")
        cells = []
        for role in roles:
            procs = [p for p in r.get("processes") or [] if p["role"] == role]
            cells.append(" / ".join(process_cell(p) for p in procs) or "never started")
        print(f"| {r['scenario']} | **{md_cell(verdict)}** | {md_cell(hold)} | {host} | "
              f"{md_cell(saw_line(r, 'server'))} | " + " | ".join(md_cell(c) for c in cells)
              + " |", file=out)
    words = {r["verdict"] for r in result.results}
    print("", file=out)
    for r in result.results:  # every process left beside the recorder's, every layer
        if r.get("calls"):  # what a tool-calling scenario measured
            print(f"- {r['scenario']}: {md_text(r.get('detail', ''))}", file=out)
        elif r.get("also"):
            print(f"- {r['scenario']}: {md_text(r['also'])}", file=out)
    for v in sorted(words):
        print(f"- **{v}**: {VERDICT_WORDS.get(v, '')}", file=out)


def _pictured(r: HostCheckRow) -> ScenarioRecord:
    """A scenario as the probe's timeline page draws a row: the row as it is, with the
    host as the client lane, the recorder as the server's, the verdict's words as its
    diagnosis and the spec as its remedy (a row lacks some of a scenario record's keys:
    the page reads those with `get`)."""
    row: dict[str, Any] = dict(r)
    row["host_style"] = "host"
    row["diagnosis"] = (f"{VERDICT_WORDS.get(r['verdict'], r.get('detail', ''))}. "
                        f"Server saw: {saw_line(r, 'server')}; grandchild saw: "
                        f"{saw_line(r, 'grandchild')}.")
    if r["verdict"] not in ("clean", "skipped"):
        row["remedy"] = "The spec: " + str(r.get("spec", ""))
    return cast("ScenarioRecord", row)


def render_html(result: HostCheck, title: str = "") -> str:
    results = [_pictured(r) for r in result.results]
    clean = sum(1 for r in result.results if r["verdict"] == "clean")
    head = title or "mcp-tether hostcheck: " + " ".join(result.argv)
    summary = (f"{clean}/{len(results)} scenarios clean (lanes: the host, drawn as the "
               "client; the recorder; its grandchild)")
    return page([(head, {"results": results, "summary": summary})], title=head)
