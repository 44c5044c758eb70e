"""`mcp-tether wrap | unwrap | hosts`: the CLI face of `mcp_tether.hosts`.

Guarantees: wrap/unwrap never touch a file the user did not name, by `--host` or
`--config` (no selection is a usage error, not "every host"); a project file in a
version-controlled tree only with `--project`; an entry wrapping would break only with
`--force`. The diff goes to stdout (so it can be piped to a pager or saved), status
lines to stderr; `--json` replaces the text rendering with one JSON document on
stdout. `hosts` that finds nothing lists every path it searched. One module serves the
three commands, branching on the command name `cli` passes to `configure`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from mcp_tether import hosts
from mcp_tether.cliutil import teach
from mcp_tether.errors import EXIT_OK, EXIT_USAGE, ConfigError, UsageError
from mcp_tether.escape import terminal
from mcp_tether.hosts.base import is_tether_name
from mcp_tether.hosts.safety import work_tree
from mcp_tether.jsonout import print_json
from mcp_tether.log import say

EXAMPLES = {
    "wrap": ("mcp-tether wrap --host claude-desktop --dry-run   # show the diff, change nothing",
             "mcp-tether wrap --host cursor                     # ~/.cursor/mcp.json and "
             "./.cursor/mcp.json",
             "mcp-tether wrap --config ./mcp.json               # any file in a known shape"),
    "unwrap": ("mcp-tether unwrap --host claude-desktop --dry-run",
               "mcp-tether unwrap --config ~/.cursor/mcp.json"),
    "hosts": ("mcp-tether hosts                    # every known host's config files found here",
              "mcp-tether hosts --host zed --json  # one host, machine-readable",
              "mcp-tether hosts --config ./mcp.json"),
}
WORDS = {
    "wrap": """\
Each stdio entry {"command": C, "args": A} becomes
  {"command": "/abs/path/to/mcp-tether", "args": ["run", "--", C, *A]}
(in a shared project file: "command": "mcp-tether", found on PATH): the guard in front
of the server (`mcp-tether run --help`).""",
    "unwrap": "Undoes `wrap` exactly: a file wrapped and unwrapped is byte-for-byte what it was.",
    "hosts": """\
host: a program that starts MCP servers (Claude Desktop, Cursor, VS Code...); its
config files list them; a stdio server is one it starts as a child process and talks
to over stdin and stdout (the ones `wrap` can put the guard in front of).""",
}
NOTES = {
    "wrap": """\
