"""The `mcp-tether run` command: parse options, run the guard, one summary line (and,
when `MCP_TETHER_REPORT_FD` names a descriptor, one JSON report line there: `report`).

Durations go through `cliutil.positive_duration`: NaN, inf or a negative number is a
usage error (exit 2) before anything starts. The guard's own options after the server
command without `--` (`run node s.js --grace 1`) are refused with a hint (exit 2), not
passed to the server.
"""

from __future__ import annotations

import os

from mcp_tether import log
from mcp_tether.cliutil import exit_at_once, positive_duration, teach
from mcp_tether.errors import TetherError, UsageError
from mcp_tether.guard.argv import misplaced_options, parse_guard_argv
from mcp_tether.guard.result import REPORT_ENV
from mcp_tether.guard.session import run_guarded

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

__all__ = ["configure", "command", "fast_command", "EXIT_AT_ONCE"]

# `command()` ends the process itself once the run is over (`cliutil.exit_at_once`);
# set to False to call it in-process (run_guarded never exits).
EXIT_AT_ONCE = True


EXAMPLES = (
    "mcp-tether run -- node dist/index.js         # in a host's config, instead of the command",
    "mcp-tether run --grace 5 -- python -m my_server   # 5 s to exit by itself at EOF first",
    "mcp-tether wrap --host claude-desktop --dry-run   # put it in front of every server",
)
WORDS = """\
the guard: a small parent between the host and the server that never touches a
protocol byte. When the client is gone (stdin hung up, its parent dead, or SIGTERM,
SIGINT, SIGHUP), it ends the server's whole process tree, escaped descendants
included: --grace seconds to exit by itself, SIGTERM, --term-grace seconds, SIGKILL.
It exits with the server's status, as a shell reports it."""


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    import argparse

    teach(parser, EXAMPLES, WORDS,
          usage=f"mcp-tether {name} [--grace S] [--term-grace S] -- CMD [ARGS...]")
    parser.add_argument(
        "--grace",
        type=positive_duration,
        default=None,
        metavar="S",
        help="seconds the server gets to exit by itself after stdin hangs up (default 2)",
    )
    parser.add_argument(
        "--term-grace",
        type=positive_duration,
        default=None,
        metavar="S",
        help="seconds between SIGTERM and SIGKILL (default 2)",
    )
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="the server command and its args")
    parser.epilog = (
        f"environment: {REPORT_ENV}=N  at the end, write one JSON line on fd N saying how\n"
        "  the run ended (reason, status, the rung that ended the server, survivors);\n"
        "  for programs that start the guard (the probe). Never 0-2; the server sees\n"
        "  neither the variable nor the fd. Fields: docs/guard.md\n"
        + (parser.epilog or "")
    )


def fast_command(words: list[str]) -> int | None:
    """Run the guard for `run WORDS` read by `guard.argv` (what argparse would read from
    a valid command line, ~10 ms sooner); None when argparse must read it: `--help`, an
    unknown option, a bad duration, no command, misplaced options."""
    got = parse_guard_argv(["mcp-tether", "run", *words])
    if got is None:
        return None
    return _run(got.command, got.grace, got.term_grace)


def command(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    elif misplaced_options(cmd):
        raise UsageError(_misplaced_hint(cmd))
    if not cmd:
        raise UsageError("no command given: mcp-tether run [--grace S] -- CMD [ARGS...]")
    return _run(cmd, args.grace, args.term_grace)


def _run(cmd: list[str], grace: float | None, term_grace: float | None) -> int:
    # Before anything forks: the variable leaves our environment (the server's to be)
    # and the descriptor turns close-on-exec. The report's module loads only when the
    # variable is set: `run` is on every guarded server's launch path.
    report_fd = None
    if REPORT_ENV in os.environ:
        from mcp_tether.guard.report import take_report_fd

        report_fd = take_report_fd()
    try:
        result = run_guarded(cmd, grace=grace, term_grace=term_grace, front=EXIT_AT_ONCE)
    except TetherError as exc:  # 127/126: nothing ran; the caller still gets its line
        if report_fd is not None:
            from mcp_tether.guard.report import GuardReport, write_report

            write_report(report_fd, GuardReport.not_started(exc.exit_code))
        raise
    if report_fd is not None:
        from mcp_tether.guard.report import GuardReport, write_report

        write_report(report_fd, GuardReport.from_result(result))
    log.say(f"mcp-tether run: {result.summary()}")
    for line in result.left_lines():
        log.say(f"mcp-tether run: {line}")
    if EXIT_AT_ONCE:
        exit_at_once(result.exit_status)
    return result.exit_status


def _misplaced_hint(cmd: list[str]) -> str:
    """`run node s.js --grace 1`: both readings spelled out, for the guard or the server."""
    import shlex  # only on this error path: the guard's start-up stays light

    ours, rest, i = [], [cmd[0]], 1
    while i < len(cmd):
        word = cmd[i]
        if word in misplaced_options([cmd[0], word]):
            ours.append(word)
            if "=" not in word and i + 1 < len(cmd):
                ours.append(cmd[i + 1])
                i += 1
        else:
            rest.append(word)
        i += 1
    return (f"{' '.join(misplaced_options(cmd))} after the server command would go to the "
            f"server; for the guard: `mcp-tether run {shlex.join(ours)} -- {shlex.join(rest)}`"
            f", for the server: `mcp-tether run -- {shlex.join(cmd)}`")
