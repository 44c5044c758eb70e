"""`mcp-tether probe`: argv -> ProbeOptions -> probe() -> table / JSON / JUnit."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import TYPE_CHECKING, Any

from mcp_tether import hosts
from mcp_tether.cliprogress import Progress, add_quiet
from mcp_tether.cliutil import positive_duration, teach
from mcp_tether.errors import (
    EXIT_FAILED,
    EXIT_OK,
    CommandNotExecutable,
    CommandNotFound,
    TetherError,
    UsageError,
)
from mcp_tether.escape import terminal
from mcp_tether.hosts.model import ServerEntry
from mcp_tether.jsonout import print_json
from mcp_tether.packages import policy_line, prepare
from mcp_tether.packages.options import add_policy_options, policy_from
from mcp_tether.packages.spec import is_package_spec, parse_spec
from mcp_tether.probe.api import ProbeOptions, ProbeReport, ScenarioResult, probe
from mcp_tether.probe.configured import (
    NOT_RUN,
    ConfiguredOptions,
    ConfiguredReport,
    PlannedServer,
    plan_configured,
    probe_planned,
)
from mcp_tether.probe.diagnose import explain_line, summary
from mcp_tether.probe.interfere import rerun_note, suggest_jobs_1
from mcp_tether.probe.runner import StopSignals
from mcp_tether.probe.scenarios import HOST_STYLES, SCENARIOS, all_scenarios
from mcp_tether.probe.spec import (
    IDLE,
    LEVELS,
    READY_CEILING,
    READY_TIMEOUT,
    ROBUST,
    SPEC,
    WINDOW,
)
from mcp_tether.report.files import write_junit_or_say, write_pictures
from mcp_tether.report.text import render_fixes, render_matrix, render_table
from mcp_tether.report.timeline import print_timelines

if TYPE_CHECKING:
    from mcp_tether.report.picture import Picture, Section


def _examples() -> str:
    rows = "\n".join(f"  {s.name:<17} [{s.level}] {s.description}" for s in all_scenarios())
    return f"""\
more examples:
  mcp-tether probe --json -- uvx mcp-server-time
  mcp-tether probe --level robust -- python -m my_server
  mcp-tether probe --host-style python -s close -s crash -- python -m my_server
  mcp-tether probe --call toggle-logging '{{}}' -- npx -y some-server   # busy state
  mcp-tether probe pypi:mcp-server-time==2026.10.19 --launch direct -- --local-timezone UTC
  mcp-tether probe --config .mcp.json --yes

scenarios [level]:
{rows}

levels: spec = what the MCP specification asks of a stdio server (exits at stdin EOF
  however the client ends, stays up while connected and idle, ends on SIGTERM);
  robust = what real hosts need beyond it (SIGINT, a leaked stdin writer).
  A failed robust scenario at --level spec is shown as a warning.
verdicts: exited (by itself), terminated (needed SIGTERM), killed (needed SIGKILL),
  lingered (outlived the window, gone within the horizon), orphaned (still alive at the
  horizon), alive (idle: still answers), early-exit (died before the trigger),
  error (could not run the scenario). Verdicts are on the whole tree: a launcher that
  exits while its daemon or helper keeps the stdio is judged on them, not early-exit.
a server behind `mcp-tether run` is judged by the guard's promise: its window covers
  the guard's grace + term-grace, and the report names the guard's rung.
packages: npm:NAME[@VERSION] / pypi:NAME[==VERSION] (or npm:./dir, pypi:./x.whl) is
  installed once into ~/.cache/mcp-tether/packages ($MCP_TETHER_CACHE), then launched as
  a host would: --launch npx (npm default), uvx (PyPI default when uvx is installed,
  else direct) or direct (the installed command). Offline, the newest cached version is
  used. Installing runs none of its code: npm --ignore-scripts (--allow-scripts runs
  them), pip wheels only (--allow-build builds sdists); probing runs the server itself,
  as you. Exit 127: the package cannot be fetched; 126: it has no server command;
  2: a malformed spec or an unusable cache folder.
exit 1 here means: some scenario of the level failed (2 also when the --junit file
  could not be written, after the results were printed)
