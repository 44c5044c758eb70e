"""A one-shot host (stdlib only), as `claude mcp list` is: handshake, `tools/list`, done.

Starts the server (no session of its own), does the handshake and `tools/list`, and as
soon as the answer comes ends the server by itself and exits:

    oneshot_host.py [--group] [--early] CMD ARGS...

- default: SIGTERM to its direct child only (stdin left open), as Claude Code's health
  check signals its direct child;
- `--group`: SIGTERM to the server's process group, which is the host's own (the server
  was not moved), so the host ignores SIGTERM for that one send;
- `--early`: it closes the server's stdin right after the handshake, before `tools/list`
  (a host already shutting down when a trigger comes), and then waits for its own stdin
  EOF or a signal before the SIGTERM, so that the scenario's trigger reaches it alive.

SIGINT/SIGTERM/SIGHUP to the host while it waits do what the Python default does (the
host dies, the server is left): this host runs no ladder of its own on a signal.
"""

import json
import os
import select
import signal
import subprocess
import sys

args = sys.argv[1:]
group = "--group" in args
early = "--early" in args
args = [a for a in args if a not in ("--group", "--early")]
server = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def call(mid, method, params=None):
    msg = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if mid is not None:
        msg["id"] = mid
    server.stdin.write((json.dumps(msg) + "\n").encode())
    server.stdin.flush()
    if mid is not None:
        server.stdout.readline()


call(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "oneshot-host", "version": "1"}})
call(None, "notifications/initialized")
if early:
    server.stdin.close()
    select.select([0], [], [])  # EOF on our stdin (the exit scenario) or a signal's death
else:
    call(2, "tools/list")
if group:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(os.getpgrp(), signal.SIGTERM)
else:
    server.send_signal(signal.SIGTERM)
server.wait()
