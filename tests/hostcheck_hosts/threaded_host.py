"""A host that reads each server with a thread blocked in read() (stdlib only), as Java
hosts and simple threaded clients do. It reconnects: copy A, then copy B, same command.

MODE listen:  both copies keep a reader thread (blocked in os.read on their stdout).
MODE abandon: A's reader thread is told to stop and leaves after A answers one last
              ping; A's Popen (both pipes) is kept, so A is held and never read again.
MODE select:  one thread waits in select() over both copies' stdout (what it watches
              cannot be read from /proc: the scan says `unknown`).
Prints "ready PID_A PID_B" and runs until stdin EOF. Usage: threaded_host.py MODE CMD ARGS...
"""

import json
import os
import select
import subprocess
import sys
import threading

mode, argv = sys.argv[1], sys.argv[2:]


def send(p: subprocess.Popen, msg: dict) -> None:
    p.stdin.write((json.dumps(msg) + "\n").encode())
    p.stdin.flush()


def start() -> subprocess.Popen:
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    send(p, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "threaded-host", "version": "1"}}})
    line = b""
    while not line.endswith(b"\n"):  # raw reads: nothing left buffered above the fd
        chunk = os.read(p.stdout.fileno(), 1)
        assert chunk, "the server said nothing"
        line += chunk
    send(p, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return p


def reader(p: subprocess.Popen, stop: threading.Event, read: threading.Event) -> None:
    while os.read(p.stdout.fileno(), 65536):
        read.set()
        if stop.is_set():
            return


a, b = start(), start()
stops = {p: threading.Event() for p in (a, b)}
reads = {p: threading.Event() for p in (a, b)}
if mode == "select":
    def watch() -> None:
        while True:
            for f in select.select([a.stdout, b.stdout], [], [])[0]:
                if not os.read(f.fileno(), 65536):
                    return
    threading.Thread(target=watch, daemon=True).start()
else:
    threads = {p: threading.Thread(target=reader, args=(p, stops[p], reads[p]), daemon=True)
               for p in (a, b)}
    for t in threads.values():
        t.start()
    if mode == "abandon":
        stops[a].set()
        send(a, {"jsonrpc": "2.0", "id": 2, "method": "ping"})
        threads[a].join()
print("ready", a.pid, b.pid, flush=True)
sys.stdin.buffer.read()  # until EOF; A and B end when their pipes close with us
