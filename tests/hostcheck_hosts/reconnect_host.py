"""A host that reloads its config (stdlib only): Cursor's `~/.cursor/mcp.json`.

Starts every stdio server of the file (own session each), does the handshake and `tools/list`,
then watches the file. When an entry changes it starts the new command and, unless
`--abandon` is given, ends the old server first the way the spec asks (close stdin,
0.5 s, SIGTERM to its group, 0.5 s, SIGKILL); with `--abandon` it just drops it, as hosts
observed to leak on a config edit do: it keeps the old copy's pipes but no longer reads
them. It reads every server it uses through an epoll selector, so `ps` can tell the
dropped copy (`abandoned`) from the one in use. On stdin EOF or SIGTERM/SIGINT/SIGHUP it
ends all servers the same way and exits. With `--on-key` (under a terminal) it reloads
the file only when a line with `reload` is typed, as hosts that reconnect on a command do
(Claude Code's /mcp Reconnect), after printing `ready>`; `--config FILE` reads FILE
(relative to the working folder) instead of Cursor's. With `--ping SECONDS` it pings
each server in use (not a dropped one) that often, as hosts that keep their servers warm
do: what makes a dropped copy `superseded` in `ps`.
Usage: reconnect_host.py [--abandon] [--on-key] [--config FILE] [--ping SECONDS]
"""

import json
import os
import selectors
import signal
import subprocess
import sys
import time

CONFIG = (sys.argv[sys.argv.index("--config") + 1] if "--config" in sys.argv
          else os.path.expanduser("~/.cursor/mcp.json"))
ABANDON = "--abandon" in sys.argv
ON_KEY = "--on-key" in sys.argv
PING = float(sys.argv[sys.argv.index("--ping") + 1]) if "--ping" in sys.argv else 0.0


def start(entry: dict) -> subprocess.Popen:
    p = subprocess.Popen([entry["command"], *entry.get("args", [])], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, start_new_session=True)
    for msg in ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                            "clientInfo": {"name": "reconnect-host", "version": "1"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}):
        p.stdin.write((json.dumps(msg) + "\n").encode())
        p.stdin.flush()
        if "id" in msg:
            p.stdout.readline()
    return p


def end(p: subprocess.Popen) -> None:
    p.stdin.close()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            p.wait(0.5)
            return
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, sig)
    p.wait()


def load() -> dict:
    with open(CONFIG) as fh:
        return json.load(fh)["mcpServers"]


entries = load()
# Before the servers start: an edit made while one is starting is seen as an edit.
mtime = os.stat(CONFIG).st_mtime_ns
servers = {name: start(e) for name, e in entries.items()}
r, w = os.pipe()
os.set_blocking(w, False)
signal.set_wakeup_fd(w)
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(sig, lambda *_: None)
sel = selectors.DefaultSelector()  # epoll on Linux: what it watches is in /proc
sel.register(0, selectors.EVENT_READ)
sel.register(r, selectors.EVENT_READ)
for p in servers.values():
    sel.register(p.stdout, selectors.EVENT_READ)
dropped = []  # copies dropped on a config edit: their pipes kept, never read again
stop = False
pinged = time.monotonic()
if ON_KEY:
    sys.stdout.write("ready>")
    sys.stdout.flush()
while not stop:
    typed = b""
    for key, _ in sel.select(0.05):  # the file is looked at every 50 ms
        if key.fd == 0:
            typed = os.read(0, 4096)
        if key.fd == r or (key.fd == 0 and not typed):
            stop = True
        elif key.fd != 0 and not os.read(key.fd, 65536):
            sel.unregister(key.fd)  # that server is gone
    if stop:
        break
    if PING and time.monotonic() - pinged >= PING:
        pinged = time.monotonic()
        for p in servers.values():  # the answers are read (and dropped) by the loop
            p.stdin.write(b'{"jsonrpc": "2.0", "id": 99, "method": "ping"}\n')
            p.stdin.flush()
    now = os.stat(CONFIG).st_mtime_ns
    if (b"reload" not in typed) if ON_KEY else now == mtime:
        continue
    mtime = now
    fresh = load()
    for name, e in fresh.items():
        if e != entries.get(name):
            if name in servers:
                if servers[name].stdout.fileno() in sel.get_map():
                    sel.unregister(servers[name].stdout)
                if ABANDON:
                    dropped.append(servers[name])
                else:
                    end(servers[name])
            servers[name] = start(e)
            sel.register(servers[name].stdout, selectors.EVENT_READ)
    entries = fresh
    if ON_KEY:
        sys.stdout.write("reloaded\n")
        sys.stdout.flush()
for p in servers.values():
    end(p)
