"""`mcp-tether hostcheck`: argv -> check() -> text / JSON / Markdown / HTML."""

from __future__ import annotations

import argparse

from mcp_tether.cliprogress import Progress, add_quiet
from mcp_tether.cliutil import positive_duration, teach
from mcp_tether.errors import UsageError
from mcp_tether.hostcheck import HOLDS, check, default_scenarios
from mcp_tether.hostcheck.config import SCOPES
from mcp_tether.hostcheck.keys import KEYS
from mcp_tether.hostcheck.modelhosts import APIS
from mcp_tether.hostcheck.scenarios import SCENARIOS, VERDICT_WORDS
from mcp_tether.jsonout import print_json
from mcp_tether.probe.runner import StopSignals
from mcp_tether.report.hostcheck import render_html, render_markdown, render_text

EXAMPLES = (
    "mcp-tether hostcheck -- node host.mjs {server}      # {server}: the recorder's command",
    "mcp-tether hostcheck --host claude-code -s exit -- claude mcp list",
    "mcp-tether hostcheck --host codex -s subagents --min-age 20 -- codex exec {prompt}",
)
WORDS = """\
recorder: a stand-in MCP server the host starts in place of {server} (separate
arguments); it records what the host does to it: the signals it gets, whether its stdin
is closed first, its group and session. scenario: one way the host ends (exit, Ctrl-C,
hang-up, SIGTERM, crash...: the list below), each with a fresh host. verdict: what then
became of the recorder and its child (the list below). With --host NAME the recorder is
written into that host's config in a throwaway HOME and project instead (the host runs
there, npm's cache stays where it was)."""
USAGE = "mcp-tether hostcheck [options] -- HOST-ARGV... ({server} where the server goes)"
MORE = """\
more examples:
  mcp-tether hostcheck -s exit -s sigkill --json -- python my_host.py {server}
  mcp-tether hostcheck -- npx @modelcontextprotocol/inspector --cli {server} --method tools/list
  mcp-tether hostcheck --wrapper --recorder-signals stay -- python my_host.py {server}

A host that reloads an edited server only on a command (Claude Code: /mcp, the
server, Reconnect) gets it typed by --after-edit steps, run in order after the
reconnect's edit, each wait bounded by --host-timeout: wait=TEXT waits until TEXT is on
the terminal's output since the last keys (escape sequences removed, white space runs
count as one space); keys=TEXT types TEXT, where {keys} are keys and <lt> is a "<":
  mcp-tether hostcheck --host claude-code --host-scope project --pty -s reconnect \\
    --ready-timeout 120 --after-edit "wait=? for shortcuts" --after-edit keys=/mcp \\
    --after-edit "wait=Manage MCP servers" --after-edit "keys=<Enter>" \\
    --after-edit "wait=mcp-tether-recorder" --after-edit "keys=<Enter>" \\
    --after-edit "wait=Reconnect" --after-edit "keys=<Down>" \\
    --after-edit "wait=❯ Reconnect" --after-edit "keys=<Enter>" -- claude

Tool-calling scenarios (idle, subagents, calls-reconnect; run only when named) drive
the host through real calls of the recorder's tool, offline: a stand-in for the model
API on 127.0.0.1 (Anthropic Messages or OpenAI Responses) follows a script (steady
calls, subagents spawned and closed, pauses longer than --min-age). The host gets its
URL from --model-env VAR or {model_url} in its command line (built in: --host
claude-code, --host codex), and the prompt from {prompt}, typed under --pty (after
--prompt-wait TEXT shows), or on its stdin. They report copies per agent, which copy
answered each call, what closing an agent or ending the old copy did:
  mcp-tether hostcheck --host claude-code -s subagents -s idle -- claude -p {prompt}
  mcp-tether hostcheck --model-api openai --model-env OPENAI_BASE_URL -s idle \\
    -- python my_agent.py {server}

The recorder holds the host at --hold (its answer to tools/list, by default) until the
scenario's trigger is sent, so that a one-shot host is ended by the scenario and not by
its own end of work; a host that was already ending the server before the trigger gets
`preempted`, not a verdict. Each row lists, per process (wrapper, server, grandchild),
the signals it got, whether its stdin was closed first, and its group and session
beside the host's.

scenarios (each runs a fresh host; one-shot hosts are judged by `exit`):
{scenarios}

verdicts:
{verdicts}
exit 0: every scenario clean (host-stayed, measured and skipped count as clean);
1: otherwise; 127/126: the host command is missing / not executable; 2: bad arguments.
"""


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    rows = "\n".join(f"  {s.name:<15} {s.title}" for s in SCENARIOS.values())
    verdicts = "\n".join(f"  {v:<19} {w}" for v, w in VERDICT_WORDS.items())
    names = ", ".join(f"<{k}>" for k in KEYS if k != "lt")
    teach(parser, EXAMPLES, WORDS, usage=USAGE)
    parser.epilog = MORE.replace("{scenarios}", rows).replace("{verdicts}", verdicts) \
        .replace("{keys}", names) \
        + "\n" + (parser.epilog or "")
    host = parser.add_argument_group("the host and the scenarios")
    host.add_argument("--host", metavar="NAME",
                      help="write the recorder into this host's config (see `mcp-tether "
                      "hosts`) in a throwaway HOME and project, and run the host there")
    host.add_argument("--host-scope", choices=SCOPES, metavar="SCOPE",
                      help="with --host: write the recorder into the host's user or project "
                      "config file (default: its first file of either; Claude Code's "
                      "project file is .mcp.json)")
    host.add_argument("--pty", action="store_true",
                      help="run the host under a pseudo-terminal (hosts that need one)")
    host.add_argument("--after-edit", action="append", default=[], metavar="STEP",
                      help="reconnect under --pty: after the edit, wait=TEXT (until the "
                      "host's terminal shows TEXT) or keys=TEXT (type TEXT; <Enter>, "
                      "<Esc>, <Up>, <Down>, ... are keys); repeatable, in order")
    host.add_argument("--quit", metavar="TEXT",
                      help="what the exit scenario types before stdin EOF (e.g. /quit)")
    host.add_argument("--wrapper", action="store_true",
                      help="put a wrapper that forwards no signal (as `sh -c 'SERVER; "
                      "true'` and npm do) between the host and the recorder")
    host.add_argument("-s", "--scenario", action="append", dest="scenarios", metavar="NAME",
                      help=f"run only this scenario (repeatable): {', '.join(SCENARIOS)}")
    model = parser.add_argument_group("the tool-calling scenarios (the stand-in model)")
    model.add_argument("--model-api", choices=APIS,
                       help="the model API the host speaks (built in for --host "
                       "claude-code: anthropic, --host codex: openai)")
    model.add_argument("--model-env", action="append", default=[], metavar="VAR",
                       help="set VAR to the stand-in's base URL for the host (repeatable; "
                       "or put {model_url} in its command line)")
    model.add_argument("--min-age", type=positive_duration, default=30.0, metavar="S",
                       help="the idle gap the scenarios pause for is longer than this "
                       "(as reap's --min-age; 30)")
    model.add_argument("--prompt-wait", metavar="TEXT",
                       help="under --pty: type the prompt once the host's terminal shows "
                       "TEXT (else once it started the recorder)")
    rec = parser.add_argument_group("the recorder")
    rec.add_argument("--hold", choices=HOLDS, default="tools/list",
                     help="where the recorder keeps the host waiting until the trigger: "
                     "its answer to tools/list (the default; a host that sends none "
                     "within --hold-wait s of `initialized` is triggered unheld), to "
                     "initialize, or none (the trigger races a one-shot host's own end)")
    rec.add_argument("--hold-wait", type=positive_duration, default=5.0, metavar="S",
                     help="seconds after `initialized` a tools/list hold waits for one (5)")
    rec.add_argument("--recorder-eof", choices=("stay", "exit"), default="stay",
                     help="the recorder at stdin EOF: stay (the default: the host must "
                     "end it) or exit (a server that honours EOF)")
    rec.add_argument("--recorder-signals", choices=("die", "stay"), default="die",
                     help="the recorder at SIGTERM/SIGINT/SIGHUP/SIGQUIT: die (the "
                     "default, as servers do) or stay (record and go on: the host's "
                     "whole ladder shows)")
    rec.add_argument("--no-grandchild", action="store_true",
                     help="the recorder starts no child of its own")
    timing = parser.add_argument_group("timing and running")
    timing.add_argument("--ready-timeout", type=positive_duration, default=30.0, metavar="S",
                        help="seconds for the host to initialize the recorder (30)")
    timing.add_argument("--host-timeout", type=positive_duration, default=15.0, metavar="S",
                        help="seconds for the host to exit after the scenario's action (15)")
    timing.add_argument("--settle", type=positive_duration, default=1.0, metavar="S",
                        help="seconds the recorder's processes may take after the host (1)")
    timing.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                        help="scenarios run at once, each with its own host (1: hosts do "
                        "not compete for the machine; timings change, verdicts should not)")
    output = parser.add_argument_group("output (text on stdout by default)")
    out = output.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON document (docs/json.md)")
    out.add_argument("--markdown", action="store_true", help="a Markdown table")
    output.add_argument("--html", metavar="FILE", help="also write the timelines to FILE")
    add_quiet(parser)
    parser.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- HOST-ARGV...")


