"""Fixture `daemonizer`: a plain server that, at start, daemonizes a helper process.

Classic double fork: fork; the child calls setsid() (new session, new group) and forks
again; the intermediate exits at once; the grandchild points fds 0-2 at /dev/null and
ticks forever. The helper has escaped the server's process group and is reparented to
init (or to a subreaper): signalling the server's group cannot reach it. The server logs
`event=daemonized daemon_pid=<pid>` so a probe knows whom to look for.

The server itself behaves like `plain`: it exits 0 on stdin EOF, leaving the helper.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # run as a script

if TYPE_CHECKING:  # mypy checks the package path; scripts never need mcp_tether
    from mcp_tether.lab.python._common import log, make_server
else:
    from _common import log, make_server

mcp = make_server("daemonizer")


def _daemon_body() -> None:
    """In the grandchild: detach the standard streams, then tick until killed."""
    os.chdir("/")
    log("daemon_ready", pgid=os.getpgid(0), sid=os.getsid(0))
    null = os.open(os.devnull, os.O_RDWR)
    # Dropping our copies of the wire matters: a held copy of the server's stdout keeps
    # the client from ever reading EOF on it.
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if null > 2:
        os.close(null)
    while True:
        time.sleep(0.1)


def daemonize() -> int:
    """Double-fork a ticking helper; return its pid (read back through a pipe)."""
    rfd, wfd = os.pipe()
    child = os.fork()
    if child == 0:  # intermediate
        try:
            os.close(rfd)
            os.setsid()
            grandchild = os.fork()
            if grandchild == 0:
                os.write(wfd, f"{os.getpid()}\n".encode())
                os.close(wfd)
                _daemon_body()
            os._exit(0)
        finally:
            os._exit(1)  # never fall back into the server's code
    os.close(wfd)
    with os.fdopen(rfd, "rb") as pipe:
        daemon_pid = int(pipe.readline() or b"0")
    os.waitpid(child, 0)  # reap the intermediate: no zombie of ours left behind
    return daemon_pid


if __name__ == "__main__":
    # Fork before run(): anyio's worker threads do not exist yet.
    daemon_pid = daemonize()
    log("daemonized", daemon_pid=daemon_pid)
    log("ready")
    mcp.run()
    log("run_returned")
