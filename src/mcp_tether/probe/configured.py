"""`mcp-tether probe --host NAME | --config FILE`: every configured stdio server, at once.

Guarantees:
- Each server starts exactly as its host would start it: variables expanded with the
  host's own syntax, `envFile` loaded, `cwd` resolved against the workspace (see
  `hosts.expand`).
- A configuration problem is an `error` row naming it (an unresolvable variable such as
  `${input:api-key}`, an unreadable envFile, a missing cwd, a command not found): never
  a verdict on the server. Disabled entries are `disabled` rows and remote entries
  `skipped` rows: both are listed, neither is started nor counted as passed; the run
  passes when every server that was probed passed.
- An entry behind our guard is probed with the guard in front, as the host runs it, and
  judged by the guard's promise (the probe widens the window to the guard's ladder).
- Each server's row says which level it meets (none / spec / robust); the run passes
  when every probed server passes at `--level` (spec by default).
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
from mcp_tether.probe.spec import SPEC, Spec

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
    if e.transport != "stdio":
        p.verdict, p.detail = "skipped", "remote (not a stdio server): not probed"
        return p
    if not e.command.strip():
        p.verdict, p.detail = "skipped", 'empty "command": nothing to run, not probed'
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
    from mcp_tether.probe.diagnose import annotate
    from mcp_tether.probe.runner import StopSignals, run_specs

    pairs, errors = _entries(args)
    for err in errors:
        print(f"mcp-tether probe: {err.msg}", file=sys.stderr)
    named = pairs
    if args.server:
        pairs = [(cf, e) for cf, e in pairs if e.name in args.server or e.label in args.server]
    if not pairs:
        if errors:
            raise TetherError("no readable config with servers")
        if named:
            raise UsageError(f"no server named {', '.join(args.server)}; there are: "
                             + ", ".join(dict.fromkeys(e.label for _, e in named)))
        if args.host:
            from mcp_tether import hosts

            places = hosts.searched(args.host, hosts.Machine.here())
            if not any(cf.path.exists() for cf in places):
                print(f"mcp-tether probe: no config file of {args.host} found; searched:",
                      file=sys.stderr)
                for cf in places:
                    print(f"  {cf.scope:<8} {cf.path}", file=sys.stderr)
                raise UsageError(f"nothing to probe for {args.host} (a file elsewhere: "
                                 "`mcp-tether probe --config FILE`)")
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

    specs: list[Spec] = []
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
        argv_of = {p.label: p.argv for p in runnable}
        for label in argv_of:  # each server's failures explained from its own command
            annotate([r for o, r in zip(owners, raw, strict=False) if o == label],
                     argv_of[label])
        for label, r in zip(owners, raw, strict=False):
            res = ScenarioResult.from_dict(r)
            res.label = label
            setattr(res, "raw", r)  # noqa: B010  # the timeline, for --html/--markdown
            rows.append(res)
    rows += [_row(p, opts.host_style) for p in planned if p.verdict in NOT_RUN]
    level = getattr(args, "level", SPEC)
    code = _emit(rows, args, level)
    commands = {p.label: p.argv for p in planned}
    for path, kind in ((args.html, "html"), (args.markdown, "markdown")):
        if path:
            code = _write_pictures(path, kind, rows, commands) or code
    if code is not None:
        return code
    probed = [r for r in rows if r.verdict not in NOT_RUN]
    ok = probed and all(r.passed for r in probed if r.counts_at(level))
    return EXIT_OK if ok else EXIT_FAILED


def sections(
    rows: list[ScenarioResult], commands: dict[str, list[str]]
) -> list[tuple[str, dict[str, Any]]]:
    """One picture section per configured server, in the matrix's order.

    A server that was not probed (disabled, remote, a config error) is a section with
    its one row and the reason, never a pass: its summary says "not probed".
    """
    import shlex

    from mcp_tether.probe.diagnose import summary

    out = []
    for label in dict.fromkeys(r.label for r in rows):
        mine = [r for r in rows if r.label == label]
        results = [dict(getattr(r, "raw", {}), **r.to_dict()) for r in mine]
        for r, d in zip(mine, results, strict=True):
            d["survivors"] = getattr(r, "raw", {}).get("survivors", d["survivors"])
        argv = commands.get(label) or []
        title = f"{label}: {shlex.join(argv)}" if argv else label
        if all(r.scenario == "*" for r in mine):
            line = f"not probed ({mine[0].verdict}): {mine[0].detail}"
        else:
            line = summary(results)
        out.append((title, {"results": results, "summary": line}))
    return out


def _write_pictures(
    path: str, kind: str, rows: list[ScenarioResult], commands: dict[str, list[str]]
) -> int | None:
    """--html / --markdown for a --host/--config run: one section per server."""
    from mcp_tether.errors import EXIT_USAGE

    title = "mcp-tether probe: configured servers"
    try:
        if kind == "html":
            from mcp_tether.probe.html import write_html

            write_html(path, sections(rows, commands), title=title)
        else:
            from mcp_tether.probe.markdown import write_markdown

            write_markdown(path, sections(rows, commands))
    except UsageError as exc:  # the writers' own one line, naming the option and file
        print(f"mcp-tether: cannot write {exc.msg}", file=sys.stderr)
        return EXIT_USAGE
    return None


def _emit(rows: list[ScenarioResult], args: argparse.Namespace, level: str) -> int | None:
    """Print the matrix (or JSON); --junit last. An exit code when the file failed."""
    from mcp_tether.probe import level_met, render
    from mcp_tether.probe.cli import write_junit_or_say

    servers = list(dict.fromkeys(r.label for r in rows))
    suites = {s: [r for r in rows if r.label == s] for s in servers}
    probed = [s for s in servers if all(r.verdict not in NOT_RUN for r in suites[s])]

    def passes(s: str) -> bool:
        return all(r.passed for r in suites[s] if r.counts_at(level))

    if args.json:
        render.render_json({
            "level": level,
            "passed": bool(probed) and all(passes(s) for s in probed),
            "servers": [
                {"name": s,
                 "meets": level_met(suites[s]) if s in probed else suites[s][0].verdict,
                 "guarded": any(r.guarded for r in suites[s]),
                 "results": [r.to_dict() for r in suites[s]]}
                for s in servers
            ],
        })
    else:
        render.render_matrix(rows, servers)
        if getattr(args, "detail", False):
            from mcp_tether.probe.timeline import print_timelines

            for s in probed:
                render.render_table(suites[s], title=s, level=level)
                print_timelines([dict(getattr(r, "raw", {}), **r.to_dict())
                                 for r in suites[s]])
        for s in probed:
            guarded = " (guarded)" if any(r.guarded for r in suites[s]) else ""
            print(f"  {s}: meets {level_met(suites[s])}{guarded}", file=sys.stderr)
        bad = sum(1 for s in probed if not passes(s))
        not_run = len(servers) - len(probed)
        tail = f" ({not_run} disabled or remote: not probed)" if not_run else ""
        print(f"{len(probed) - bad}/{len(probed)} servers passed at level {level}{tail}",
              file=sys.stderr)
        if bad and not all(any(r.guarded for r in suites[s]) for s in probed if not passes(s)):
            print("servers you cannot change: `mcp-tether wrap` puts the guard in front of "
                  "them", file=sys.stderr)
    return write_junit_or_say(args.junit, suites, level)
