"""The `mcp-tether` command: a thin adapter over the Python API.

Dispatch is git-style: `mcp-tether CMD ...` imports only the module of CMD, so that
`mcp-tether run` (on every guarded server's launch path) loads nothing it does not need.
`run` is the one command with a fast path: its module exposes `fast_command(args) ->
int | None`, tried before argparse and falling back to it on None; it reads a plain
`[--grace S] [--term-grace S] [--] CMD...` with the guard's own parser (`guard.argv`,
the one `hosts` and `probe` use); help and every error go to argparse. As the process's
own entry point (`argv` None), the fast path's process ends at once when it returns,
output flushed and interpreter teardown skipped: so it leaves no thread, child or
unflushed output behind.
Each command module exposes `configure(parser)` and `command(args) -> int`.
Errors become one line on stderr and an exit code, here and nowhere else.
"""

from __future__ import annotations

import importlib
import os
import sys

from mcp_tether import __version__
from mcp_tether.cliutil import exit_at_once
from mcp_tether.errors import EXIT_USAGE, TetherError

# name -> (module, one-line summary). Order is the order of `mcp-tether --help`.
COMMANDS: dict[str, tuple[str, str]] = {
    "lab": ("mcp_tether.lab.cli", "run the reference experiment: bundled servers x scenarios"),
    "probe": ("mcp_tether.probe.cli", "lifecycle conformance suite for any stdio server"),
    "survey": ("mcp_tether.survey.cli", "probe a list of npm/PyPI servers; one lifecycle table"),
    "run": ("mcp_tether.guard.cli", "guard a server so that it dies with its client"),
    "wrap": ("mcp_tether.hosts.cli", "put the guard in front of a host's stdio servers"),
    "unwrap": ("mcp_tether.hosts.cli", "take the guard out of a host's config again"),
    "hosts": ("mcp_tether.hosts.cli", "list host config files and their stdio servers"),
    "hostcheck": ("mcp_tether.hostcheck.cli", "what a host does to its stdio servers when it ends"),
    "inspect": ("mcp_tether.inspect.cli", "what the installed MCP SDKs' stdio servers do on EOF"),
    "ps": ("mcp_tether.scan.cli", "list stdio servers on this machine, leaked first"),
    "reap": ("mcp_tether.scan.cli", "end leaked MCP servers, safely; --watch keeps at it"),
}

EPILOG = """\
exit codes: 0 ok, 1 a check failed (probe: a scenario of the chosen level; lab: a row
              that could not run; inspect: no SDK found), 2 usage or set-up error,
            126 command not executable (a package without a server command),
            127 command not found (a package that cannot be fetched),
            128+N the guarded server died of signal N (run), or we were stopped by it
environment: MCP_TETHER_LOG=debug|info|warning|quiet (default warning) for more on stderr
"""
# Under each command's own help: one line pointing at the list above, not the list again.
COMMAND_EPILOG = "exit codes and environment: see `mcp-tether --help`"


def _top_help() -> str:
    width = max(len(n) for n in COMMANDS)
    lines = [
        "usage: mcp-tether [--version] COMMAND [ARGS...]",
        "",
        "Make MCP stdio servers die with their client, and prove it.",
        "",
        "examples:",
        "  mcp-tether lab                      # see how servers leak, and what fixes them",
        "  mcp-tether probe -- node server.js  # does this server die with its client?",
        "  mcp-tether ps                       # the leaked servers on this machine",
        "",
        "commands:",
    ]
    lines += [f"  {n.ljust(width)}  {summary}" for n, (_, summary) in COMMANDS.items()]
    lines += ["", "Run `mcp-tether COMMAND --help` for a command's options.", "", EPILOG]
    return "\n".join(lines)


TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence


def build_parser(name: str) -> tuple[argparse.ArgumentParser, object]:
    """The parser of one command, and its module (imported on demand)."""
    import argparse

    module_name, summary = COMMANDS[name]
    module = importlib.import_module(module_name)
    parser = argparse.ArgumentParser(
        prog=f"mcp-tether {name}",
        description=summary[0].upper() + summary[1:] + ".",
        epilog=COMMAND_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    module.configure(parser, name)
    return parser, module


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        status = _dispatch(args, at_once=argv is None)
        sys.stdout.flush()  # here, not at exit: a reader gone is met by the handler below
    except BrokenPipeError:
        # Our stdout reader went away (`mcp-tether --help | head -1`): not an error worth
        # a trace. The output is what was cut short, not the command: ok (0), but a bare
        # `mcp-tether` stays the usage error it is.
        _stdout_to_devnull()
        return 0 if args else EXIT_USAGE
    return status


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null, fd and all (the `signal` module docs' recipe for
    SIGPIPE), so that what is still buffered goes nowhere: the interpreter's exit-time
    flush would otherwise fail again, with a trace and status 120."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no fd (a test's capture): drop the stream instead
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115  # lives until the process ends
    finally:
        os.close(devnull)


def _dispatch(args: list[str], *, at_once: bool) -> int:
    if not args or args[0] in ("-h", "--help", "help"):
        print(_top_help())
        return 0 if args else EXIT_USAGE
    if args[0] == "--version":
        print(f"mcp-tether {__version__}")
        return 0
    name = args[0]
    if name not in COMMANDS:
        print(f"mcp-tether: unknown command {name!r} (see `mcp-tether --help`)", file=sys.stderr)
        return EXIT_USAGE
    try:
        fast = getattr(importlib.import_module(COMMANDS[name][0]), "fast_command", None)
        status = fast(args[1:]) if fast is not None else None
        if status is not None:
            if at_once:
                exit_at_once(int(status))
            return int(status)
        parser, module = build_parser(name)
        ns = parser.parse_args(args[1:])
        ns.command_name = name
        return int(module.command(ns))  # type: ignore[attr-defined]  # duck-typed module
    except TetherError as exc:
        from mcp_tether.escape import terminal  # here: `run` starts through this module

        print(f"mcp-tether {name}: {terminal(exc.msg)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"mcp-tether {name}: interrupted", file=sys.stderr)
        return 130
    except SystemExit as exc:  # argparse: usage errors are exit 2 already
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_USAGE)