"""


EXAMPLES = (
    "mcp-tether probe -- node server.js           # an `orphaned` row: the server leaks",
    "mcp-tether probe npm:@modelcontextprotocol/server-memory   # by package, as hosts run it",
    "mcp-tether probe --host claude-code          # every stdio server that host runs",
)
WORDS = """\
scenario: one way a client can end (close, exit, crash...: the list below), played
against the server by a real short-lived client. verdict: what the server's whole
process tree did then; orphaned (still running at the horizon, its client gone) is the
leak. level: spec = the scenarios the MCP specification asks a stdio server to pass,
robust = what real hosts need beyond it; the exit code is 0 when every scenario of
--level passed."""
USAGE = """mcp-tether probe [options] -- COMMAND [ARGS...]
       mcp-tether probe [options] npm:PACKAGE | pypi:PACKAGE [-- ARGS...]
       mcp-tether probe [options] --host HOST | --config FILE"""


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    # The options written after a package spec are read by this same parser, again.
    parser.set_defaults(parser=parser)
    teach(parser, EXAMPLES, WORDS, usage=USAGE)
    parser.epilog = _examples() + "\n" + (parser.epilog or "")
    run = parser.add_argument_group("the scenarios")
    run.add_argument(
        "--host-style", choices=HOST_STYLES, default="node",
        help="how the client treats the server: node (socketpair stdio, SIGTERM to the "
        "direct child, stdio destroyed when it exits; like Electron/Node hosts, the "
        "default) or python (pipes, new session, signals to the group; like the Python SDK)",
    )
    run.add_argument(
        "-s", "--scenario", action="append", metavar="NAME", dest="scenarios",
        help=f"run only this scenario (repeatable; comma lists too): {', '.join(SCENARIOS)}",
    )
    run.add_argument("--level", choices=LEVELS, default=SPEC,
                     help="which scenarios decide the exit code: spec (default) or robust")
    run.add_argument("--call", nargs=2, metavar=("TOOL", "JSON"),
                     help="call a tool after the handshake, to probe the busy state; "
                     "adds the call-in-flight scenario")
    run.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                     help="extra environment for the server (repeatable)")
    run.add_argument("--cwd", help="working directory for the server")
    run.add_argument("--jobs", type=int, help="scenarios at once (default: all)")
    timing = parser.add_argument_group("timing (seconds)")
    timing.add_argument("--window", type=positive_duration, default=WINDOW,
                        help=f"seconds the tree may take after its client is gone ({WINDOW:g})")
    timing.add_argument("--horizon", type=positive_duration, default=None,
                        help="seconds survivors are still watched after the window, to tell "
                        "lingered from orphaned (default: --grace + --term-grace)")
    timing.add_argument("--idle", type=positive_duration, default=IDLE,
                        help=f"seconds of silence in the idle scenario ({IDLE:g})")
    timing.add_argument("--ready-timeout", type=positive_duration, default=READY_TIMEOUT,
                        help="seconds a server may stay idle and silent before a handshake answer "
                        f"is given up ({READY_TIMEOUT:g}); while its processes use CPU or "
                        f"start, the wait goes on, up to {READY_CEILING}x this")
    timing.add_argument("--grace", type=positive_duration, default=None,
                        help="client ladder: seconds after closing stdin before SIGTERM (2)")
    timing.add_argument("--term-grace", type=positive_duration, default=None,
                        help="client ladder: seconds after SIGTERM before SIGKILL (2)")
    out = parser.add_argument_group("output (a table on stdout by default)")
    out.add_argument("--json", action="store_true",
                     help="one JSON document on stdout (docs/json.md)")
    out.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    out.add_argument("--html", metavar="FILE",
                     help="also write a self-contained HTML timeline to FILE")
    out.add_argument("--markdown", metavar="FILE",
                     help="also write a compact Markdown summary to FILE (CI job pages)")
    add_quiet(parser)
    src = parser.add_argument_group("configured servers (instead of a command)")
    src.add_argument("--host", help="probe every stdio server of this host's configs")
    src.add_argument("--config", metavar="FILE", help="probe every stdio server in FILE")
    src.add_argument("--server", action="append", metavar="NAME",
                     help="with --host/--config: only these servers")
    out.add_argument("--detail", action="store_true",
                        help="after the table, each scenario's timeline as text: the spawn "
                        "of each process, handshake, trigger, EOF and signals sent, each "
                        "exit with its cause, window and horizon (ms since the client was "
                        "forked; what --html draws); with --host/--config: also one table "
                        "and the timelines per server")
    src.add_argument("--yes", action="store_true",
                     help="do not ask before starting configured servers")
    pkg = parser.add_argument_group("a package instead of a command (npm:NAME[@VERSION], "
                                    "pypi:NAME[==VERSION])")
    pkg.add_argument("--launch", choices=("npx", "uvx", "direct"),
                     help="how the host starts it: npx (npm default), uvx (PyPI default "
                     "where uvx is installed, else direct) or direct (the installed command)")
    pkg.add_argument("--bin", metavar="NAME",
                     help="the package's command to run, where it has several")
    add_policy_options(pkg)
    parser.add_argument("cmd", nargs=argparse.REMAINDER,
                        help="-- the server command, or PACKAGE [OPTIONS] [-- ARGS]")


def _options(args: argparse.Namespace) -> ProbeOptions:
    scenarios: list[str] = []
    for item in args.scenarios or []:
        names = [s.strip() for s in item.split(",") if s.strip()]
        if not names:
            raise UsageError(f"-s {item!r} names no scenario (choose from {', '.join(SCENARIOS)})")
        scenarios += names
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
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    ladder = {k: v for k, v in (("grace", args.grace), ("term_grace", args.term_grace))
              if v is not None}
    return ProbeOptions(
        host_style=args.host_style,
        scenarios=tuple(scenarios) or None,
        window=args.window,
        idle=args.idle,
        ready_timeout=args.ready_timeout,
        horizon=args.horizon,
        call=call,
        env=env or None,
        cwd=args.cwd,
        jobs=args.jobs,
        **ladder,
    )


def command(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    elif cmd and not is_package_spec(cmd[0]):
        _refuse_our_options_without_dashes(cmd)
    if cmd and is_package_spec(cmd[0]):
        cmd = _package_command(cmd, args)
    elif args.launch or args.bin or args.allow_scripts or args.allow_build:
        raise UsageError("--launch, --bin, --allow-scripts and --allow-build go with a "
                         "package spec (npm:NAME, pypi:NAME)")
    opts = _options(args)
    if args.host or args.config:
        if cmd:
            raise UsageError("give either a command or --host/--config, not both")
        return _configured(args, opts)
    if not cmd:
        raise UsageError("no server command given: mcp-tether probe [OPTIONS] -- CMD [ARGS...]")
    try:
        with StopSignals("probe") as stop, Progress("probe", quiet=args.quiet) as progress:
            report = probe(cmd, opts, level=args.level, should_stop=stop, progress=progress)
    except (CommandNotFound, CommandNotExecutable) as exc:
        _files_for_a_start_error(args, cmd, exc)
        raise
    if stop.signum:
        return 128 + stop.signum
    code = emit(report, args)
    if code is not None:
        return code
    if report.start_error in (126, 127):
        return int(report.start_error)
    return EXIT_OK if report.passed else EXIT_FAILED


def _package_command(words: list[str], args: argparse.Namespace) -> list[str]:
    """`PACKAGE [OUR OPTIONS] [-- SERVER ARGS]`: install it, return the host's command
    line (args.cwd set to npx's project folder where that launch needs one)."""
    spec, rest = words[0], words[1:]
    cut = rest.index("--") if "--" in rest else len(rest)
    ours, server_args = rest[:cut], rest[cut + 1:]
    if ours:  # options written after the spec are still ours
        args.parser.parse_args(ours, namespace=args)
        if args.cmd:
            raise UsageError(f"{' '.join(args.cmd)}: put the server's arguments after `--`: "
                             f"mcp-tether probe {spec} [OPTIONS] -- ARGS")
    parsed = parse_spec(spec)
    got = prepare(parsed, bin=args.bin, launch=args.launch, args=server_args,
                  policy=policy_from(args, parsed))
    if got.cwd is not None:
        if args.cwd:
            raise UsageError("--cwd cannot be combined with --launch npx (npx runs in the "
                             "package's cache folder to find it); use --launch direct")
        args.cwd = got.cwd
    how = "installed" if got.installed else "cached"
    print("mcp-tether probe: " + terminal(
        f"{got.spec.text} -> {got.name} {got.version} ({how} in {got.dir}); "
        f"{got.launch}: {shlex.join(got.argv)}"), file=sys.stderr)
    print("mcp-tether probe: "
          + terminal(policy_line(got.spec, got.policy, got.install_scripts)), file=sys.stderr)
    for note in got.notes:
        print(f"mcp-tether probe: note: {terminal(note)}", file=sys.stderr)
    return got.argv


def _refuse_our_options_without_dashes(cmd: list[str]) -> None:
    """`probe node server.mjs -s close` would pass `-s close` to the server: refuse it."""
    ours = ("-s", "--scenario", "--level", "--window", "--horizon", "--json", "--junit",
            "--html", "--markdown", "--host-style", "--call", "--env", "--cwd", "--idle",
            "--ready-timeout", "--grace", "--term-grace", "--jobs")
    mine = [w for w in cmd[1:] if w.split("=", 1)[0] in ours]
    if mine:
        raise UsageError(
            f"{' '.join(mine)} after the server command would go to the server; put `--` "
            f"between the probe's options and the command: mcp-tether probe [OPTIONS] -- "
            f"{shlex.join([w for w in cmd if w not in mine][:2])} ...")


def emit(report: ProbeReport, args: argparse.Namespace) -> int | None:
    """Print the report; write --html/--markdown/--junit last. An exit code when a file
    could not be written (the results were shown first)."""
    payload = report.to_dict()
    # The keepers' records carry what the typed result leaves out (the timeline, each
    # survivor's evidence); the typed fields win where both have a key.
    payload["results"] = [r.json_row() for r in report.results]
    payload["summary"] = summary(payload["results"])
    payload["rerun_alone"] = [d["scenario"] for d in payload["results"] if d.get("rerun")]
    payload["suggest_jobs_1"] = suggest_jobs_1(payload["results"])
    title = f"mcp-tether probe: {shlex.join(report.command)}"
    if args.json:
        fields: dict[str, Any] = {k: v for k, v in payload.items() if k != "results"}
        print_json("probe", payload["results"], **fields)
    else:
        for r, d in zip(report.results, payload["results"], strict=True):
            r.explain = explain_line(d)  # shown under the row
        passed = sum(r.passed for r in report.results)
        render_table(report.results, title=title, level=report.level)
        render_fixes(payload["results"])
        warn = [r.scenario for r in report.results if r.warning_only and report.level != ROBUST]
        extra = f"; robust warnings: {', '.join(warn)}" if warn else ""
        print(f"{passed}/{len(report.results)} scenarios passed; meets level: {report.meets}"
              f"{extra}; {payload['summary']}", file=sys.stderr)
        again = rerun_note(payload["results"])
        if again:
            print(again, file=sys.stderr)
        told = any("mcp-tether run --" in str(d.get("remedy") or "")
                   for d in payload["results"])  # the fix above already says it
        if not report.passed and not told and not any(r.guarded for r in report.results):
            print("a server you cannot change: put it behind the guard, "
                  f"`mcp-tether run -- {shlex.join(report.command)}` (or `mcp-tether wrap`)",
                  file=sys.stderr)
        if getattr(args, "detail", False):
            sys.stdout.flush()
            print_timelines(payload["results"])
    picture: Picture = {"results": payload["results"], "summary": payload["summary"]}
    code = write_pictures("probe", [(title, picture)], html=getattr(args, "html", None),
                          markdown=getattr(args, "markdown", None))
    return write_junit_or_say(args.junit, {shlex.join(report.command): report.results},
                              report.level) or code


# What to check when the command could not be started: the remedy of its one result.
START_REMEDY = {
    127: "Install the server, or give its path; the probe runs the command as given "
         "(relative to --cwd), looking it up on PATH",
    126: "Make the file executable (chmod +x) or run it through its interpreter "
         "(`node server.js`, `python server.py`)",
}


def _start_error_result(exc: TetherError, host_style: str = "node") -> ScenarioResult:
    """The one result of a probe whose command could not be started (127 / 126)."""
    code = int(getattr(exc, "exit_code", 127))
    return ScenarioResult(
        scenario="start", host_style=host_style, verdict="error", passed=False,
        exit_ms=None, rung=None, exit_status=None, error_code=code,
        detail=f"the command could not be started: {exc} (exit {code})",
        diagnosis=f"The command could not be started: {exc} (exit {code}).",
        remedy=START_REMEDY.get(code, "Check the command"),
    )


def _files_for_a_start_error(args: argparse.Namespace, cmd: list[str], exc: Exception) -> None:
    """127/126: --junit and --markdown are still written (CI reads them), then the
    error goes on to the CLI's one line and exit code."""
    r = _start_error_result(exc, args.host_style)  # type: ignore[arg-type]
    title = f"mcp-tether probe: {shlex.join(cmd)}"
    d = r.to_dict()
    picture: Picture = {"results": [d], "summary": d.get("diagnosis") or ""}
    write_pictures("probe", [(title, picture)], html=getattr(args, "html", None),
                   markdown=getattr(args, "markdown", None))
    write_junit_or_say(args.junit, {shlex.join(cmd): [r]}, args.level)


# --- configured servers: --host NAME / --config FILE --------------------------------


def _configured(args: argparse.Namespace, opts: ProbeOptions) -> int:
    """Read the configs, show what will start and ask (unless --yes), probe, report."""
    entries = _entries(args)
    planned = plan_configured(entries, ConfiguredOptions(opts, args.level))
    runnable = [p for p in planned if p.runnable]
    if not runnable and all(p.verdict in NOT_RUN for p in planned):
        raise UsageError("only remote or disabled servers there: nothing to probe")
    if runnable and not _confirm(runnable, args.yes):
        print("mcp-tether probe: nothing started", file=sys.stderr)
        return EXIT_OK
    with StopSignals("probe") as stop, Progress("probe", quiet=args.quiet) as progress:
        report = probe_planned(planned, ConfiguredOptions(opts, args.level), should_stop=stop,
                               progress=progress)
    if stop.signum:
        return 128 + stop.signum
    code = _emit_configured(report, args)
    if args.html or args.markdown:  # one section per server
        commands = {s.label: s.argv for s in report.servers}
        code = write_pictures("probe", sections(report.results, commands), html=args.html,
                              markdown=args.markdown,
                              title="mcp-tether probe: configured servers") or code
    if code is not None:
        return code
    return EXIT_OK if report.passed else EXIT_FAILED


def _entries(args: argparse.Namespace) -> list[ServerEntry]:
    """The entries of --config (its host named or guessed) or of --host's files; the
    --server ones only. Unreadable files are said on stderr; nothing left is an error."""
    if args.host and args.host not in hosts.HOSTS:
        raise UsageError(f"unknown host {args.host!r} (known: {', '.join(hosts.HOSTS)})")
    named, errors = hosts.configured_servers(args.host, args.config or None, guess=True)
    for err in errors:
        print(f"mcp-tether probe: {err.msg}", file=sys.stderr)
    entries = named
    if args.server:
        entries = [e for e in named if e.name in args.server or e.label in args.server]
    if entries:
        return entries
    if errors:
        raise TetherError("no readable config with servers")
    if named:
        raise UsageError(f"no server named {', '.join(args.server)}; there are: "
                         + ", ".join(dict.fromkeys(e.label for e in named)))
    if args.host:
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


def _confirm(runnable: list[PlannedServer], yes: bool) -> bool:
    """Show what will start for real; ask unless --yes (and refuse to ask without a TTY)."""
    print("mcp-tether probe will start these servers for real:", file=sys.stderr)
    for p in runnable:
        print("  " + terminal(f"{p.label}: {' '.join(p.argv)}  ({p.path})"), file=sys.stderr)
    if yes:
        return True
    if not sys.stdin or not sys.stdin.isatty():
        raise UsageError("not asking without a terminal: pass --yes to probe these servers")
    answer = input("probe them? [y/N] ").strip().lower()
    return answer in ("y", "yes")


def _emit_configured(report: ConfiguredReport, args: argparse.Namespace) -> int | None:
    """Print the matrix (or JSON); --junit last. An exit code when the file failed."""
    level = report.level
    if args.json:
        doc = report.to_dict()
        print_json("probe-config", doc["servers"], level=doc["level"], passed=doc["passed"])
    else:
        render_matrix(report.results, [s.label for s in report.servers])
        if args.detail:
            for s in report.probed:
                render_table(s.results, title=s.label, level=level)
                print_timelines([r.json_row() for r in s.results])
        for s in report.probed:
            guarded = " (guarded)" if s.guarded else ""
            print(f"  {terminal(s.label)}: meets {s.meets}{guarded}", file=sys.stderr)
        failed = [s for s in report.probed if not s.passes(level)]
        not_run = len(report.servers) - len(report.probed)
        tail = f" ({not_run} disabled or remote: not probed)" if not_run else ""
        print(f"{len(report.probed) - len(failed)}/{len(report.probed)} servers passed at "
              f"level {level}{tail}", file=sys.stderr)
        if failed and not all(s.guarded for s in failed):
            print("servers you cannot change: `mcp-tether wrap` puts the guard in front of "
                  "them", file=sys.stderr)
    return write_junit_or_say(args.junit, {s.label: s.results for s in report.servers}, level)


def sections(rows: list[ScenarioResult], commands: dict[str, list[str]]) -> list[Section]:
    """One picture section per configured server, in the matrix's order.

    A server that was not probed (disabled, remote, a config error) is a section with
    its one row and the reason, never a pass: its summary says "not probed".
    """
    out: list[Section] = []
    for label in dict.fromkeys(r.label for r in rows):
        mine = [r for r in rows if r.label == label]
        results = [r.json_row() for r in mine]
        argv = commands.get(label) or []
        title = f"{label}: {shlex.join(argv)}" if argv else label
        if all(r.scenario == "*" for r in mine):
            line = f"not probed ({mine[0].verdict}): {mine[0].detail}"
        else:
            line = summary(results)
        out.append((title, {"results": results, "summary": line}))
    return out
