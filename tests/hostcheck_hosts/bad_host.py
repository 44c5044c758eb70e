"""A deliberately bad host (stdlib only): it kills only its direct child, and never closes
the server's stdin first.

Starts the server (no session of its own: the server's children share the host's group),
does the handshake and `tools/list`, then on stdin EOF, SIGINT, SIGTERM or SIGHUP sends
SIGKILL to the server process alone and exits. Usage: bad_host.py CMD ARGS...
"""

import json
import os
import select
import signal
import subprocess
import sys

server = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def call(mid: int | None, method: str, params: dict | None = None) -> None:
    msg = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if mid is not None:
        msg["id"] = mid
    server.stdin.write((json.dumps(msg) + "\n").encode())
    server.stdin.flush()
    if mid is not None:
        server.stdout.readline()


call(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "bad-host", "version": "1"}})
call(None, "notifications/initialized")
call(2, "tools/list")

r, w = os.pipe()
os.set_blocking(w, False)
signal.set_wakeup_fd(w)
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, lambda *_: None)
while True:
    ready, _, _ = select.select([0, r], [], [])
    if r in ready or not os.read(0, 4096):
        break
os.kill(server.pid, signal.SIGKILL)  # the direct child only; its stdin still open
server.wait()
os._exit(0)