def command(args: argparse.Namespace) -> int:
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise UsageError("no host command (mcp-tether hostcheck [options] -- HOST-ARGV...)")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    names = dict.fromkeys(args.scenarios or default_scenarios(args.host))
    with StopSignals("hostcheck") as stop, \
            Progress("hostcheck", total=len(names), quiet=args.quiet) as progress:
        result = check(argv, host=args.host, scenarios=args.scenarios, pty=args.pty,
                       quit=args.quit, ready_timeout=args.ready_timeout,
                       host_timeout=args.host_timeout, settle=args.settle,
                       eof=args.recorder_eof, grandchild=not args.no_grandchild,
                       jobs=args.jobs, hold=args.hold, hold_wait=args.hold_wait,
                       wrapper=args.wrapper, signals=args.recorder_signals,
                       scope=args.host_scope, after_edit=args.after_edit,
                       model_api=args.model_api, model_env=args.model_env,
                       min_age=args.min_age, prompt_wait=args.prompt_wait,
                       on_result=lambda r: progress.done(str(r["scenario"]), str(r["verdict"])),
                       should_stop=stop)
    if stop.signum:  # stopped: the one line is said; every keeper, host and folder is gone
        return 128 + stop.signum
    if args.json:
        print_json("hostcheck", result.results, argv=result.argv, host=result.host,
                   passed=result.passed, exit_code=result.exit_code)
    elif args.markdown:
        render_markdown(result)
    else:
        render_text(result)
    if args.html:
        try:
            with open(args.html, "w", encoding="utf-8") as fh:
                fh.write(render_html(result))
        except OSError as exc:
            raise UsageError(f"--html {args.html}: {exc.strerror}") from None
    return result.exit_code
