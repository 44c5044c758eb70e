"""`mcp-tether inspect [PATH] [--json]`: the installed MCP SDKs' stdio transports."""

from __future__ import annotations

import argparse
import shlex
import sys

from mcp_tether.cliutil import teach
from mcp_tether.errors import EXIT_FAILED, EXIT_OK, UsageError
from mcp_tether.inspect import NodeTransport, Transport, inspect_path, server_uses
from mcp_tether.jsonout import print_json
from mcp_tether.packages import ensure_installed, parse_spec, policy_line
from mcp_tether.packages.options import add_policy_options, policy_from
from mcp_tether.packages.spec import is_package_spec

EPILOG = """\
PATH: npm:NAME[@VERSION] or pypi:NAME[==VERSION] (installed into the package cache as
  `probe` does, then inspected there), a node_modules folder, a project holding one,
  a virtualenv or site-packages, or any folder holding those (e.g. ~/.npm/_npx,
  ~/.cache/uv); default: this interpreter. A package installs as for `probe`: no
  install scripts (--allow-scripts runs them), wheels only (--allow-build).
Reports for each SDK found (@modelcontextprotocol/sdk, @modelcontextprotocol/server,
  mcp, fastmcp) what its stdio server transport does, read from its installed source:
  the stdin events it listens to, whether stdin EOF ends the session, the signals it
  handles, whether it watches its parent.
With --command, the one SDK that server loads, resolved from its own entry point
  (Node: the imports from its script or bin, bundled copies included; Python: what
  its script imports in its interpreter's environment), and how that was found,
  e.g. mcp-tether inspect --command "/path/venv/bin/python server.py"
The same answer `probe` puts in its diagnosis and `ps` shows as the SDK.
exit code: 0 some SDK found, 1 none found, 2 usage error
"""


EXAMPLES = (
    "mcp-tether inspect                   # the SDKs this Python has, and what each does at EOF",
    "mcp-tether inspect ~/.npm/_npx       # every Node SDK copy npx has cached",
    'mcp-tether inspect --command "npx -y @playwright/mcp"   # which SDK that server loads',
)
WORDS = """\
SDK: an MCP library a server's stdio transport comes from (@modelcontextprotocol/sdk,
@modelcontextprotocol/server, mcp, fastmcp). EOF: the end of the server's stdin, which
is what its host's exit looks like to it; a transport that does not end its session
there leaves the server running after the host is gone."""


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    teach(parser, EXAMPLES, WORDS)
    parser.epilog = EPILOG + "\n" + (parser.epilog or "")
    parser.add_argument("path", nargs="?", help="where to look (default: this interpreter), "
                        "or a package spec")
    parser.add_argument("--json", action="store_true",
                        help="one JSON document, a result per SDK (docs/json.md)")
    parser.add_argument("--command", metavar="CMD",
                        help="a server command line: which SDK it loads, and how that was "
                             "found (state sdk / none / unknown)")
    add_policy_options(parser)


def _yes_no(value: object) -> str:
    if value is None:
        return "cannot tell"
    return "yes" if value else "no"


def command(args: argparse.Namespace) -> int:
    if args.command is not None:
        return _command_uses(args)
    path = args.path
    if path and is_package_spec(path):
        spec = parse_spec(path)
        policy = policy_from(args, spec)
        place, marker, _ = ensure_installed(spec, policy=policy)
        print(f"mcp-tether inspect: {spec.text} -> {marker.get('name')} "
              f"{marker.get('version')} in {place}", file=sys.stderr)
        print(f"mcp-tether inspect: "
              f"{policy_line(spec, policy, marker.get('install_scripts') or [])}",
              file=sys.stderr)
        path = str(place)
    sdks = inspect_path(path)
    if args.json:
        print_json("inspect", [s.to_dict() for s in sdks], path=path)
    else:
        for s in sdks:
            via = f" (via {s.delegates_to})" if s.delegates_to else ""
            print(f"{s.package} {s.version}{via}  [{s.language}]  {s.path}")
            if s.how:
                print(f"  loaded:         {s.how}")
            print(f"  transport:      {s.transport_file or '—'}")
            print(f"  stdin events:   {', '.join(s.stdin_events) or 'none found'}")
            print(f"  exits on EOF:   {_yes_no(s.exits_on_eof)}")
            print(f"  signals:        {', '.join(s.signals) or 'none handled'}")
            print(f"  parent watch:   {_yes_no(s.parent_watch)}")
            for n in s.notes:
                print(f"  note: {n}")
            if isinstance(s, NodeTransport) and s.remedy:
                print(f"  fix:  {s.remedy}")
        if not sdks:
            where = args.path or "this interpreter's site-packages"
            print(f"mcp-tether inspect: no MCP SDK found under {where}", file=sys.stderr)
    return EXIT_OK if sdks else EXIT_FAILED


def _command_uses(args: argparse.Namespace) -> int:
    try:
        argv = shlex.split(args.command)
    except ValueError as exc:
        raise UsageError(f"--command: {exc}") from exc
    if not argv:
        raise UsageError("--command: empty command")
    u = server_uses(argv)
    if args.json:
        print_json("inspect-command", [u.to_dict()], command=argv)
    else:
        print(f"sdk: {u.label()}  [{u.language or 'language unknown'}]")
        print(f"  how:            {u.how}")
        if u.found:
            t = u.info or Transport()
            print(f"  transport:      {t.transport_file or '—'}")
            print(f"  stdin events:   {', '.join(t.stdin_events) or 'none found'}")
            print(f"  exits on EOF:   {_yes_no(t.exits_on_eof)}")
    return EXIT_OK if u.found else EXIT_FAILED
