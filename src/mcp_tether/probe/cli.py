"""`mcp-tether probe`: argv -> ProbeOptions -> probe() -> table / JSON / JUnit."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mcp_tether.errors import EXIT_FAILED, EXIT_OK, UsageError
from mcp_tether.probe.scenarios import DESCRIPTIONS, HOST_STYLES, SCENARIOS

EXAMPLES = """\
examples:
  mcp-tether probe -- node server.js
  mcp-tether probe --json -- uvx mcp-server-time
  mcp-tether probe --host-style python -s close -s crash -- python -m my_server
  mcp-tether probe --call toggle-logging '{}' -- npx -y some-server   # busy state
  mcp-tether probe --host claude-code          # every stdio server that host runs
  mcp-tether probe --config .mcp.json --yes

scenarios:
""" + "\n".join(f"  {n:<17} {d}" for n, d in DESCRIPTIONS.items()) + """

verdicts: exited (by itself), terminated (needed SIGTERM), killed (needed SIGKILL),
  orphaned (part of its tree outlived the window), alive (idle: still answers),
  early-exit (died before the trigger), error (could not run the scenario)
exit code: 0 every scenario passed, 1 some failed, 2 usage or set-up error,
  126/127 the server command is not executable / not found
"""


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.epilog = EXAMPLES + "\n" + (parser.epilog or "")
    parser.add_argument(
        "--host-style", choices=HOST_STYLES, default="node",
        help="how the client treats the server: node (socketpair stdio, SIGTERM to the "
        "direct child; like Electron/Node hosts, the default) or python (pipes, new "
        "session, signals to the group; like the Python SDK)",
    )
    parser.add_argument(
        "-s", "--scenario", action="append", metavar="NAME", dest="scenarios",
        help=f"run only this scenario (repeatable; comma lists too): {', '.join(SCENARIOS)}",
    )
    parser.add_argument("--window", type=float, default=2.0,
                        help="seconds the tree may take after its client is gone (default 2)")
    parser.add_argument("--idle", type=float, default=3.0,
                        help="seconds of silence in the idle scenario (default 3)")
    parser.add_argument("--ready-timeout", type=float, default=10.0,
                        help="seconds to wait for each handshake answer (default 10)")
    parser.add_argument("--grace", type=float, default=2.0,
                        help="client ladder: seconds after closing stdin before SIGTERM (2)")
    parser.add_argument("--term-grace", type=float, default=2.0,
                        help="client ladder: seconds after SIGTERM before SIGKILL (2)")
    parser.add_argument("--call", nargs=2, metavar=("TOOL", "JSON"),
                        help="call a tool after the handshake, to probe the busy state")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="extra environment for the server (repeatable)")
    parser.add_argument("--cwd", help="working directory for the server")
    parser.add_argument("--json", action="store_true", help="print JSON (stable schema)")
    parser.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    parser.add_argument("--html", metavar="FILE",
                        help="also write a self-contained HTML timeline to FILE")
    parser.add_argument("--markdown", metavar="FILE",
                        help="also write a compact Markdown summary to FILE (CI job pages)")
    parser.add_argument("--jobs", type=int, help="scenarios at once (default: all)")
    src = parser.add_argument_group("configured servers (instead of a command)")
    src.add_argument("--host", help="probe every stdio server of this host's configs")
    src.add_argument("--config", metavar="FILE", help="probe every stdio server in FILE")
    src.add_argument("--server", action="append", metavar="NAME",
                     help="with --host/--config: only these servers")
    src.add_argument("--detail", action="store_true",
                     help="with --host/--config: also one table per server")
    src.add_argument("--yes", action="store_true",
                     help="do not ask before starting configured servers")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="-- the server command")


def _options(args: argparse.Namespace) -> Any:
    from mcp_tether.probe import ProbeOptions

    scenarios: list[str] = []
    for item in args.scenarios or []:
        scenarios += [s.strip() for s in item.split(",") if s.strip()]
    call = None
    if args.call:
        try:
            arguments = json.loads(args.call[1])
        except ValueError as exc:
            raise UsageError(f"--call: the arguments are not JSON: {exc}") from None
        if not isinstance(arguments, dict):
            raise UsageError("--call: the arguments must be a JSON object")
        call = (args.call[0], arguments)
    env = {}
    for kv in args.env:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            raise UsageError(f"--env wants KEY=VALUE, got {kv!r}")
        env[key] = value
    for name in ("window", "idle", "ready_timeout", "grace", "term_grace"):
        if getattr(args, name) < 0:
            raise UsageError(f"--{name.replace('_', '-')} must not be negative")
    return ProbeOptions(
        host_style=args.host_style,
        scenarios=tuple(scenarios) or None,
        window=args.window,
        idle=args.idle,
        ready_timeout=args.ready_timeout,
        grace=args.grace,
        term_grace=args.term_grace,
        call=call,
        env=env or None,
        cwd=args.cwd,
        jobs=args.jobs,
    )


def command(args: argparse.Namespace) -> int:
    from mcp_tether.probe import ProbeReport, ScenarioResult, build_specs, resolve_command
    from mcp_tether.probe.runner import StopSignals, run_specs

    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    opts = _options(args)
    if args.host or args.config:
        if cmd:
            raise UsageError("give either a command or --host/--config, not both")
        if args.html or args.markdown:  # not wired into the per-server matrix yet
            raise UsageError("--html/--markdown work with a server command, not --host/--config")
        from mcp_tether.probe.configured import probe_configured

        return probe_configured(args, opts)
    if not cmd:
        raise UsageError("no server command given: mcp-tether probe [OPTIONS] -- CMD [ARGS...]")
    resolve_command(cmd, opts.env, opts.cwd)
    specs = build_specs(cmd, opts)
    with StopSignals("probe") as stop:
        raw = run_specs(specs, jobs=opts.jobs, should_stop=stop)
    if stop.signum:
        return 128 + stop.signum
    from mcp_tether.probe.diagnose import annotate

    annotate(raw, cmd)
    report = ProbeReport(cmd, [ScenarioResult.from_dict(r) for r in raw])
    emit(report, args, raw)
    return EXIT_OK if report.passed else EXIT_FAILED


def emit(report: Any, args: argparse.Namespace, raw: list[dict[str, Any]] | None = None) -> None:
    import shlex

    from mcp_tether import report as render
    from mcp_tether.probe.diagnose import explain_line, summary

    payload = report.to_dict()
    if raw is not None:  # the keepers' dicts carry what the typed result drops
        payload["results"] = [
            dict(r, **d) for r, d in zip(raw, payload["results"], strict=True)
        ]
        for d, r in zip(payload["results"], raw, strict=True):
            d["survivors"] = r.get("survivors", d["survivors"])
        payload["summary"] = summary(payload["results"])
    title = f"mcp-tether probe: {shlex.join(report.command)}"
    if getattr(args, "junit", None):
        render.write_junit(args.junit, {shlex.join(report.command): report.results})
    if getattr(args, "html", None):
        from mcp_tether.probe.html import write_html

        write_html(args.html, [(title, payload)])
    if getattr(args, "markdown", None):
        from mcp_tether.probe.markdown import write_markdown

        write_markdown(args.markdown, [(title, payload)])
    if args.json:
        render.render_json(payload)
        return
    for r, d in zip(report.results, payload["results"], strict=True):
        setattr(r, "explain", explain_line(d))  # noqa: B010  # shown under the row, not JSON
    passed = sum(r.passed for r in report.results)
    render.render_table(report.results, title=title)
    if raw is not None:
        print(f"{passed}/{len(report.results)} scenarios passed; {payload['summary']}",
              file=sys.stderr)
    else:
        print(f"{passed}/{len(report.results)} scenarios passed", file=sys.stderr)
