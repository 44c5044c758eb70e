"""The host check's renderings: text, JSON, Markdown and HTML of one `HostCheck`.

Pure rendering of the results' own numbers (ms since the host was spawned); the HTML
page is the probe's timeline renderer (`probe.html.render_html`), fed the same events.
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any

from mcp_tether.hostcheck.scenarios import VERDICT_WORDS
from mcp_tether.probe.html import render_html as page

__all__ = ["render_text", "render_json", "render_markdown", "render_html", "saw_line"]

_SAID = {"start": None, "grandchild": None, "request": None, "initialize": None,
         "initialized": "initialized", "stdin-eof": "EOF on stdin",
         "stdin-hangup": "stdin hung up", "stdin-error": "stdin read error",
         "stdout-closed": "stdout closed (EPIPE)", "parent-changed": "its parent changed",
         "second-copy": "a second copy started", "child-exit": "its child exited",
         "discover": "server/discover asked"}


def _ms(v: Any) -> str:
    return "?" if v is None else f"{float(v):.0f} ms"


def _copies(r: dict[str, Any], role: str) -> list[int]:
    """The pids of one role's processes, in the order they started (a reconnect: two)."""
    return list(dict.fromkeys(e["pid"] for e in r.get("recorded") or []
                              if e.get("role") == role and e.get("what") == "start"))


def saw_line(r: dict[str, Any], role: str, pid: int | None = None) -> str:
    """What one recorder process (or every one of `role`) saw, in order, with times."""
    items = []
    for e in r.get("recorded") or []:
        if e.get("role") != role or (pid is not None and e.get("pid") != pid):
            continue
        what = e.get("what")
        text = e.get("signal") if what == "signal" else _SAID.get(what, what)
        if text is None or text == "initialized":
            continue
        if what == "child-exit":
            text += f" (status {e.get('status')})"
        items.append(f"{text} at {_ms(e.get('t_ms'))}")
    return ", ".join(dict.fromkeys(items)) or "nothing"


def _exit_of(r: dict[str, Any], role: str, pid: int | None = None) -> str:
    pids = set(_copies(r, role)) if pid is None else {pid}
    left = {x["pid"] for x in r.get("left") or []}
    if pids & left:
        return "LEFT RUNNING (ended by the check's clean-up)"
    exits = [e for e in r.get("events") or [] if e.get("what") == "exit" and e.get("pid") in pids]
    if not exits:
        return "never started" if not pids else "gone"
    e = exits[-1]
    status = f" (status {e['status']})" if e.get("status") is not None else ""
    by = " by the check's clean-up" if e.get("by") else ""
    return f"gone at {_ms(e['t_ms'])}{status}{by}"


def _host_line(r: dict[str, Any]) -> str:
    if r.get("host_exit_ms") is None:
        return "still running"
    if r.get("host_ended_by_cleanup"):
        return "still running (ended by the check's clean-up)"
    return f"exited at {_ms(r['host_exit_ms'])} (status {r.get('host_status')})"


def render_text(result: Any, out: IO[str] | None = None) -> None:
    out = out or sys.stdout
    target = f"--host {result.host} -- " if result.host else "-- "
    print(f"mcp-tether hostcheck {target}{' '.join(result.argv)}", file=out)
    print("(times in ms since the host was started)", file=out)
    for r in result.results:
        print(f"\n{r['scenario']:<10} {r['verdict'].upper()}: {r.get('detail', '')}", file=out)
        if r["verdict"] in ("error", "skipped"):
            if r["verdict"] == "error" and r.get("host_output_tail"):
                tail = r["host_output_tail"].strip().splitlines()[-3:]
                print("  host output: " + " / ".join(tail), file=out)
            continue
        print(f"  {r.get('title', '')}: done at {_ms(r.get('action_ms'))}; recorder "
              f"initialized at {_ms(r.get('initialized_ms'))}; host {_host_line(r)}", file=out)
        for role, name in (("server", "server (recorder)"), ("grandchild", "grandchild")):
            pids: list[int | None] = [*_copies(r, role)] or [None]
            for n, pid in enumerate(pids, 1):
                label = name + (f" #{n} (pid {pid})" if len(pids) > 1 else "")
                print(f"  {label + ':':<19} saw {saw_line(r, role, pid)}; "
                      f"{_exit_of(r, role, pid)}", file=out)
        for o in r.get("others_left") or []:
            print(f"  also left: pid {o['pid']} {o['cmdline'][:80]}", file=out)
        for row in r.get("ps") or []:  # reconnect: what `ps` says of each running copy
            ev = f" [{', '.join(row['evidence'])}]" if row["evidence"] else ""
            print(f"  ps: pid {row['pid']} {row['state']}{ev}: {row['why']}", file=out)
        if r["verdict"] not in ("clean", "host-stayed"):
            print(f"  the spec: {r.get('spec', '')}", file=out)
    bad = [r["scenario"] for r in result.results if not r.get("passed")]
    print("\n" + (f"not clean: {', '.join(bad)}" if bad else "every scenario clean"), file=out)


def render_json(result: Any, out: IO[str] | None = None) -> None:
    """One JSON object per scenario (`scenario`, `verdict`, ...), one per line."""
    out = out or sys.stdout
    for r in result.results:
        out.write(json.dumps(r) + "\n")


def render_markdown(result: Any, out: IO[str] | None = None) -> None:
    out = out or sys.stdout
    target = f"--host {result.host} -- " if result.host else "-- "
    print(f"`mcp-tether hostcheck {target}{' '.join(result.argv)}`\n", file=out)
    print("| scenario | verdict | host exit | server saw | server | grandchild |", file=out)
    print("|---|---|---|---|---|---|", file=out)
    for r in result.results:
        if r["verdict"] in ("error", "skipped"):
            print(f"| {r['scenario']} | {r['verdict']} | {r.get('detail', '')} | | | |",
                  file=out)
            continue
        host = ("running" if r.get("host_exit_ms") is None or r.get("host_ended_by_cleanup")
                else _ms(r.get("host_exit_ms")))
        print(f"| {r['scenario']} | **{r['verdict']}** | {host} | {saw_line(r, 'server')} | "
              f"{_exit_of(r, 'server')} | {_exit_of(r, 'grandchild')} |", file=out)
    words = {r["verdict"] for r in result.results}
    print("", file=out)
    for v in sorted(words):
        print(f"- **{v}**: {VERDICT_WORDS.get(v, '')}", file=out)


def render_html(result: Any, title: str = "") -> str:
    results = []
    for r in result.results:
        row = dict(r)
        row["host_style"] = "host"
        row["diagnosis"] = (f"{VERDICT_WORDS.get(r['verdict'], r.get('detail', ''))}. "
                            f"Server saw: {saw_line(r, 'server')}; grandchild saw: "
                            f"{saw_line(r, 'grandchild')}.")
        if r["verdict"] not in ("clean", "skipped"):
            row["remedy"] = "The spec: " + str(r.get("spec", ""))
        results.append(row)
    clean = sum(1 for r in result.results if r["verdict"] == "clean")
    head = title or "mcp-tether hostcheck: " + " ".join(result.argv)
    summary = (f"{clean}/{len(results)} scenarios clean (lanes: the host, drawn as the "
               "client; the recorder; its grandchild)")
    return page([(head, {"results": results, "summary": summary})], title=head)
