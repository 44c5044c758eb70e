"""A host that uses its servers on demand and sits idle between requests (stdlib only),
in one of the shapes hosts are written in. None of them waits on a server's output
between requests, so each looks "not listening" to the kernel: none may ever lose a
server for it.

MODE sync:    the main thread blocks reading its own stdin; a request is written and
              its answer read synchronously (a REPL-like host sleeping between requests)
MODE sleep:   the main thread sleeps on a timer and looks for a command without waiting
              (non-blocking reads of its stdin): no fd waited on at all
MODE poll-nb: as `sleep`, and each tick also tries a non-blocking read of every server
              (EAGAIN until something comes)
MODE queue:   one reader thread per server waits on a queue (a futex) and reads that
              server only when a request is queued
MODE fork:    a forked helper holds dups of the servers' pipes and does the requests
              when the host tells it to over a pipe of its own
MODE select:  one thread waits in select() over its stdin and every server's output
Commands, one per line on stdin: `call I` (a tools/call to copy I, answered `ok I`),
`start` (one more copy of the config entry, read afresh from CONFIG: an edit is seen;
answered `started PID`). Each copy gets the host's environment plus the entry's `env`;
with VAR, also VAR set by the host itself to a fresh value per copy (a session token, a
profile: copies that differ in it are different servers). Prints `ready PID...` once
its first COUNT copies answered `initialize`. Ends at stdin EOF (its servers end with
their pipes). The entry is `mini` (ONDEMAND_ENTRY names another).
Usage: ondemand_host.py MODE COUNT CONFIG [VAR]
"""

import contextlib
import fcntl
import json
import os
import queue
import select
import subprocess
import sys
import threading
import time

mode, count, config = sys.argv[1], int(sys.argv[2]), sys.argv[3]
session_var = sys.argv[4] if len(sys.argv) > 4 else None
ENTRY = os.environ.get("ONDEMAND_ENTRY", "mini")
copies: list[subprocess.Popen] = []
ids = iter(range(10, 1 << 30))


def send(p: subprocess.Popen, msg: dict, fd: int | None = None) -> None:
    os.write(fd if fd is not None else p.stdin.fileno(), (json.dumps(msg) + "\n").encode())


def answer(fd: int) -> bytes:
    """One line from `fd`, waiting for it (non-blocking fds are waited on by select)."""
    line = b""
    while not line.endswith(b"\n"):
        try:
            chunk = os.read(fd, 1)
        except BlockingIOError:
            select.select([fd], [], [])
            continue
        assert chunk, "the server said nothing"
        line += chunk
    return line


def start() -> subprocess.Popen:
    with open(config) as fh:
        entry = json.load(fh)["mcpServers"][ENTRY]
    env = {**os.environ, **entry.get("env", {})}
    if session_var:
        env[session_var] = os.urandom(8).hex()
    p = subprocess.Popen([entry["command"], *entry.get("args", [])], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, bufsize=0, env=env)
    send(p, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "ondemand-host", "version": "1"}}})
    answer(p.stdout.fileno())
    send(p, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    if mode == "poll-nb":
        fl = fcntl.fcntl(p.stdout.fileno(), fcntl.F_GETFL)
        fcntl.fcntl(p.stdout.fileno(), fcntl.F_SETFL, fl | os.O_NONBLOCK)
    copies.append(p)
    return p


def call(i: int, fds: tuple[int, int] | None = None) -> None:
    p = copies[i]
    w, r = fds if fds is not None else (p.stdin.fileno(), p.stdout.fileno())
    send(p, {"jsonrpc": "2.0", "id": next(ids), "method": "tools/call",
             "params": {"name": "sleep", "arguments": {"seconds": 0}}}, w)
    got = json.loads(answer(r))
    assert "result" in got, got


def say(text: str) -> None:
    os.write(1, (text + "\n").encode())


for _ in range(count):
    start()
say("ready " + " ".join(str(p.pid) for p in copies))

workers: dict[int, queue.Queue] = {}


def worker(i: int, q: queue.Queue) -> None:
    while q.get() is not None:  # a futex wait until a request is queued
        call(i)
        say(f"ok {i}")


def run(words: list[str]) -> None:
    if words[0] == "start":
        p = start()
        say(f"started {p.pid}")
    elif words[0] == "call" and mode == "queue":
        i = int(words[1])
        if i not in workers:
            workers[i] = queue.Queue()
            threading.Thread(target=worker, args=(i, workers[i]), daemon=True).start()
        workers[i].put(i)
    elif words[0] == "call":
        call(int(words[1]))
        say(f"ok {words[1]}")


def lines(fd: int, pending: bytearray) -> list[list[str]]:
    out = []
    while b"\n" in pending:
        line, _, rest = bytes(pending).partition(b"\n")
        pending[:] = rest
        if line.split():
            out.append(line.decode().split())
    return out


if mode in ("sync", "queue"):
    for raw in sys.stdin.buffer:
        if raw.split():
            run(raw.decode().split())
elif mode in ("sleep", "poll-nb"):
    fl = fcntl.fcntl(0, fcntl.F_GETFL)
    fcntl.fcntl(0, fcntl.F_SETFL, fl | os.O_NONBLOCK)
    pending = bytearray()
    while True:
        time.sleep(0.2)
        if mode == "poll-nb":
            for p in copies:  # nothing comes unasked: EAGAIN
                with contextlib.suppress(BlockingIOError):
                    os.read(p.stdout.fileno(), 65536)
        try:
            got = os.read(0, 4096)
        except BlockingIOError:
            continue
        if not got:
            break
        pending += got
        for words in lines(0, pending):
            run(words)
elif mode == "fork":
    cmd_r, cmd_w = os.pipe()
    ack_r, ack_w = os.pipe()
    fds = [(os.dup(p.stdin.fileno()), os.dup(p.stdout.fileno())) for p in copies]
    if os.fork() == 0:  # the helper: reads a server only when told to
        os.close(cmd_w)
        pending = bytearray()
        while got := os.read(cmd_r, 4096):
            pending += got
            for words in lines(cmd_r, pending):
                call(int(words[1]), fds[int(words[1])])
                os.write(ack_w, b"k")
        os._exit(0)
    os.close(cmd_r)
    for raw in sys.stdin.buffer:
        words = raw.decode().split()
        if words and words[0] == "call":
            os.write(cmd_w, raw)
            os.read(ack_r, 1)
            say(f"ok {words[1]}")
        elif words:
            run(words)
elif mode == "select":
    pending = bytearray()
    while True:
        ready = select.select([0, *(p.stdout for p in copies)], [], [])[0]
        if 0 in ready:
            got = os.read(0, 4096)
            if not got:
                break
            pending += got
            for words in lines(0, pending):
                run(words)
