"""A stdio server that starts processes for its user and for its own work (stdlib only).

    python leave_server.py DIR [helper] WHAT...

Starts each WHAT, then writes DIR/ready and reads stdin to EOF (no protocol: the tests
are about the tree, not the messages). With `helper` it runs under `mcp_tether.tethered()`
(the helper, armed before anything starts, but for a WHAT written `pre-WHAT`); without,
it is a plain program (run it behind `mcp-tether run`). What it starts, for the user:
  tmux       `tmux -S DIR/tmux.sock new -d`: a terminal session (its server daemonizes)
  daemon     `setsid -f` a daemon listening on DIR/daemon.sock, stdio on /dev/null
  stdio-daemon  the same daemon, on the server's own stdin and stdout (the protocol
             channel: it is taken for the server, and ends)
  tcp-daemon the same daemon on a loopback TCP port (DIR/tcp.port)
  outside    `sleep` in a session of its own, kept out with `outside_tether()`
  outside-group  the same, left in the server's process group
and for its own work (each must end with it):
  child      a plain `sleep` child          nohup    `nohup sleep`
  setsid     a child in a session of its own (stdio inherited)
  double     a daemonized grandchild (`setsid -f sleep`, stdio inherited)
  script     a shell on a pseudo-terminal `script` holds (`script -qfc`)
  ptyfork    a shell on a pseudo-terminal the server holds itself (`pty.fork`)
  detached-script  `setsid -f script -qfc`: pseudo-terminal masters, nowhere to attach
Every daemon writes its pid to DIR/<what>.pid before it is counted as started.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time

DAEMON = """
import os, socket, sys
if sys.argv[1].startswith("tcp:"):  # on a loopback port of its own choosing, written there
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    with open(sys.argv[1][4:], "w") as fh:
        fh.write(str(s.getsockname()[1]))
else:
    s = socket.socket(socket.AF_UNIX)
    s.bind(sys.argv[1])
s.listen()
conns = []
with open(sys.argv[2] + ".tmp", "w") as fh:
    fh.write(str(os.getpid()))
os.rename(sys.argv[2] + ".tmp", sys.argv[2])
while True:
    c = s.accept()[0]
    c.sendall(b"a")  # accepted: a user that has read this byte is one the daemon serves
    conns.append(c)  # kept open: its users stay connected
"""
NULL = subprocess.DEVNULL


def wait_for(path: str) -> None:
    deadline = time.monotonic() + 30
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.exit(f"leave_server: {path} never appeared")
        time.sleep(0.02)


def start(what: str, d: str) -> None:
    import mcp_tether

    sleep = ["sleep", "600"]
    if what == "tmux":
        env = {k: v for k, v in os.environ.items() if k != "TMUX"}
        subprocess.run(["tmux", "-S", f"{d}/tmux.sock", "new", "-d", "sleep 600"], env=env,
                       stdin=NULL, stdout=NULL, check=True)
    elif what in ("daemon", "stdio-daemon", "tcp-daemon"):
        null = None if what == "stdio-daemon" else NULL
        where = f"tcp:{d}/tcp.port" if what == "tcp-daemon" else f"{d}/daemon.sock"
        subprocess.run(["setsid", "-f", sys.executable, "-c", DAEMON, where, f"{d}/{what}.pid"],
                       stdin=null, stdout=null, stderr=NULL, check=True)
        wait_for(f"{d}/{what}.pid")
    elif what in ("outside", "outside-group"):
        p = subprocess.Popen(sleep, env=mcp_tether.outside_tether(), stdin=NULL,
                             start_new_session=what == "outside")
        with open(f"{d}/{what}.pid", "w") as fh:
            fh.write(str(p.pid))
    elif what == "child":
        subprocess.Popen(sleep, stdin=NULL)
    elif what == "nohup":
        subprocess.Popen(["nohup", *sleep], stdin=NULL, stdout=NULL, stderr=NULL)
    elif what == "setsid":
        subprocess.Popen(sleep, start_new_session=True)
    elif what == "double":
        subprocess.run(["setsid", "-f", *sleep], check=True)
    elif what == "script":
        subprocess.Popen(["script", "-qfc", "sleep 600", "/dev/null"], stdin=NULL, stdout=NULL)
    elif what == "detached-script":
        subprocess.run(["setsid", "-f", "script", "-qfc", "sleep 600", "/dev/null"],
                       stdin=NULL, stdout=NULL, check=True)
    elif what == "ptyfork":
        pid, master = pty.fork()
        if pid == 0:
            os.execvp("sh", ["sh", "-c", "sleep 600"])
        globals().setdefault("masters", []).append(master)  # held open while it serves
    else:
        sys.exit(f"leave_server: unknown {what!r}")


def main() -> None:
    d, *rest = sys.argv[1:]
    helper = rest[:1] == ["helper"]
    whats = rest[1:] if helper else rest
    for what in whats:
        if what.startswith("pre-"):
            start(what[4:], d)
    whats = [w for w in whats if not w.startswith("pre-")]
    if helper:
        import mcp_tether

        with mcp_tether.tethered():
            serve(d, whats)
    else:
        serve(d, whats)


def serve(d: str, whats: list[str]) -> None:
    for what in whats:
        start(what, d)
    with open(f"{d}/ready", "w") as fh:
        fh.write(str(os.getpid()))
    while os.read(0, 65536):
        pass


if __name__ == "__main__":
    main()
