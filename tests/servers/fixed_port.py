"""A stdlib MCP stdio server that binds a fixed port (a web UI, a debugging port).

    python fixed_port.py PORT PIDFILE [--kill]

Two copies cannot run at once. Without --kill a second copy finds the address in use,
says so on stderr as Node does (`Error: listen EADDRINUSE: address already in use`) and
exits 1. With --kill it SIGKILLs the copy that holds the port (its pid in PIDFILE), as
some servers do with a stale instance, and takes the port. Otherwise it serves like
mini.py: answers initialize and exits at stdin EOF or on SIGTERM/SIGINT.
"""

import errno
import json
import os
import signal
import socket
import sys
import time

port, pidfile = int(sys.argv[1]), sys.argv[2]
kill = "--kill" in sys.argv[3:]
sock = socket.socket()
deadline = time.monotonic() + 10
while True:
    try:
        sock.bind(("127.0.0.1", port))
        break
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        if not kill:
            sys.stderr.write(f"Error: listen EADDRINUSE: address already in use "
                             f"127.0.0.1:{port}\n")
            sys.exit(1)
        try:
            with open(pidfile) as fh:
                os.kill(int(fh.read()), signal.SIGKILL)  # the stale instance, as it believes
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise
        time.sleep(0.01)  # the killed holder's socket closes as it dies
sock.listen()
with open(pidfile, "w") as fh:
    fh.write(str(os.getpid()))
out = sys.stdout.buffer
for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    if "id" not in msg:
        continue
    body = {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
    if msg.get("method") == "initialize":
        body["result"] = {"protocolVersion": "2025-11-25", "capabilities": {},
                          "serverInfo": {"name": "fixed-port", "version": "0"}}
    out.write(json.dumps(body).encode() + b"\n")
    out.flush()
