"""`mcp-tether wrap | unwrap | hosts`: the CLI face of `mcp_tether.hosts`.

Guarantees: wrap/unwrap never touch a file the user did not name, by `--host` or
`--config` (no selection is a usage error, not "every host"); the diff goes to stdout
(so it can be piped to a pager or saved), status lines to stderr; `--json` replaces
the text rendering with one JSON document on stdout. One module serves the three
commands, branching on the command name `cli` passes to `configure`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from mcp_tether import hosts
from mcp_tether.errors import EXIT_OK, EXIT_USAGE, ConfigError, UsageError
from mcp_tether.log import say

EXAMPLES = {
    "wrap": """\
examples:
  mcp-tether wrap --host claude-desktop --dry-run   # show the diff, change nothing
  mcp-tether wrap --host cursor                     # ~/.cursor/mcp.json and ./.cursor/mcp.json
  mcp-tether wrap --config ./mcp.json               # any file in a known shape

Each stdio entry {"command": C, "args": A} becomes
  {"command": "/abs/path/to/mcp-tether", "args": ["run", "--", C, *A]}.
Remote (url) and already-wrapped entries are left alone. Only those two values change:
comments, key order and indentation stay as they were. The first backup is
<file>.mcp-tether.bak (never overwritten; later ones are .bak.1, .bak.2, ...).
Restart the host afterwards so that it launches the servers again.
""",
    "unwrap": """\
examples:
  mcp-tether unwrap --host claude-desktop --dry-run
  mcp-tether unwrap --config ~/.cursor/mcp.json

Undoes `wrap` exactly: a file wrapped and unwrapped is byte-for-byte what it was.
""",
    "hosts": """\
examples:
  mcp-tether hosts                    # every known host's config files found here
  mcp-tether hosts --host zed --json  # one host, machine-readable
  mcp-tether hosts --config ./mcp.json
""",
}


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.epilog = EXAMPLES[name] + "\n" + (parser.epilog or "")
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
        "(mcpServers, servers, context_servers) unless --host says it",
    )
    if name in ("wrap", "unwrap"):
        parser.add_argument(
            "--dry-run", action="store_true", help="print the diff, write nothing"
        )
    if name == "wrap":
        parser.add_argument(
            "--tether",
            metavar="PATH",
            help="the mcp-tether executable to put in front "
            "(default: the one on PATH, else this one)",
        )
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")


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
        return [hosts.ConfigFile(host, "config", p) for p in args.config]
    files: list[hosts.ConfigFile] = []
    for host in args.host or [None]:
        files += hosts.discover(host)
    return files


def _tether_argv0(explicit: str | None) -> str:
    if explicit:
        return os.path.abspath(explicit)
    found = shutil.which("mcp-tether")
    if found:
        return os.path.abspath(found)
    me = Path(sys.argv[0]).resolve()
    if me.name in hosts.TETHER_NAMES:
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
            if name == "wrap":
                assert argv0 is not None
                res = hosts.wrap(cf.path, cf.host or None, argv0, dry_run=args.dry_run)
            else:
                res = hosts.unwrap(cf.path, cf.host or None, dry_run=args.dry_run)
        except ConfigError as exc:
            errors.append(exc)
            continue
        results.append(res)
        if not args.json:
            sys.stdout.write(res.diff)
            _status(res)
    if args.json:
        doc: dict[str, Any] = {
            "results": [r.to_json() for r in results],
            "errors": [_error_json(e) for e in errors],
        }
        print(json.dumps(doc, indent=2))
    for err in errors:  # not `exc`: that name is an except target above
        say(f"mcp-tether {name}: {err.msg}")
    if any(r.written for r in results) and not args.json:
        say("restart the host(s) so that they launch the servers again")
    return EXIT_USAGE if errors else EXIT_OK


def _status(res: hosts.ChangeResult) -> None:
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


def _hosts(args: argparse.Namespace) -> int:
    files = _selected(args)
    listing: list[tuple[hosts.ConfigFile, list[hosts.ServerEntry]]] = []
    errors: list[ConfigError] = []
    for cf in files:
        try:
            listing.append((cf, hosts.read_servers(cf.path, cf.host or None)))
        except ConfigError as exc:
            errors.append(exc)
    if args.json:
        doc = {
            "files": [
                {
                    "host": cf.host or None,
                    "scope": cf.scope,
                    "path": str(cf.path),
                    "servers": [e.to_json() for e in entries],
                }
                for cf, entries in listing
            ],
            "errors": [_error_json(e) for e in errors],
        }
        print(json.dumps(doc, indent=2))
    else:
        if not listing and not errors:
            say("no host config files found (known hosts: " + ", ".join(hosts.HOSTS) + ")")
        for cf, entries in listing:
            print(f"{cf.host or '-'} ({cf.scope}) {cf.path}")
            if not entries:
                print("  (no servers)")
            width = max((len(e.label) for e in entries), default=0)
            for e in entries:
                state = e.transport
                if e.transport == "stdio":
                    state = "wrapped" if e.wrapped else "bare"
                if e.disabled:
                    state += ",disabled"
                what = " ".join([e.command, *e.args]) if e.command else "(remote)"
                print(f"  {e.label.ljust(width)}  {state:<16} {what}")
    for err in errors:
        say(f"mcp-tether hosts: {err.msg}")
    return EXIT_USAGE if errors else EXIT_OK
