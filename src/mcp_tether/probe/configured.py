"""`mcp-tether probe --host NAME | --config FILE`: every configured stdio server, at once.

Guarantees:
- Each server starts exactly as its host would start it: variables expanded with the
  host's own syntax, `envFile` loaded, `cwd` resolved against the workspace (see
  `hosts.expand`); an entry behind the guard is probed as its inner server.
- A configuration problem is an `error` row naming it (an unresolvable variable such as
  `${input:api-key}`, an unreadable envFile, a missing cwd, a command not found): never
  a verdict on the server. Disabled entries are `disabled` rows and remote entries
  `skipped` rows: both are listed, neither is started nor counted as passed; the run
  passes when every server that was probed passed.
- All scenarios of all servers run in parallel (8 servers take about as long as the
  slowest one). Probing starts the servers for real, so the list is shown and
  confirmed first, unless --yes.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

from mcp_tether.errors import EXIT_FAILED, EXIT_OK, ConfigError, TetherError, UsageError
from mcp_tether.probe import ProbeOptions, ScenarioResult, build_specs, resolve_command

NOT_RUN = ("skipped", "disabled")


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


@dataclasses.dataclass
class _Planned:
    """One configured server, resolved the host's way (or the reason it is not run)."""

    label: str
    argv: list[str]
    opts: ProbeOptions
    path: Path
    verdict: str = ""  # "" = probe it; else error / disabled / skipped
    detail: str = ""


def _entries(args: argparse.Namespace) -> tuple[list[tuple[Any, Any]], list[ConfigError]]:
    """(config file, entry) pairs of --config or of --host's files, and read errors."""
    from mcp_tether import hosts

    if args.host and args.host not in hosts.HOSTS:
        raise UsageError(f"unknown host {args.host!r} (known: {', '.join(hosts.HOSTS)})")
    if args.config:
        path = Path(args.config)
        files = [hosts.ConfigFile(args.host or hosts.guess_host(path) or "", "config", path)]
    else:
        files = hosts.discover(args.host)
    pairs: list[tuple[Any, Any]] = []
    errors: list[ConfigError] = []
    for cf in files:
        try:
            pairs += [(cf, e) for e in hosts.read_servers(cf.path, cf.host or None)]
        except ConfigError as exc:
            errors.append(exc)
    return pairs, errors


def _valid_text(words: list[str]) -> str | None:
    """Why these words cannot be an argv or environment (a NUL, a lone surrogate)."""
    for word in words:
        if "\0" in word:
            return f"{word!r} contains a NUL byte"
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            return f"{word.encode('utf-8', 'backslashreplace').decode()!r} is not valid Unicode"
    return None


def _plan(cf: Any, e: Any, opts: ProbeOptions) -> _Planned:
    """How the host would start entry `e` of file `cf`, as probe options."""
    from mcp_tether.hosts import REGISTRY
    from mcp_tether.hosts.expand import Unresolvable, resolve, workspace_of

    p = _Planned(e.label, [], opts, e.path)
    if e.transport != "stdio" or not e.command:
        p.verdict, p.detail = "skipped", "remote (not a stdio server): not probed"
        return p
    if e.disabled:
        p.verdict, p.detail = "disabled", "disabled in the config: not started"
        return p
    host = REGISTRY.get(e.host or "")
    style = host.variables if host else "none"
    base_env = {**os.environ, **(opts.env or {})}
    here = Path(opts.cwd or os.getcwd())
    try:
        got = resolve(e, style, env=base_env, home=Path.home(),
                      workspace=workspace_of(e.path, cf.scope, here))
    except Unresolvable as exc:
        p.verdict, p.detail = "error", f"config: {exc} (not started; not the server's fault)"
        return p
    bad = _valid_text([*got.argv, *got.env, *got.env.values(), got.cwd or ""])
    if bad:
        p.verdict, p.detail = "error", f"config: {bad}"
        return p
    if got.cwd is not None and not os.path.isdir(got.cwd):
        p.verdict, p.detail = "error", f"config: cwd {got.cwd} is not a folder"
        return p
    env = {**(opts.env or {}), **got.env}
    p.argv = got.argv
    p.opts = dataclasses.replace(opts, env=env or None, cwd=got.cwd or opts.cwd)
    try:
        resolve_command(p.argv, p.opts.env, p.opts.cwd)
    except TetherError as exc:
        p.verdict, p.detail = "error", exc.msg
    return p


