"""A host whose launcher is not the process that holds the server (stdlib only).

The launcher (what the check starts, as npm's node launcher of a native CLI) starts its
"native" half (this file with `--native`), which starts the server behind a hidden
`sh -c 'SERVER; true'` (a layer the user never wrote) and a helper of its own
(`sleep`), does the handshake and `tools/list`, and then stays. A signal to the
launcher kills the launcher alone (default actions): the native half, re-parented,
still holds the server. Usage:
layered_host.py CMD ARGS...
"""

import json
import shlex
import signal
import subprocess
import sys
import time

if sys.argv[1] != "--native":
    native = subprocess.Popen([sys.executable, __file__, "--native", *sys.argv[1:]])
    native.wait()
    sys.exit(0)

signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the native half outlives its terminal too
helper = subprocess.Popen(["sleep", "3600"])  # a process of the host's own, beside it
server = subprocess.Popen(["sh", "-c", shlex.join(sys.argv[2:]) + "; true"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def call(mid: int | None, method: str, params: dict | None = None) -> None:
    msg = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if mid is not None:
        msg["id"] = mid
    server.stdin.write((json.dumps(msg) + "\n").encode())
    server.stdin.flush()
    if mid is not None:
        server.stdout.readline()


call(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "layered-host", "version": "1"}})
call(None, "notifications/initialized")
call(2, "tools/list")
while True:
    time.sleep(3600)
