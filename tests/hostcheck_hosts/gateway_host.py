"""A gateway (stdlib only): MCP clients connect to it over TCP on 127.0.0.1, and it runs
one copy of the config entry `mini` per connection, relaying bytes both ways. The shape
of supergateway and mcp-proxy: stdio servers behind a network listener, one copy per
client, every copy with the same argv, cwd and environment, all children of the one
gateway process. A connection's copy gets EOF when its client hangs up.

Prints `ready PORT`, then `started PID` for each connection's copy once it runs. Ends at
stdin EOF (its copies end with their pipes).
Usage: gateway_host.py CONFIG
"""

import json
import os
import socket
import subprocess
import sys
import threading

config = sys.argv[1]


def say(text: str) -> None:
    os.write(1, (text + "\n").encode())


def pump_in(conn: socket.socket, p: subprocess.Popen) -> None:
    while data := conn.recv(65536):
        p.stdin.write(data)
        p.stdin.flush()
    p.stdin.close()  # the client hung up: EOF for its copy


def pump_out(conn: socket.socket, p: subprocess.Popen) -> None:
    while data := p.stdout.read1(65536):
        conn.sendall(data)


def serve(conn: socket.socket) -> None:
    with open(config) as fh:
        entry = json.load(fh)["mcpServers"]["mini"]
    p = subprocess.Popen([entry["command"], *entry.get("args", [])], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    say(f"started {p.pid}")
    threading.Thread(target=pump_in, args=(conn, p), daemon=True).start()
    threading.Thread(target=pump_out, args=(conn, p), daemon=True).start()


listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
say(f"ready {listener.getsockname()[1]}")


def accept() -> None:
    while True:
        conn, _ = listener.accept()
        serve(conn)


threading.Thread(target=accept, daemon=True).start()
while sys.stdin.buffer.read(4096):
    pass
os._exit(0)