Remote and already-wrapped entries are left alone, and so is an entry wrapping would
break (a managed allowlist, VS Code dev.debug, Zed "remote": true, a command that
cannot run here) unless --force. Project files in a git (hg, svn, jj) tree only with
--project. Only those two values change: comments, key order and indentation stay.
Backups go to the state folder (~/.local/state/mcp-tether/backups/...), never beside
the file: the first is the pre-tether original and is never overwritten.
Restart the host afterwards so that it launches the servers again.
""",
}


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    teach(parser, EXAMPLES[name], WORDS[name])
    if name in NOTES:
        parser.epilog = NOTES[name] + "\n" + (parser.epilog or "")
    parser.add_argument(
        "--host",
        action="append",
        choices=hosts.HOSTS,
        metavar="HOST",
        help="a host whose config files to use (repeatable): " + ", ".join(hosts.HOSTS),
    )
    parser.add_argument(
        "--config",
        action="append",
        type=Path,
        metavar="FILE",
        help="a config file to use (repeatable); its shape is detected "
        "(mcpServers, servers, context_servers; .toml: Codex, .yaml: Goose) "
        "unless --host says it",
    )
    if name in ("wrap", "unwrap"):
        parser.add_argument(
            "--dry-run", action="store_true", help="print the diff, write nothing"
        )
        parser.add_argument(
            "--project",
            action="store_true",
            help="also edit project files inside a version-controlled tree",
        )
    if name == "wrap":
        parser.add_argument(
            "--force",
            action="store_true",
            help="wrap entries even where wrapping would break a host feature",
        )
        parser.add_argument(
            "--tether",
            metavar="PATH",
            help="the mcp-tether executable to put in front "
            "(default: the one on PATH, else this one); a path that is missing or not "
            "executable is refused (exit 2)",
        )
    parser.add_argument("--json", action="store_true",
                        help="one JSON document on stdout (docs/json.md)")


def command(args: argparse.Namespace) -> int:
    name = args.command_name
    if name == "hosts":
        return _hosts(args)
    return _change(args, name)


def _selected(args: argparse.Namespace) -> list[hosts.ConfigFile]:
    """The files named by --config, else the discovered files of each --host."""
    if args.config:
        host = args.host[0] if args.host and len(args.host) == 1 else ""
        if args.host and len(args.host) > 1:
            raise UsageError("with --config, give at most one --host (the file's shape)")
        return [hosts.ConfigFile(host or hosts.guess_host(p) or "", "config", p)
                for p in args.config]
    files: list[hosts.ConfigFile] = []
    seen: set[Path] = set()
    for host in args.host or [None]:
        for cf in hosts.discover(host):
            # A file read by several of the hosts asked for (`.mcp.json`: Claude Code,
            # VS Code, Copilot CLI) is one file: shown and changed once, under the first.
            real = cf.path.resolve()
            if real not in seen:
                seen.add(real)
                files.append(cf)
    return files


def _tether_argv0(explicit: str | None) -> str:
    if explicit:
        path = os.path.abspath(explicit)
        if not os.path.isfile(path):
            raise UsageError(f"--tether {explicit}: no such file")
        if not os.access(path, os.X_OK):
            raise UsageError(f"--tether {explicit}: not executable")
        return path
    found = shutil.which("mcp-tether")
    if found:
        return os.path.abspath(found)
    me = Path(sys.argv[0]).resolve()
    if is_tether_name(me.name):
        return str(me)
    raise UsageError("cannot find the installed mcp-tether executable; pass --tether PATH")


def _change(args: argparse.Namespace, name: str) -> int:
    if not args.host and not args.config:
        raise UsageError(
            f"say which config to {name}: --host NAME or --config FILE "
            f"(see `mcp-tether {name} --help`)"
        )
    files = _selected(args)
    if not files:
        looked = ", ".join(args.host or [])
        raise UsageError(f"no config file found for {looked} (try `mcp-tether hosts`)")
    argv0 = _tether_argv0(getattr(args, "tether", None)) if name == "wrap" else None
    results: list[hosts.ChangeResult] = []
    errors: list[ConfigError] = []
    for cf in files:
        try:
            res = hosts.change(
                cf.path, cf.host or None, name, tether_argv0=argv0, dry_run=args.dry_run,
                force=getattr(args, "force", False), project=args.project, scope=cf.scope,
            )
        except ConfigError as exc:
            if not cf.general:  # a broken editor settings.json is the editor's business
                errors.append(exc)
            continue
        if cf.general and not res.changed and not res.skipped:
            continue  # an editor's settings.json without MCP servers
        results.append(res)
        if not args.json:
            sys.stdout.write(res.diff)
            _status(res)
    if args.json:
        print_json(name, [r.to_json() for r in results],
                   errors=[_error_json(e) for e in errors])
    for err in errors:  # not `exc`: that name is an except target above
        say(f"mcp-tether {name}: {err.msg}")
    if any(r.written for r in results) and not args.json:
        say("restart the host(s) so that they launch the servers again")
    return EXIT_USAGE if errors else EXIT_OK


def _status(res: hosts.ChangeResult) -> None:
    if res.refused:
        say(f"{res.path}: {res.refused}")
        return
    verb = res.action + ("ped" if not res.dry_run else " (dry run)")
    n = len(res.changed)
    head = f"{res.path}: {verb} {n} server{'s' if n != 1 else ''}"
    if res.changed:
        head += ": " + ", ".join(res.changed)
    if res.backup:
        head += f" (backup: {res.backup})"
    say(head)
    for label, reason in res.skipped:
        say(f"  skipped {label}: {reason}")


def _error_json(exc: ConfigError) -> dict[str, Any]:
    return {"path": exc.path, "line": exc.line, "column": exc.column, "message": exc.msg}


def _searched(args: argparse.Namespace) -> list[hosts.ConfigFile]:
    machine = hosts.Machine.here()
    places = []
    for host in args.host or [None]:
        places += hosts.searched(host, machine)
    return places


def _nothing_found(args: argparse.Namespace) -> None:
    say("no host config files found; searched:")
    for cf in _searched(args):
        say(f"  {cf.host:<14} {cf.scope:<8} {cf.path}")
    say("a file elsewhere: `mcp-tether hosts --config FILE`")


def _wrap_hint(listing: list[tuple[hosts.ConfigFile, list[hosts.ServerEntry]]]) -> None:
    """After the listing: how to put the guard in front of the stdio servers without it."""
    n, targets, shared = 0, [], 0
    for cf, entries in listing:
        bare = [e for e in entries if e.transport == "stdio" and e.command and not e.wrapped
                and not e.disabled]
        n += len(bare)
        if bare and cf.scope in ("project", "config") and work_tree(cf.path) is not None:
            shared += len(bare)  # wrap leaves these alone without --project
        target = f"--host {cf.host}" if cf.host else f"--config {shlex.quote(str(cf.path))}"
        if bare and target not in targets:
            targets.append(target)
    if n:
        say(f"{n} stdio server(s) not wrapped: `mcp-tether wrap {' '.join(targets)} --dry-run` "
            f"shows how the guard would go in front of them")
    if shared:
        say(f"{shared} of them in a project file of a version-controlled tree: wrap leaves "
            f"that file alone unless you add --project (it is shared: commit the change)")


def _hosts(args: argparse.Namespace) -> int:
    files = _selected(args)
    listing: list[tuple[hosts.ConfigFile, list[hosts.ServerEntry]]] = []
    errors: list[ConfigError] = []
    for cf in files:
        try:
            entries = hosts.read_servers(cf.path, cf.host or None)
        except ConfigError as exc:
            if not cf.general:
                errors.append(exc)
            continue
        if entries or not cf.general:  # an editor's settings.json without servers: noise
            listing.append((cf, entries))
    if args.json:
        extra: dict[str, Any] = {"errors": [_error_json(e) for e in errors]}
        if not listing and not errors:
            extra["searched"] = [{"host": cf.host, "scope": cf.scope, "path": str(cf.path)}
                                 for cf in _searched(args)]
        print_json("hosts", [{"host": cf.host or None, "scope": cf.scope, "path": str(cf.path),
                              "servers": [e.to_json() for e in entries]}
                             for cf, entries in listing], **extra)
    else:
        if not listing and not errors:
            _nothing_found(args)
        for cf, entries in listing:
            print(terminal(f"{cf.host or 'any host'} ({cf.scope}) {cf.path}"))
            if not entries:
                print("  (no servers)")
            width = max((len(e.label) for e in entries), default=0)
            for e in entries:
                state = e.transport
                if e.transport == "stdio":
                    state = "wrapped" if e.wrapped else "not wrapped"
                if e.disabled:
                    state += ", disabled"
                what = " ".join([e.command, *e.args]) if e.command else (
                    "(empty command: skipped)" if e.transport == "stdio" else "(remote)")
                print(terminal(f"  {e.label.ljust(width)}  {state:<21} {what}"))
        _wrap_hint(listing)
    for err in errors:
        say(f"mcp-tether hosts: {err.msg}")
    return EXIT_USAGE if errors else EXIT_OK
