"""`mcp-tether ps` and `mcp-tether reap`: show MCP servers with orphan evidence; end orphans.

Guarantees of `reap`:
- Only orphans selected by evidence are touched: by default both `parent-gone` and
  `stdin-no-writer`, and never a mere guess; `--include` widens on purpose.
- Each orphan tree climbs the ladder (`ladder.run_ladder`, no stdin to close: its client
  is gone): SIGTERM, grace, SIGKILL. Every signal is identity-checked right before it
  is sent (`proc.signal_process`; `proc.signal_group` only for a group made of nothing
  but the tree's own identified members), so a reused pid is never hit and a bystander
  that shares the orphan's process group is never signalled through the group.
- A process that exits between the scan and the signal is reported `gone`, not an error.
- Nothing is ended without a yes: a prompt on a TTY, else `--yes`; without either it
  refuses (exit 2). Only the caller's own processes unless root with `--all-users`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from mcp_tether import ladder
from mcp_tether.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError
from mcp_tether.proc import ExitWaiter, ProcessId, signal_group, signal_process, snapshot
from mcp_tether.proc.signals import DENIED, GONE, SENT
from mcp_tether.proc.tree import children_map
from mcp_tether.scan import HOST_GONE, PARENT_GONE, STDIN_NO_WRITER, STRONG, ScanResult, Server

__all__ = ["configure", "command", "select_orphans", "reap_servers", "ReapOutcome",
           "render_openmetrics", "INCLUDE_CHOICES"]

INCLUDE_CHOICES = (PARENT_GONE, STDIN_NO_WRITER, HOST_GONE, "guess")


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.add_argument("--config", metavar="FILE",
                        help="also match servers against this MCP config file")
    if name == "ps":
        parser.add_argument("--format", choices=("text", "json", "openmetrics"), default=None,
                            help="output format (openmetrics: for a node exporter's "
                                 "textfile collector)")
        return
    parser.add_argument("--dry-run", action="store_true", help="show the plan, end nothing")
    parser.add_argument("-y", "--yes", action="store_true", help="do not ask")
    parser.add_argument("--include", action="append", default=[], choices=INCLUDE_CHOICES,
                        metavar="EVIDENCE",
                        help="also end orphans with only this evidence, or guessed servers "
                             f"({'|'.join(INCLUDE_CHOICES)}); repeatable")
    parser.add_argument("--grace", type=float, default=ladder.TERM_GRACE, metavar="SECONDS",
                        help="between SIGTERM and SIGKILL (default %(default)s)")
    parser.add_argument("--all-users", action="store_true",
                        help="(root only) also end other users' orphans")


def command(args: argparse.Namespace) -> int:
    from mcp_tether import scan

    if args.command_name == "ps":
        result = scan.scan(config=args.config)
        _warn_config(result)
        fmt = args.format or ("json" if args.json else "text")
        if fmt == "json":
            print(json.dumps(result.to_dict(), indent=2))
        elif fmt == "openmetrics":
            sys.stdout.write(render_openmetrics(result))
        else:
            _print_ps(result)
        return EXIT_OK
    return _reap_command(args)


# ----- reap: the API --------------------------------------------------------------------


def select_orphans(result: ScanResult, include: set[str] | frozenset[str] = frozenset()
                   ) -> list[Server]:
    """Orphans `reap` would end: strong evidence, or evidence the caller included."""
    chosen = []
    for s in result.orphans:
        if s.guess and "guess" not in include:
            continue
        ev = set(s.evidence)
        if set(STRONG) <= ev or ev & include:
            chosen.append(s)
    return chosen


@dataclass
class ReapOutcome:
    server: Server
    outcome: str  # ended | gone (exited before we signalled) | denied | survived
    ended_by: str | None  # sigterm | sigkill | None
    reclaimed_bytes: int
    signals: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.server.pid, "start": self.server.ident.start,
                "command": self.server.command, "evidence": self.server.evidence,
                "outcome": self.outcome, "ended_by": self.ended_by,
                "reclaimed_bytes": self.reclaimed_bytes, "signals": self.signals}


class _TreeTarget:
    """A server tree as a ladder target: group signal when safe, members by identity."""

    def __init__(self, server: Server) -> None:
        self.pgid = server.members[0].pgid if server.members else -1
        self.members: dict[ProcessId, int] = {m.ident: m.rss_bytes for m in server.members}
        self.waiter = ExitWaiter()
        self.signalled: set[ProcessId] = set()
        self.log: list[dict[str, Any]] = []

    def close_stdin(self) -> None:  # its client is gone: nobody holds a stdin to close
        pass

    def _live(self) -> tuple[dict[int, Any], list[ProcessId]]:
        snap = snapshot()

        def same(i: ProcessId) -> bool:
            p = snap.get(i.pid)
            return p is not None and not p.exited and p.start == i.start

        live = [i for i in self.members if same(i)]
        # Children forked since the scan by a member we still identify are the tree's too.
        kids = children_map(snap)
        stack = [i.pid for i in live]
        while stack:
            for c in kids.get(stack.pop(), ()):
                if not c.exited and c.ident not in self.members:
                    self.members[c.ident] = 0
                    live.append(c.ident)
                    stack.append(c.pid)
        return snap, live

    def signal(self, sig: int) -> str:
        snap, live = self._live()
        if not live:
            return GONE
        sent = denied = False
        done: set[ProcessId] = set()
        in_group = [i for i in live if snap[i.pid].pgid == self.pgid]
        group = {p.pid for p in snap.values() if p.pgid == self.pgid and not p.exited}
        # killpg only when every process in the group is one of ours: an orphan may still
        # sit in its dead client's group next to processes we must not touch.
        if in_group and group <= {i.pid for i in live}:
            r = signal_group(self.pgid, sig, in_group)
            self.log.append({"signal": sig, "group": self.pgid, "result": r})
            if r == SENT:
                sent = True
                done.update(in_group)
            denied |= r == DENIED
        for ident in live:
            if ident in done:
                continue
            r = signal_process(ident, sig)
            self.log.append({"signal": sig, "pid": ident.pid, "start": ident.start, "result": r})
            if r == SENT:
                sent = True
                done.add(ident)
            denied |= r == DENIED
        for ident in done:  # only what we really signalled counts as ended by us
            self.signalled.add(ident)
            self.waiter.add(ident)
        if sent:
            return SENT
        return DENIED if denied else GONE

    def wait(self, timeout: float) -> float | None:
        deadline = time.monotonic() + timeout
        while self.waiter.pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.waiter.wait(remaining)
        if not self.signalled:  # nothing was live to signal: check now
            _, live = self._live()
            if live:
                return None
        exits = self.waiter.exited.values()
        return max(exits) if exits else time.monotonic()

    def reclaimed(self) -> int:
        gone = self.waiter.exited
        return sum(self.members.get(i, 0) for i in self.signalled if i in gone)


def reap_servers(servers: list[Server], grace: float = ladder.TERM_GRACE) -> list[ReapOutcome]:
    """End each server tree: SIGTERM, `grace`, SIGKILL; identity-checked every time."""
    out = []
    for s in servers:
        target = _TreeTarget(s)
        try:
            res = ladder.run_ladder(target, close_stdin=False, grace=0.0, term_grace=grace)
        finally:
            target.waiter.close()
        first = res.rungs[0].outcome if res.rungs else None
        if res.ended_by == "self" or (first == GONE and not target.signalled):
            outcome, by = "gone", None
        elif res.rungs and res.rungs[-1].outcome == DENIED:
            outcome, by = "denied", None
        elif res.survived:
            outcome, by = "survived", None
        else:
            outcome, by = "ended", res.ended_by
        out.append(ReapOutcome(s, outcome, by, target.reclaimed(), target.log))
    return out


# ----- reap: the command ------------------------------------------------------------------


def _reap_command(args: argparse.Namespace) -> int:
    from mcp_tether import scan

    if args.grace < 0:
        raise UsageError("--grace must be >= 0")
    root = os.geteuid() == 0 if hasattr(os, "geteuid") else False
    if args.all_users and not root:
        raise UsageError("--all-users needs root: other users' processes are theirs to end")
    users = None if args.all_users else {os.geteuid()} if hasattr(os, "geteuid") else None
    result = scan.scan(config=args.config, users=users)
    _warn_config(result)
    plan = select_orphans(result, set(args.include))
    if args.dry_run or not plan:
        if args.json:
            print(json.dumps({"dry_run": bool(args.dry_run), "plan": [s.to_dict() for s in plan],
                              "not_selected": [s.to_dict() for s in result.orphans
                                               if s not in plan]}, indent=2))
        else:
            _print_plan(plan, result)
        return EXIT_OK
    if not args.yes:
        if not (sys.stdin.isatty() and sys.stderr.isatty()):
            print(f"mcp-tether reap: {len(plan)} orphan(s) to end, but no terminal to ask on "
                  "and no --yes: refusing. Check with --dry-run, then pass --yes.",
                  file=sys.stderr)
            return EXIT_USAGE
        _print_plan(plan, result, to=sys.stderr)
        try:
            answer = input(f"End these {len(plan)} server tree(s)? [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing ended", file=sys.stderr)
            return EXIT_OK
    outcomes = reap_servers(plan, args.grace)
    if args.json:
        print(json.dumps({"reaped": [o.to_dict() for o in outcomes],
                          "reclaimed_bytes": sum(o.reclaimed_bytes for o in outcomes)},
                         indent=2))
    else:
        for o in outcomes:
            how = f" by {o.ended_by}" if o.ended_by else ""
            print(f"{o.outcome}{how}: pid {o.server.pid} {_short(o.server.command)}"
                  + (f" ({_size(o.reclaimed_bytes)})" if o.reclaimed_bytes else ""))
        ended = [o for o in outcomes if o.outcome == "ended"]
        print(f"ended {len(ended)} of {len(outcomes)}, reclaimed "
              f"{_size(sum(o.reclaimed_bytes for o in outcomes))}")
    bad = [o for o in outcomes if o.outcome in ("survived", "denied")]
    return EXIT_FAILED if bad else EXIT_OK


# ----- rendering ---------------------------------------------------------------------------


def _warn_config(result: ScanResult) -> None:
    for e in result.config_errors:
        print(f"mcp-tether: warning: {e}", file=sys.stderr)


def _size(n: int) -> str:
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if v < 1024 or unit == "GiB":
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    return f"{v:.1f} GiB"


def _age(s: float) -> str:
    s = int(s)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def _short(argv: list[str], width: int = 80) -> str:
    text = " ".join(argv)
    return text if len(text) <= width else text[: width - 1] + "…"


def _rows(result: ScanResult) -> list[list[str]]:
    rows = []
    for s in result.servers:
        what = ", ".join(f"{c['host']}/{c['name']}" for c in s.config) or (
            "guess" if s.guess else (f"under {s.host}" if s.host else ""))
        extra = f" [+{len(s.members) - 1}]" if len(s.members) > 1 else ""
        rows.append([s.state, str(s.pid), s.user, _age(s.age_seconds), _size(s.rss_bytes),
                     f"{s.cpu_percent:.1f}%", ",".join(s.evidence) or "-",
                     f"{s.parent['pid']} {s.parent['name'] or '?'}",
                     _short(s.command, 60) + extra, what])
    return rows


HEADERS = ["STATE", "PID", "USER", "AGE", "RSS", "CPU", "EVIDENCE", "PARENT", "COMMAND", "MATCH"]


def _totals_line(result: ScanResult) -> str:
    t = result.totals()
    line = (f"{t['servers']} MCP server(s): {t['orphans']} orphan(s) holding "
            f"{_size(t['orphan_rss_bytes'])}, {t['live']} live")
    if result.unreadable:
        line += f"; {result.unreadable} process(es) not readable, skipped"
    return line


def _print_ps(result: ScanResult) -> None:
    rows = _rows(result)
    if sys.stdout.isatty():
        from rich.console import Console  # lazily: only a human at a terminal pays
        from rich.table import Table

        table = Table(box=None, header_style="bold")
        for h in HEADERS:
            table.add_column(h, overflow="fold" if h == "COMMAND" else "ellipsis")
        for r in rows:
            style = "red" if r[0] == "orphan" else None
            table.add_row(*r, style=style)
        console = Console()
        if rows:
            console.print(table)
        console.print(_totals_line(result))
        return
    if rows:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADERS)]
        for r in [HEADERS, *rows]:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    print(_totals_line(result))


def _print_plan(plan: list[Server], result: ScanResult, to: Any = None) -> None:
    out = to or sys.stdout
    if not plan:
        print("nothing to reap", file=out)
    for s in plan:
        print(f"would end pid {s.pid} ({len(s.members)} process(es), {_size(s.rss_bytes)}) "
              f"[{', '.join(s.evidence)}]: {_short(s.command)}", file=out)
    left = [s for s in result.orphans if s not in plan]
    if left:
        print(f"{len(left)} other orphan(s) have weaker evidence; see --include", file=out)
    if plan:
        print(f"total: {len(plan)} tree(s), {_size(sum(s.rss_bytes for s in plan))}", file=out)


def render_openmetrics(result: ScanResult) -> str:
    """Gauges for a node exporter's textfile collector (OpenMetrics text, ends `# EOF`)."""
    t = result.totals()
    lines: list[str] = []

    def family(name: str, help_: str, samples: list[tuple[str, float]]) -> None:
        lines.append(f"# HELP {name} {help_}")
        lines.append(f"# TYPE {name} gauge")
        for labels, value in samples:
            lines.append(f"{name}{labels} {value:g}" if isinstance(value, float)
                         else f"{name}{labels} {value}")

    family("mcp_tether_servers", "MCP stdio server process trees on this machine, by state.",
           [('{state="orphan"}', t["orphans"]), ('{state="live"}', t["live"])])
    family("mcp_tether_orphan_rss_bytes", "Resident memory held by orphaned MCP server trees.",
           [("", t["orphan_rss_bytes"])])
    family("mcp_tether_server_rss_bytes", "Resident memory of MCP server trees, by state.",
           [('{state="orphan"}', t["orphan_rss_bytes"]), ('{state="live"}', t["live_rss_bytes"])])
    family("mcp_tether_orphans_by_evidence", "Orphaned MCP server trees with each evidence.",
           [(f'{{evidence="{e}"}}', sum(1 for s in result.orphans if e in s.evidence))
            for e in (PARENT_GONE, STDIN_NO_WRITER, HOST_GONE)])
    family("mcp_tether_unreadable_processes", "Processes the scan could not read.",
           [("", result.unreadable)])
    family("mcp_tether_config_errors", "Host config files that could not be read.",
           [("", len(result.config_errors))])
    lines.append("# EOF")
    return "\n".join(lines) + "\n"
