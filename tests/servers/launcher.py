"""Stdlib server shapes whose direct child is not the process that answers.

    launcher.py double-fork [--ignore-eof]   a launcher that double-forks the real
                 server into a new session (setsid) and exits at once; the server keeps
                 the client's stdin and stdout and answers the handshake.
    launcher.py hand-stdout [--ignore-eof]   a server that forks a helper into a session
                 of its own, lets it serve (it keeps stdin and stdout), waits until the
                 helper has answered `initialize`, then exits.
    launcher.py serve [--ignore-eof] [--child]   the serving loop itself (with --child, it
                 first starts a child that sleeps, so that the tree has depth).

--ignore-eof: at EOF on stdin the serving process does not exit (it sleeps until killed:
the orphan case). With MCP_TETHER_TEST_MARKS=DIR set, the serving process creates
DIR/served-PID once it answered `initialize` and DIR/eof-PID at EOF after that, so a test can wait
for those moments by polling, not sleeping.
"""

import json
import os
import subprocess
import sys
import time

HERE = os.path.abspath(__file__)


def mark(what):
    where = os.environ.get("MCP_TETHER_TEST_MARKS")
    if where:
        open(os.path.join(where, f"{what}-{os.getpid()}"), "w").close()


def serve(ignore_eof, told=None):
    """Answer the handshake line by line (unbuffered: nothing read is lost to a buffer)."""
    buf, served = b"", False
    while True:
        chunk = os.read(0, 65536)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            msg = json.loads(line)
            if "id" not in msg:
                continue
            method = msg.get("method")
            body = {"jsonrpc": "2.0", "id": msg["id"]}
            if method == "initialize":
                body["result"] = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                  "serverInfo": {"name": "launched", "version": "0"}}
            elif method == "tools/list":
                body["result"] = {"tools": []}
            else:
                body["error"] = {"code": -32601, "message": "Method not found"}
            os.write(1, json.dumps(body).encode() + b"\n")
            if method == "initialize":
                served = True
                mark("served")
                if told is not None:
                    os.write(told, b"x")
                    os.close(told)
                    told = None
    if served:  # an EOF after a session, not a stdin at /dev/null from the start
        mark("eof")
    if ignore_eof:
        while True:
            time.sleep(3600)


def main():
    mode, flags = sys.argv[1], set(sys.argv[2:])
    ignore = "--ignore-eof" in flags
    if mode == "serve":
        if "--child" in flags:
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        serve(ignore)
    elif mode == "double-fork":
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                argv = [sys.executable, HERE, "serve"] + (["--ignore-eof"] if ignore else [])
                os.execv(sys.executable, argv)
            os._exit(0)
        os._exit(0)  # at once: the server answers later, through the stdio it kept
    elif mode == "hand-stdout":
        r, w = os.pipe()
        if os.fork() == 0:
            os.setsid()
            os.close(r)
            serve(ignore, told=w)
            os._exit(0)
        os.close(w)
        os.read(r, 1)  # the helper answered `initialize`: hand over and go
        os._exit(0)


if __name__ == "__main__":
    main()
