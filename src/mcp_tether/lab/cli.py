"""`mcp-tether lab`: run the bundled fixtures through the probe; a summary, or every row."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from mcp_tether.cliprogress import Progress, add_quiet
from mcp_tether.cliutil import positive_duration as duration
from mcp_tether.cliutil import teach
from mcp_tether.errors import EXIT_FAILED, EXIT_OK, TetherError
from mcp_tether.inspect import Transport, sdks_for_command
from mcp_tether.jsonout import print_json
from mcp_tether.lab import BLOCKS, node_env, run_lab, server_levels
from mcp_tether.probe.diagnose import annotate, summary
from mcp_tether.probe.runner import StopSignals
from mcp_tether.report.files import write_junit_or_say, write_pictures
from mcp_tether.report.lab_summary import render_summary
from mcp_tether.report.text import render_table

if TYPE_CHECKING:
    from mcp_tether.probe import ScenarioResult
    from mcp_tether.probe.record import ScenarioRecord
    from mcp_tether.report.picture import Section

EPILOG = """\
blocks: reference (rows A-J: Node plain/timer/fixed x close/exit/crash, stubborn close),
  python (the official-SDK fixtures x close/exit/crash, python host style),
  wrappers (servers behind `sh -c '...; true'`, like npx), extra (devnull, stdout
  writers, inherited-writer, half-close, signals, idle, a daemonizing server),
  guarded (the orphan rows behind `mcp-tether run`: judged by the guard's promise, the
  window widened by the guard's grace + term-grace),
  tethered (the orphaning Python fixtures with `mcp_tether.run(mcp)`, every scenario).
The Node rows need node and npm: on first use the lab installs the pinned SDK into a
cache folder with `npm ci` (`mcp-tether lab --install-node` does only that).
A row that could not run (no answer to the handshake, say) is run once more on its own
before it is reported; a server with a row that still could not run gets no level.
exit code: 0 when every row ran (whatever its verdict: the lab shows, it does not judge),
  1 when a row could not run (verdict error), 2 set-up error.
"""

TITLE = "mcp-tether lab: does each server die with its client?"


EXAMPLES = (
    "mcp-tether lab                                     # every block: what leaks, what fixes it",
    "mcp-tether lab --block reference --html lab.html   # 10 rows, and a timeline of each",
    "mcp-tether lab --block python --table              # every row of one block",
)
WORDS = """\
row: one bundled server against one scenario (one way its client ends: close, exit,
crash...). Its verdict is what the server's whole process tree did then: exited,
terminated, killed, or orphaned (still running once its client is gone: the leak);
every verdict and scenario: `mcp-tether probe --help`. level: per server, the best of
none / spec / robust its rows reach (spec: what the MCP specification asks)."""


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    teach(parser, EXAMPLES, WORDS, usage="mcp-tether lab [--block NAME]... "
          "[--table | --json] [--html FILE] [options]")
    parser.epilog = EPILOG + "\n" + (parser.epilog or "")
    parser.add_argument("--block", action="append", choices=BLOCKS,
                        help="run only this block (repeatable)")
    out = parser.add_argument_group("output (a summary per block on stdout by default)")
    out.add_argument("--table", action="store_true",
                     help="print every row (the default is a summary per block)")
    out.add_argument("--json", action="store_true", help="one JSON document (docs/json.md)")
    out.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    out.add_argument("--html", metavar="FILE",
                     help="also write a self-contained HTML timeline of every row to FILE")
    out.add_argument("--markdown", metavar="FILE",
                     help="also write a compact Markdown summary to FILE")
    timing = parser.add_argument_group("timing")
    timing.add_argument("--jobs", type=int, default=None,
                        help="scenarios at once (default two per CPU, at most 8; the "
                        "reference block runs its 10 rows at once)")
    timing.add_argument("--window", type=duration, default=None,
                        help="seconds the tree may take after its client is gone (2)")
    timing.add_argument("--ready-timeout", type=duration, default=None,
                        help="seconds a server may stay idle and silent before a handshake "
                        "answer is given up (10); while it works, the wait goes on")
    parser.add_argument("--install-node", action="store_true",
                        help="only install the Node fixtures' pinned SDK, then exit")
    add_quiet(parser)


def command(args: argparse.Namespace) -> int:
    if args.install_node:
        path = node_env.ensure()
        print(f"mcp-tether lab: Node fixtures ready in {path}", file=sys.stderr)
        return EXIT_OK
    blocks = tuple(args.block) if args.block else BLOCKS
    if args.jobs is not None and args.jobs < 1:
        raise TetherError("--jobs must be at least 1")
    with StopSignals("lab") as stop, Progress("lab", quiet=args.quiet) as progress:
        results = run_lab(blocks, jobs=args.jobs, window=args.window,
                          ready_timeout=args.ready_timeout, should_stop=stop,
                          quiet=args.quiet, progress=progress)
    if stop.signum:
        return 128 + stop.signum
    levels = server_levels(results)
    sections = _annotated(results, blocks)  # also what the summary and --json rows say
    if args.json:
        print_json("lab", [_json_row(r) for r in results], levels=levels)
    elif args.table:
        render_table(
            results,
            title=TITLE,
            with_label=True,
            blocks=[(b, [r for r in results if r.block == b]) for b in blocks],
        )
        width = max((len(n) for n in levels), default=0)
        print("level met per server (none / spec / robust, over the rows it has):",
              file=sys.stderr)
        for name, word in levels.items():
            print(f"  {name:<{width}}  {word}", file=sys.stderr)
    else:
        render_summary(results, blocks, levels)
    code = write_pictures("lab", sections, html=args.html, markdown=args.markdown,
                          title=TITLE)
    suites = {b: [r for r in results if r.block == b] for b in blocks}
    code = write_junit_or_say(args.junit, suites, "spec") or code
    errors = [r for r in results if r.verdict == "error"]
    if errors:
        print(f"mcp-tether lab: {len(errors)} row(s) could not run", file=sys.stderr)
    if code is not None:
        return code
    return EXIT_FAILED if errors else EXIT_OK


def _annotated(results: list[ScenarioResult], blocks: tuple[str, ...]) -> list[Section]:
    """Each row's full result with its diagnosis and remedy, grouped by block."""
    cache: dict[str, list[Transport]] = {}

    def locate(argv: list[str]) -> list[Transport]:
        key = "\0".join(argv)
        if key not in cache:
            cache[key] = sdks_for_command(argv)
        return cache[key]

    sections: list[Section] = []
    for b in blocks:
        rows = []
        for r in results:
            if r.block != b:
                continue
            d: ScenarioRecord = {**(r.record or r.to_dict()), "label": r.label, "block": b}
            annotate([d], d.get("argv") or [], locate=locate)
            r.record = d  # the summary reads the remedy from here
            rows.append(d)
        sections.append((f"lab: {b}", {"results": rows, "server_summaries": _per_server(rows)}))
    return sections


def _json_row(r: ScenarioResult) -> ScenarioRecord:
    """A row of `lab --json`: the typed result, its block, and (failed rows) the
    diagnosis and remedy `_annotated` derived, with the remedy as data (`remedy_steps`,
    `remedy_guard`), as `probe --json` has them: on the rows `annotate` gave them to."""
    raw = r.record
    row: ScenarioRecord = {**r.to_dict(), "block": r.block,
                           "diagnosis": (raw.get("diagnosis") if raw else None) or r.diagnosis,
                           "remedy": (raw.get("remedy") if raw else None) or r.remedy}
    if raw and "remedy_steps" in raw:
        row["remedy_steps"] = raw["remedy_steps"]
    if raw and "remedy_guard" in raw:
        row["remedy_guard"] = raw["remedy_guard"]
    return row


def _per_server(rows: list[ScenarioRecord]) -> list[tuple[str, str]]:
    """The lab mixes servers in a block: one summary line per server (label minus row)."""
    servers = list(dict.fromkeys(str(r.get("label", "")).partition(" ")[2] for r in rows))
    return [(s, summary([r for r in rows if str(r.get("label", "")).partition(" ")[2] == s]))
            for s in servers]
