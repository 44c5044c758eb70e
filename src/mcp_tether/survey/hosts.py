"""Servers x hosts: is a surveyed server left running when a measured host exits,
crashes or reconnects? Derived from the two measurements, never measured again here.

    python -m mcp_tether.survey.hosts [--survey docs/survey-table.json]
        [--hosts docs/hosts-check.md] [--hostcheck NAME=FILE.jsonl ...] [--out BASE]

The two measurements:
- the survey (`docs/survey-table.json`): what each server's tree does under each host
  style's scenarios (`close`: the style's ladder; `crash`: its client gone; `sigint`,
  `sigterm`: the signal as the style sends it);
- hostcheck (`docs/hosts-check.md`'s tables, or `mcp-tether hostcheck --json` output):
  what each host does to a recorder that never exits by itself, and whether the
  recorder's grandchild (the real server behind a wrapper) was left.

The rule (`derive`), per host and event (hostcheck's `exit`, `sigkill` = a crash,
`reconnect`, and its `sigint`, `sigterm`, `sighup`):
- the host left nothing (`clean`): it ended the whole process group itself; the server
  is gone, unless it left the group (the survey's python-style `close`, whose last rung
  is killpg(SIGKILL), found a survivor: `orphaned`);
- the host ended its direct child only (`wrapper-child-left`): the server got what the
  recorder got, so the survey scenario that sends the same decides: EOF then SIGTERM is
  `close`, SIGINT alone `sigint`, SIGTERM alone `sigterm`, in the host's style;
- the host left its direct child (`server-left`, `abandoned`): the server got only EOF
  (the host's fds closing, or stdin closed): the survey's `crash` (EOF, nobody signals)
  decides; with no EOF either, it is left;
- anything else (`host-stayed`, `skipped`, `error`, not measured): unknown.
A server's cell is read by the survey's one rule (`ServerResult.judged`): a failure that
repeats is its failing runs' verdict, one that failed once is `flaky` (with its runs),
a pass its verdict. `orphaned` is "left"; `lingered` is "late" (gone by itself after the
window); other verdicts of a tree that ended are "gone"; `flaky` is "flaky";
`error`/`early-exit`/unrepeated/missing: "?".

Guarantees: pure functions of the two inputs; a host row added to hosts-check.md (a
`### HOST` section with a `| scenario | verdict | ... | server saw |` table) or a
hostcheck JSON file joins without code changes; every cell says which measurement
decided it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mcp_tether.escape import html_text, md_cell, md_text
from mcp_tether.survey import ServerResult
from mcp_tether.survey.render import runs_text

__all__ = ["HostLadder", "Cell", "Join", "parse_hosts_md", "parse_hostcheck_json",
           "derive", "join", "to_markdown", "to_json", "to_html", "EVENTS"]

# hostcheck scenario -> what the table calls it, in column order.
EVENTS = {"exit": "exits", "sigkill": "crashes", "reconnect": "reconnects",
          "sigint": "gets Ctrl-C", "sigterm": "gets SIGTERM", "sighup": "loses its terminal"}
MAIN_EVENTS = ("exit", "sigkill", "reconnect")
# Hosts of hosts-check.md that are test fixtures, not hosts anyone runs.
# Hosts of hosts-check.md that are test fixtures, or variants of a fixture, not hosts
# anyone runs.
NOT_A_HOST = re.compile(r"^(bad host|one-shot host|the same, |(the )?same careful|behind )",
                        re.I)
# Hosts on the Python SDK's `stdio_client` (a new session, signals to the group): the
# survey's python host style models them.
_PYTHON_HOST = re.compile(r"python|pypi|\.py\b|fastmcp|openai agents|pydantic|langchain|"
                          r"mcp-use|smolagents|llama-index|fast-agent", re.I)


@dataclass
class HostEvent:
    verdict: str  # hostcheck's: clean | server-left | wrapper-child-left | abandoned | ...
    saw: str = ""  # what the recorder (the server) saw, as hostcheck says it


@dataclass
class HostLadder:
    name: str
    style: str  # node | python: which survey host style its spawning matches
    source: str
    events: dict[str, HostEvent] = field(default_factory=dict)


@dataclass
class Cell:
    state: str  # left | late | gone | ? | —
    why: str  # which measurement decided, in words


@dataclass
class Join:
    hosts: list[HostLadder]
    rows: list[dict[str, Any]]  # label, status, cells: {host: {event: Cell}}
    survey_started: float | None = None


def _key(name: str) -> str:
    """Two spellings of one host merge: the first two words, backticks and 'The ' off."""
    words = re.sub(r"[`*]", "", name).removeprefix("The ").split()
    return " ".join(words[:2]).lower()


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _verdict(text: str) -> str:
    return re.sub(r"[*`]", "", text).split()[0] if text.strip() else ""


def parse_hosts_md(text: str, source: str = "docs/hosts-check.md") -> list[HostLadder]:
    """Every host of hosts-check.md with its measured events.

    Two table shapes: `| host | EVENT | EVENT ... |` (one host a row), and
    `| scenario | verdict | ... | server saw | ... |` (one host a table, named by the
    `###` heading above it, or by the paragraph above it when no `###` is nearer)."""
    hosts: dict[str, HostLadder] = {}

    def get(name: str) -> HostLadder:
        name = re.sub(r"\s+", " ", name).strip().removeprefix("The ")
        k = _key(name)
        if k not in hosts:
            hosts[k] = HostLadder(name, "python" if _PYTHON_HOST.search(name) else "node",
                                  source)
        return hosts[k]

    lines = text.splitlines()
    heading, paragraph = "", ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            heading, paragraph = "", ""
        elif line.startswith("### "):
            heading, paragraph = line[4:], ""
        elif (line.strip() and not line.startswith(("|", "    ", "```"))
              and (i == 0 or not lines[i - 1].strip())):  # a new paragraph: its first line
            paragraph = line
        rule = i + 1 < len(lines) and re.match(r"^\|[-| ]+\|$", lines[i + 1])
        if line.startswith("|") and rule:
            head = [h.lower() for h in _cells(line)]
            body = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                body.append(_cells(lines[i]))
                i += 1
            if head[0] == "host" and any(h in EVENTS for h in head):
                for row in body:
                    if NOT_A_HOST.search(row[0]):
                        continue
                    h = get(row[0])
                    for col, ev in enumerate(head):
                        if ev in EVENTS and col < len(row) and ev not in h.events:
                            why = row[head.index("why")] if "why" in head else ""
                            h.events[ev] = HostEvent(_verdict(row[col]), why)
            elif head[:2] == ["scenario", "verdict"]:
                name = heading or re.split(r",| in all ", paragraph)[0]
                # A paragraph about a variant of a host above ("The same careful host
                # on ...", "Behind the Node watchdog ...") names no host of its own.
                if not name or NOT_A_HOST.search(name):
                    continue
                h = get(name)
                saw_col = head.index("server saw") if "server saw" in head else None
                for row in body:
                    ev = row[0]
                    if ev in EVENTS:
                        saw = row[saw_col] if saw_col is not None and saw_col < len(row) else ""
                        h.events[ev] = HostEvent(_verdict(row[1]), saw)
            paragraph = ""
            continue
        i += 1
    return list(hosts.values())


def parse_hostcheck_json(name: str, text: str, source: str) -> HostLadder:
    """`mcp-tether hostcheck --json` output (its document's `results`, one a scenario;
    JSON Lines as saved before the envelope also read) as one host."""
    from mcp_tether.hostcheck.who import saw_line

    h = HostLadder(name, "python" if _PYTHON_HOST.search(name) else "node", source)
    try:
        rows = json.loads(text)["results"]
    except (ValueError, TypeError, KeyError):
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    for r in rows:
        h.events[r["scenario"]] = HostEvent(r["verdict"], saw_line(r, "server"))
    return h


def _state(verdict: str | None) -> str:
    if verdict == "orphaned":
        return "left"
    if verdict == "lingered":
        return "late"
    if verdict in ("exited", "terminated", "killed"):
        return "gone"
    if verdict == "flaky":
        return "flaky"
    return "?"


def judged_verdicts(row: ServerResult) -> dict[str, dict[str, str]]:
    """A survey row's cells by the survey's one rule: style -> scenario -> the verdict of
    a pass or of a failure that repeats, `flaky` or `unrepeated` otherwise."""
    return {style: {sc: row.judged(style, sc) or "" for sc in cells}
            for style, cells in row.verdicts.items()}


def derive(verdicts: dict[str, dict[str, str]], host: HostLadder, event: str,
           runs_of: dict[tuple[str, str], str] | None = None) -> Cell:
    """Is the server (its survey cells per style and scenario, `judged_verdicts`) left by
    `host` at `event`? The rule is the module docstring's; `runs_of`: a flaky cell's runs,
    said in its why."""
    ev = host.events.get(event)
    if ev is None:
        return Cell("?", f"{host.name}: {event} not measured")
    mine = verdicts.get(host.style) or {}
    saw = ev.saw.lower()
    eof = (bool(re.search(r"(?<!no )eof|close stdin|end stdin", saw))
           or event == "sigkill")  # a host killed outright: the kernel closes its fds

    def by(scenario: str, what: str) -> Cell:
        v = mine.get(scenario)
        runs = (runs_of or {}).get((host.style, scenario))
        why = (f"host {ev.verdict} ({what}); survey {host.style} {scenario}: {v or 'not run'}"
               + (f" (runs: {runs})" if runs and v == "flaky" else ""))
        if v == "killed" and scenario != "close":
            # It outlived the signal; the probe then SIGKILLed it, as the spec's ladder
            # would. Whether this host goes on to SIGKILL, hostcheck's recorder (which
            # ends on the signal) could not show.
            return Cell("?", why + " (whether this host then SIGKILLs: not measured)")
        return Cell(_state(v), why)

    if ev.verdict == "clean":
        # Only the python style's close ends with killpg(SIGKILL): a survivor there is
        # one that left the group, which no group signal of any host reaches.
        v = (verdicts.get("python") or {}).get("close")
        if v == "orphaned":
            return Cell("left", "host clean (it ended its process group); survey python "
                                "close: orphaned (something left the group)")
        return Cell("gone", f"host clean: it ended the whole group itself "
                            f"(survey python close: {v or 'not run'})")
    if ev.verdict == "wrapper-child-left":
        if "sigint" in saw and "sigterm" not in saw:
            return by("sigint", "SIGINT to its direct child")
        if "sigterm" in saw and not eof:
            return by("sigterm", "SIGTERM to its direct child")
        return by("close", "EOF, then SIGTERM to its direct child")
    if ev.verdict in ("server-left", "abandoned"):
        if eof:
            return by("crash", "left its child; the server got EOF only")
        return Cell("left", f"host {ev.verdict}, the server got no EOF either")
    return Cell("?", f"host {ev.verdict or 'not measured'}")


def join(survey: dict[str, Any], hosts: list[HostLadder]) -> Join:
    rows = []
    for r in survey.get("results") or survey.get("rows") or []:  # "rows": before the envelope
        cells: dict[str, dict[str, Cell]] = {}
        row = ServerResult.from_dict(r)
        judged = judged_verdicts(row)
        runs = {(f.style, f.scenario): runs_text(f) for f in row.flaky if f.runs}
        for h in hosts:
            cells[h.name] = {}
            for ev in EVENTS:
                if r.get("status") != "ok" or not r.get("verdicts"):
                    cells[h.name][ev] = Cell("—", f"not probed ({r.get('status')})")
                else:
                    cells[h.name][ev] = derive(judged, h, ev, runs)
        rows.append({"label": r["label"], "status": r.get("status"), "cells": cells})
    return Join(hosts, rows, survey.get("started"))


def _events_of(j: Join) -> list[str]:
    """The main events, then any other event some host measured."""
    seen = {ev for h in j.hosts for ev in h.events}
    return [ev for ev in EVENTS if ev in MAIN_EVENTS or ev in seen]


def to_json(j: Join) -> str:
    return json.dumps({
        "survey_started": j.survey_started,
        "events": {ev: EVENTS[ev] for ev in _events_of(j)},
        "hosts": [asdict(h) for h in j.hosts],
        "rows": [{"label": r["label"], "status": r["status"],
                  "cells": {h: {ev: asdict(c) for ev, c in evs.items()}
                            for h, evs in r["cells"].items()}} for r in j.rows],
    }, indent=1)


_MARK = {"left": "LEFT", "late": "late", "gone": "gone", "flaky": "flaky", "?": "?",
         "—": "—"}


def _counts(j: Join, host: str, ev: str) -> str:
    states = [r["cells"][host][ev].state for r in j.rows if r["status"] == "ok"]
    flaky = f"{states.count('flaky')} flaky, " if "flaky" in states else ""
    return (f"{states.count('left')} left, {states.count('late')} late, "
            f"{states.count('gone')} gone, {flaky}{states.count('?')} unknown")


def to_markdown(j: Join) -> str:
    out = ["# Servers x hosts: which servers each host leaves running", "",
           "Derived from the survey's per-server verdicts and hostcheck's host ladders "
           "(`python -m mcp_tether.survey.hosts`; the rule: docs/survey.md, \"Servers x "
           "hosts\"). LEFT: still running after the host; late: gone by itself only after "
           "the 2 s window; gone; flaky: the survey cell failed once in 3 runs (its runs "
           "are in the JSON's why); ?: not measured; —: the server was not probed.", "",
           f"The survey: {j.survey_started or 'undated'}; the hosts: as listed below.", "",
           "| host | style | measured in |", "|---|---|---|"]
    out += [f"| {h.name} | {h.style} | {h.source} |" for h in j.hosts]
    for ev in _events_of(j):
        out += ["", f"## When the host {EVENTS[ev]}", "",
                "| host | servers |", "|---|---|"]
        out += [f"| {h.name} | {_counts(j, h.name, ev)} |" for h in j.hosts]
        out += ["", "| server | " + " | ".join(h.name.split(" (")[0] for h in j.hosts) + " |",
                "|---|" + "---|" * len(j.hosts)]
        for r in j.rows:
            out.append(f"| {md_cell(r['label'])} | " + " | ".join(
                _MARK[r["cells"][h.name][ev].state] for h in j.hosts) + " |")
    out += ["", "## Why each LEFT cell is left", ""]
    for r in j.rows:
        for h in j.hosts:
            for ev in _events_of(j):
                c = r["cells"][h.name][ev]
                if c.state == "left":
                    out.append(f"- {md_text(r['label'])}, {h.name.split(' (')[0]}, {ev}: "
                               f"{md_text(c.why)}")
    return "\n".join(out) + "\n"


_COLOR = {"left": "#f8d7da", "late": "#fff3cd", "gone": "#d4edda", "flaky": "#e2e3f3",
          "?": "#eeeeee", "—": "#ffffff"}


def _plain(text: str) -> str:
    return text.replace("`", "")


def to_html(j: Join) -> str:
    e = html_text
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>Servers x hosts"
             "</title><style>body{font:14px sans-serif;margin:1em}table{border-collapse:"
             "collapse;margin-bottom:1.5em}td,th{border:1px solid #bbb;padding:2px 6px}"
             "th{background:#f4f4f4;position:sticky;top:0}td.c{text-align:center}"
             "</style></head><body><h1>Servers &times; hosts: which servers each host "
             "leaves running</h1><p>Derived from the survey's per-server verdicts and "
             "hostcheck's measured host ladders. Hover a cell for the measurement that "
             f"decided it. The survey: {e(str(j.survey_started or 'undated'))}.</p>"
             "<table><tr><th>host</th><th>style</th><th>measured in</th></tr>"]
    parts += [f"<tr><td>{e(_plain(h.name))}</td><td>{e(h.style)}</td>"
              f"<td>{e(h.source)}</td></tr>" for h in j.hosts]
    parts.append("</table>")
    for ev in _events_of(j):
        parts.append(f"<h2>When the host {e(EVENTS[ev])}</h2><table><tr><th>server</th>")
        parts += [f"<th title='{e(_counts(j, h.name, ev))}'>{e(_plain(h.name.split(' (')[0]))}"
                  "</th>" for h in j.hosts]
        parts.append("</tr>")
        for r in j.rows:
            parts.append(f"<tr><td>{e(r['label'])}</td>")
            for h in j.hosts:
                c = r["cells"][h.name][ev]
                parts.append(f"<td class='c' style='background:{_COLOR[c.state]}' "
                             f"title='{e(c.why)}'>{e(_MARK[c.state])}</td>")
            parts.append("</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mcp_tether.survey.hosts",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--survey", type=Path, default=Path("docs/survey-table.json"))
    ap.add_argument("--hosts", type=Path, default=Path("docs/hosts-check.md"))
    ap.add_argument("--hostcheck", action="append", default=[], metavar="NAME=FILE",
                    help="also a host measured by `mcp-tether hostcheck --json` (repeatable)")
    ap.add_argument("--out", metavar="BASE", help="write BASE.md, BASE.json, BASE.html")
    a = ap.parse_args(argv)
    try:
        survey = json.loads(a.survey.read_text())
        hosts = parse_hosts_md(a.hosts.read_text(), str(a.hosts))
        for spec in a.hostcheck:
            name, eq, path = spec.partition("=")
            if not eq:
                print(f"--hostcheck {spec!r}: expected NAME=FILE", file=sys.stderr)
                return 2
            hosts.append(parse_hostcheck_json(name, Path(path).read_text(), path))
    except (OSError, ValueError, KeyError) as exc:
        print(f"survey hosts: {exc}", file=sys.stderr)
        return 2
    j = join(survey, hosts)
    if a.out:
        for ext, text in (("md", to_markdown(j)), ("json", to_json(j)), ("html", to_html(j))):
            try:
                Path(f"{a.out}.{ext}").write_text(text)
            except OSError as exc:
                print(f"survey hosts: --out {a.out}.{ext}: {exc.strerror or exc}",
                      file=sys.stderr)
                return 2
    else:
        sys.stdout.write(to_markdown(j))
    return 0


if __name__ == "__main__":
    sys.exit(main())
