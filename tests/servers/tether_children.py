"""A Python MCP server with a child and a grandchild, served by `mcp_tether.run`.

    python tether_children.py LOGDIR [plain]      plain: `app.run()`, no helper

At start it spawns a child in a session of its own (as a browser launcher does) that
spawns a grandchild ignoring SIGTERM, then exits nothing: both would outlive the server.
Its shutdown hook notes whether both were still alive when it ran. Notes, one word a
line, go to LOGDIR/<pid>.log; the kids' `pid start` pairs to LOGDIR/<pid>.kids.
"""

import os
import subprocess
import sys
import time

from mcp.server.mcpserver import MCPServer

import mcp_tether

logdir = sys.argv[1]
GRANDCHILD = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); signal.pause()"
CHILD = (
    "import subprocess, sys, signal\n"
    f"g = subprocess.Popen([sys.executable, '-c', {GRANDCHILD!r}])\n"
    "print(g.pid, flush=True)\n"
    "signal.pause()\n"
)


def note(word: str) -> None:
    with open(os.path.join(logdir, f"{os.getpid()}.log"), "a") as fh:
        fh.write(word + "\n")


def start_time(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()[19]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, start_new_session=True)
assert child.stdout is not None
grandchild = int(child.stdout.readline())
with open(os.path.join(logdir, f"{os.getpid()}.kids"), "w") as fh:
    for pid in (child.pid, grandchild):
        fh.write(f"{pid} {start_time(pid)}\n")

app = MCPServer("tether-children")


@app.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@mcp_tether.on_shutdown
def look_at_the_kids() -> None:
    time.sleep(0.05)  # a hook that takes a moment: the kids must still be there after it
    note("hook-kids-alive" if alive(child.pid) and alive(grandchild) else "hook-kids-gone")


note("ready")
if sys.argv[2:] == ["plain"]:
    app.run()
else:
    mcp_tether.run(app)
