"""`mcp-tether probe --host NAME | --config FILE`: every configured stdio server, at once.

All scenarios of all servers run in parallel (so 8 servers take about as long as the
slowest one, not the sum). A server that cannot start is an `error` row; the others go
on. Remote entries are listed as skipped. Probing starts the servers for real, so the
list is shown and confirmed first, unless --yes.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from mcp_tether.errors import EXIT_FAILED, EXIT_OK, TetherError, UsageError
from mcp_tether.probe import ProbeOptions, ScenarioResult, build_specs, resolve_command
from mcp_tether.probe.spec import SPEC, Spec


def _confirm(lines: list[str], yes: bool) -> bool:
    print("mcp-tether probe will start these servers for real:", file=sys.stderr)
    for line in lines:
        print(f"  {line}", file=sys.stderr)
    if yes:
        return True
    if not sys.stdin or not sys.stdin.isatty():
        raise UsageError("not asking without a terminal: pass --yes to probe these servers")
    answer = input("probe them? [y/N] ").strip().lower()
    return answer in ("y", "yes")


def probe_configured(args: argparse.Namespace, opts: ProbeOptions) -> int:
    from mcp_tether.hosts import configured_servers
    from mcp_tether.probe.runner import StopSignals, run_specs

    entries, errors = configured_servers(host=args.host, config=args.config)
    for err in errors:
        print(f"mcp-tether probe: {err.msg}", file=sys.stderr)
    if args.server:
        entries = [e for e in entries if e.name in args.server or e.label in args.server]
    if not entries:
        if errors:
            raise TetherError("no readable config with servers")
        raise UsageError("no MCP servers found in that config" + (
            f" (host {args.host})" if args.host else ""))
    stdio = [e for e in entries if e.transport == "stdio" and e.command and not e.disabled]
    skipped = [e for e in entries if e not in stdio]
    plan = [f"{e.label}: {' '.join([e.command or '', *e.args])}  ({e.path})" for e in stdio]
    if not stdio:
        raise UsageError("only remote or disabled servers there: nothing to probe")
    if not _confirm(plan, args.yes):
        print("mcp-tether probe: nothing started", file=sys.stderr)
        return EXIT_OK

    specs: list[Spec] = []
    owners: list[str] = []
    rows: list[ScenarioResult] = []
    for e in stdio:
        argv = [e.command or "", *e.args]
        o = dataclasses.replace(opts, env={**(opts.env or {}), **e.env} or None,
                                cwd=e.cwd or opts.cwd)
        try:
            resolve_command(argv, o.env, o.cwd)
        except TetherError as exc:
            rows.append(ScenarioResult("*", o.host_style, "error", False, None, None, None,
                                       detail=exc.msg, label=e.label))
            continue
        for spec in build_specs(argv, o):
            specs.append(spec)
            owners.append(e.label)
    with StopSignals("probe") as stop:
        raw = run_specs(specs, jobs=opts.jobs, should_stop=stop)
    if stop.signum:
        return 128 + stop.signum
    for label, r in zip(owners, raw, strict=False):
        res = ScenarioResult.from_dict(r)
        res.label = label
        rows.append(res)
    for e in skipped:
        why = "remote (no command)" if e.transport != "stdio" else "disabled"
        rows.append(ScenarioResult("*", opts.host_style, "skipped", True, None, None, None,
                                   detail=why, label=e.label))
    level = getattr(args, "level", SPEC)
    code = _emit(rows, args, level)
    if code is not None:
        return code
    return EXIT_OK if all(r.passed for r in rows if r.counts_at(level)) else EXIT_FAILED


def _emit(rows: list[ScenarioResult], args: argparse.Namespace, level: str) -> int | None:
    from mcp_tether.probe import level_met, render
    from mcp_tether.probe.cli import write_junit_or_say

    servers = list(dict.fromkeys(r.label for r in rows))
    suites = {s: [r for r in rows if r.label == s] for s in servers}
    if args.json:
        render.render_json({
            "level": level,
            "passed": all(r.passed for r in rows if r.counts_at(level)),
            "servers": [
                {"name": s, "meets": level_met(suites[s]),
                 "guarded": any(r.guarded for r in suites[s]),
                 "results": [r.to_dict() for r in suites[s]]}
                for s in servers
            ],
        })
    else:
        render.render_matrix(rows, servers)
        if getattr(args, "detail", False):
            for s in servers:
                render.render_table(suites[s], title=s, level=level)
        bad = sum(1 for s in servers if not all(r.passed for r in suites[s] if r.counts_at(level)))
        print(f"{len(servers) - bad}/{len(servers)} servers passed at level {level}",
              file=sys.stderr)
    return write_junit_or_say(args.junit, suites, level)
