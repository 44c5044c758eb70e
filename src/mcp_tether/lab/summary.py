"""The lab's default output: what each block shows, its takeaway, and the fix per leak.

The full table stays one flag away (`--table`, `--json`, `--html`); this is what a
newcomer reads first. Everything here is derived from the rows' verdicts and the
probe's diagnosis of each failed row, never written per fixture.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import IO, Any

from mcp_tether.probe import ScenarioResult

__all__ = ["BLOCK_STORY", "render_summary"]

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


def _fix(r: ScenarioResult) -> str:
    raw: dict[str, Any] = getattr(r, "raw", None) or r.to_dict()
    remedy = str(raw.get("remedy") or "").strip()
    return remedy.splitlines()[0] if remedy else ""


def render_summary(
    results: list[ScenarioResult], blocks: tuple[str, ...], levels: dict[str, str],
    out: IO[str] | None = None,
) -> None:
    """Per block: what it shows, verdict counts, the takeaway, and each leak with its fix."""
    out = out or sys.stdout
    w = out.write
    w("mcp-tether lab: does each server die with its client?\n")
    for block in blocks:
        rows = [r for r in results if getattr(r, "block", "") == block]
        if not rows:
            continue
        shows, takeaway = BLOCK_STORY.get(block, (block, ""))
        counts = Counter(r.verdict for r in rows)
        tally = ", ".join(f"{n} {v}" for v, n in counts.most_common())
        w(f"\n{block}: {shows}\n  {len(rows)} rows: {tally}\n")
        failed = [r for r in rows if r.verdict == "error"]
        if failed:  # the takeaway is what the rows show: not stated on rows not seen
            w(f"  takeaway: not stated, {len(failed)} of {len(rows)} rows could not run\n")
            for r in failed:
                w(f"  {r.label} {r.scenario}: could not run: {r.detail}\n")
        elif takeaway:
            w(f"  takeaway: {takeaway}\n")
        leaks = [r for r in rows if r.verdict in ("orphaned", "lingered")]
        first: dict[str, str] = {}  # a fix already shown -> the row it was shown for
        for r in leaks:
            fix = _fix(r)
            if fix and fix in first:
                fix_text = f"; fix: as for {first[fix]}"
            else:
                fix_text = f"; fix: {fix}" if fix else ""
                first[fix] = f"{r.label.split()[0]} {r.scenario}" if r.label else r.scenario
            w(f"  {r.label} {r.scenario}: {r.verdict}{fix_text}\n")
        skipped = [r for r in rows if r.verdict == "skipped"]
        if skipped:
            w(f"  skipped: {skipped[0].detail.removeprefix('skipped: ')}\n")
    if levels:
        width = max(len(n) for n in levels)
        w("\nlevel met per server (none / spec / robust, over the rows it has):\n")
        for name, word in levels.items():
            w(f"  {name:<{width}}  {word}\n")
    w("\nEvery row: `mcp-tether lab --table`; timelines: `--html FILE`; "
      "what the verdicts mean: docs/probe.md\n")
