"""The lab's default output: what each block shows, its takeaway, and the fix per leak.

The full table stays one flag away (`--table`, `--json`, `--html`); this is what a
newcomer reads first. Everything here is derived from the rows' verdicts and the
probe's diagnosis of each failed row, never written per fixture.
"""

from __future__ import annotations

import sys
import textwrap
from collections import Counter
from typing import IO, TYPE_CHECKING

from mcp_tether.escape import terminal
from mcp_tether.lab import server_name
from mcp_tether.probe import ScenarioResult
from mcp_tether.probe.spec import ROBUST, SPEC
from mcp_tether.report.fixes import GUARD_LEGEND, number_fixes
from mcp_tether.report.legend import legend

if TYPE_CHECKING:
    from mcp_tether.probe.record import ScenarioRecord

__all__ = ["BLOCK_STORY", "render_summary"]

WIDTH = 100

# What each block shows (the question it answers), and the sentence to read when every
# row came out as the reference table says.
BLOCK_STORY: dict[str, tuple[str, str]] = {
    "reference": (
        "Node servers on @modelcontextprotocol/sdk: plain, with one timer, and fixed by hand",
        "one timer is enough to orphan a Node server when its client exits or crashes; "
        "four stdin/signal listeners and a run-once shutdown fix it",
    ),
    "python": (
        "Python servers on the official mcp SDK with a thread, a task group, an executor",
        "a non-daemon thread, a stuck task group or an executor keeps a Python server "
        "alive after its client is gone",
    ),
    "wrappers": (
        "the same servers launched through `sh -c` (like npx/uvx wrappers)",
        "killing only the direct child of a wrapper leaves the real server behind",
    ),
    "extra": (
        "stdin at EOF from the start, stdout writers, a leaked stdin writer, half-close, "
        "signals, idle",
        "EOF never comes while another process holds stdin's write end: only a "
        "parent-death watch catches that",
    ),
    "guarded": (
        "every orphan row again, behind `mcp-tether run` (the guard)",
        "the guard ends them within its ladder once the client is gone, without changing "
        "the server, a stdin already at EOF (devnull) included",
    ),
    "tethered": (
        "the orphaning Python servers with `mcp_tether.run(mcp)` added",
        "two lines inside a Python server make it end on every trigger",
    ),
}


def _raw(r: ScenarioResult) -> ScenarioRecord:
    return r.record or r.to_dict()


def _wrapped(out: IO[str], text: str, indent: str = "  ", hang: str = "    ") -> None:
    out.write(textwrap.fill(terminal(text), WIDTH, initial_indent=indent, subsequent_indent=hang,
                            break_on_hyphens=False, break_long_words=False) + "\n")


def render_summary(
    results: list[ScenarioResult], blocks: tuple[str, ...], levels: dict[str, str],
    out: IO[str] | None = None,
) -> None:
    """Per block: what it shows, verdict counts, the takeaway, and each leak pointing to
    its fixes; then every fix once, and the level per server with a legend."""
    out = out or sys.stdout
    w = out.write
    leaks = [r for b in blocks for r in results
             if r.block == b and r.verdict in ("orphaned", "lingered")]
    fixes = number_fixes(_raw(r) for r in leaks)  # numbered in the order they are shown
    w("mcp-tether lab: does each server die with its client?\n")
    for block in blocks:
        rows = [r for r in results if r.block == block]
        if not rows:
            continue
        shows, takeaway = BLOCK_STORY.get(block, (block, ""))
        w(f"\n{block}: {shows}\n  {len(rows)} rows: {_tally(rows)}\n")
        failed = [r for r in rows if r.verdict == "error"]
        if failed:  # the takeaway is what the rows show: not stated on rows not seen
            w(f"  takeaway: not stated, {len(failed)} of {len(rows)} rows could not run\n")
            for r in failed:
                w(f"  {r.label} {r.scenario}: could not run: {r.detail}\n")
        elif takeaway:
            _wrapped(out, f"takeaway: {takeaway}")
        alike: dict[str, list[str]] = {}  # the leaks of one verdict and fix: one line
        for r in (r for r in rows if r in leaks):
            fix = fixes.pointer(_raw(r))
            alike.setdefault(r.verdict + (f", fix {fix}" if fix else ""), []).append(
                f"{r.label} {r.scenario}")
        for head, names in alike.items():
            _wrapped(out, f"{head}: {', '.join(names)}", hang="    ")
        skipped = [r for r in rows if r.verdict == "skipped"]
        if skipped:
            w(f"  skipped: {skipped[0].detail.removeprefix('skipped: ')}\n")
    if fixes.steps or fixes.guarded:
        w("\nfixes (the rows above point to them):\n")
        for n, step in enumerate(fixes.steps, 1):
            _wrapped(out, f"[{n}] {step}", hang="    ")
        if fixes.guarded:
            _wrapped(out, f"[G] {GUARD_LEGEND}")
    if levels:
        w("\nlevel per server [host style], over the rows it has:\n")
        by: dict[str, dict[str, list[str]]] = {}  # level -> [tag] -> servers
        for name, word in levels.items():
            server, _, tag = name.rpartition(" ")
            by.setdefault(word, {}).setdefault(tag, []).append(server)
        for word, tags in by.items():
            said = "; ".join(f"{tag} {', '.join(names)}" for tag, names in tags.items())
            _wrapped(out, f"{word}: {said}", hang="    ")
        _wrapped(out, _legend(results, levels), indent="", hang="  ")
    w("\nEvery row: `mcp-tether lab --table`; timelines: `--html FILE`; "
      "what the verdicts mean: docs/probe.md\n")


def _tally(rows: list[ScenarioResult]) -> str:
    """`32 exited, 4 alive (...)`: each verdict's count, in the words of what it means
    where the word alone misleads: a verdict that is the expected answer of its rows (the
    idle scenario's `alive`: still answering) says so, where it is counted."""
    counts = Counter(r.verdict for r in rows)
    out = []
    for verdict, n in counts.most_common():
        mine = [r for r in rows if r.verdict == verdict]
        scenarios = sorted({r.scenario for r in mine})
        if verdict not in ("exited", "terminated") and all(r.passed for r in mine):
            out.append(f"{n} {verdict} (the {', '.join(scenarios)} rows: {verdict} is "
                       "the expected answer there, a pass)")
        else:
            out.append(f"{n} {verdict}")
    return ", ".join(out)


def _legend(results: list[ScenarioResult], levels: dict[str, str]) -> str:
    """What the tags and the level words mean, with the servers spec is the ceiling of."""
    has_robust = {server_name(r) for r in results
                  if r.level == ROBUST and r.verdict != "skipped"}
    at_spec = [name for name, word in levels.items() if word == SPEC]
    capped = [name for name in at_spec if name not in has_robust]
    why = (f" ({len(capped)} of these {len(at_spec)} had no robust row to pass: spec is "
           "their ceiling)") if capped else ""
    return legend((r.host_style for r in results), why)