def _row(p: _Planned, style: str) -> ScenarioResult:
    return ScenarioResult("*", style, p.verdict, False, None, None, None,
                          detail=p.detail, label=p.label)


def probe_configured(args: argparse.Namespace, opts: ProbeOptions) -> int:
    from mcp_tether.probe.runner import StopSignals, run_specs

    pairs, errors = _entries(args)
    for err in errors:
        print(f"mcp-tether probe: {err.msg}", file=sys.stderr)
    if args.server:
        pairs = [(cf, e) for cf, e in pairs if e.name in args.server or e.label in args.server]
    if not pairs:
        if errors:
            raise TetherError("no readable config with servers")
        raise UsageError("no MCP servers found in that config" + (
            f" (host {args.host})" if args.host else ""))
    planned = [_plan(cf, e, opts) for cf, e in pairs]
    runnable = [p for p in planned if not p.verdict]
    if not runnable and all(p.verdict in NOT_RUN for p in planned):
        raise UsageError("only remote or disabled servers there: nothing to probe")
    lines = [f"{p.label}: {' '.join(p.argv)}  ({p.path})" for p in runnable]
    if runnable and not _confirm(lines, args.yes):
        print("mcp-tether probe: nothing started", file=sys.stderr)
        return EXIT_OK

    specs: list[dict[str, Any]] = []
    owners: list[str] = []
    for p in runnable:
        for spec in build_specs(p.argv, p.opts):
            specs.append(spec)
            owners.append(p.label)
    rows = [_row(p, opts.host_style) for p in planned if p.verdict == "error"]
    if specs:
        with StopSignals("probe") as stop:
            raw = run_specs(specs, jobs=opts.jobs, should_stop=stop)
        if stop.signum:
            return 128 + stop.signum
        for label, r in zip(owners, raw, strict=False):
            res = ScenarioResult.from_dict(r)
            res.label = label
            rows.append(res)
    rows += [_row(p, opts.host_style) for p in planned if p.verdict in NOT_RUN]
    _emit(rows, args)
    probed = [r for r in rows if r.verdict not in NOT_RUN]
    return EXIT_OK if probed and all(r.passed for r in probed) else EXIT_FAILED


def _emit(rows: list[ScenarioResult], args: argparse.Namespace) -> None:
    from mcp_tether import report

    servers = list(dict.fromkeys(r.label for r in rows))
    probed = [s for s in servers if all(r.verdict not in NOT_RUN for r in rows if r.label == s)]
    if args.junit:
        report.write_junit(args.junit, {s: [r for r in rows if r.label == s] for s in servers})
    if args.json:
        report.render_json({
            "passed": bool(probed) and all(r.passed for r in rows if r.label in probed),
            "servers": [
                {"name": s, "results": [r.to_dict() for r in rows if r.label == s]}
                for s in servers
            ],
        })
        return
    report.render_matrix(rows, servers)
    if getattr(args, "detail", False):
        for s in probed:
            report.render_table([r for r in rows if r.label == s], title=s)
    bad = sum(1 for s in probed if not all(r.passed for r in rows if r.label == s))
    not_run = len(servers) - len(probed)
    tail = f" ({not_run} disabled or remote: not probed)" if not_run else ""
    print(f"{len(probed) - bad}/{len(probed)} servers passed every scenario{tail}",
          file=sys.stderr)
