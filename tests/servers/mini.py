"""A tiny stdlib MCP stdio server for the probe's tests (starts in ~20 ms).

Flags: --thread        a non-daemon ticking thread (survives EOF: the orphan case)
       --ignore-term   SIGTERM is ignored
       --stateless     refuses `initialize` as unknown; answers `server/discover`
       --garbage       writes a non-JSON line to stdout first
       --log-shutdown  on EOF, logs `event=shutdown mono=<CLOCK_MONOTONIC>` to stderr
                       as its last act and _exits (for the probe's accuracy benchmark)
       --log-eof       on EOF, logs `stdin-eof` to stderr (then lives on with --thread)
       --echo-version  answers `initialize` with the client's own protocolVersion, as a
                       server supporting it does (an SDK host of any line then accepts it)
"""

import json
import os
import signal
import sys
import threading
import time

args = set(sys.argv[1:])
if "--ignore-term" in args:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if "--thread" in args:
    threading.Thread(target=lambda: [time.sleep(0.1) for _ in iter(int, 1)]).start()
out = sys.stdout.buffer
if "--garbage" in args:
    out.write(b"hello, I am not JSON\n")
    out.flush()


def answer(msg, result=None, error=None):
    body = {"jsonrpc": "2.0", "id": msg["id"]}
    if error:
        body["error"] = error
    else:
        body["result"] = result if result is not None else {}
    out.write(json.dumps(body).encode() + b"\n")
    out.flush()


for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    method = msg.get("method")
    if "id" not in msg:
        continue
    if method == "initialize" and "--stateless" in args:
        answer(msg, error={"code": -32601, "message": "Method not found"})
    elif method in ("initialize", "server/discover"):
        asked = msg.get("params", {}).get("protocolVersion") if "--echo-version" in args else None
        answer(msg, {"protocolVersion": asked or "2025-11-25", "capabilities": {"tools": {}},
                     "serverInfo": {"name": "mini", "version": "0"}})
    elif method == "tools/list":
        answer(msg, {"tools": [{"name": "sleep", "inputSchema": {"type": "object"}}]})
    elif method == "tools/call" and msg["params"]["name"] == "sleep":
        # Answered from a (non-daemon) worker: a call in flight holds the process open.
        seconds = float(msg["params"].get("arguments", {}).get("seconds", 1))
        threading.Thread(
            target=lambda m=msg, s=seconds: (time.sleep(s), answer(m, {"content": []}))).start()
    else:
        answer(msg, error={"code": -32601, "message": "Method not found"})

if "--log-eof" in args:
    os.write(2, b"stdin-eof\n")
if "--log-shutdown" in args:
    os.write(2, f"event=shutdown mono={time.monotonic():.6f}\n".encode())
    os._exit(0)
