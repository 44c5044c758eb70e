"""Benchmark of `mcp_tether.client.stdio_client` against the SDK's own (by hand, not a test).

    .venv/bin/python bench/bench_client.py [--n 11] [--n-slow 3] [--node]

Both clients run in this process, on the same server, in the same run; figures are
medians, printed beside the SDK client's as a difference and a ratio.

1. start-up: entering the block until `ClientSession.initialize()` returns
   (goal: ours under +50 ms), and the CPU time of all the session's processes
   (`tree_cpu`, from RUSAGE_CHILDREN: load-proof, unlike wall time)
2. clean exit, a server that exits on stdin EOF: leaving the block until it returns
   and until the last process of the tree is gone (pidfd exit instants), beside the
   server's own exit time (EOF sent -> server gone) (goal: its own exit time + < 5 ms)
3. clean exit, a server that ignores EOF: same, against the grace (2 s, both clients)
   (goal: the grace + < 20 ms)
4. the host SIGKILLed mid-session: is the server's tree gone, and when
   (the SDK's leaks are ended by this script afterwards, identity-checked)
`--node` adds the TypeScript SDK `timer` fixture to 3 and 4 (needs the lab's Node
fixtures). The servers of 1-3 are stdlib Python, so the figures are the clients'.
Linux (pidfds, /proc). The guard's summary line is silenced (MCP_TETHER_LOG=quiet).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters
from mcp.client.stdio import stdio_client as sdk_stdio_client

from mcp_tether.client import stdio_client as our_stdio_client
from mcp_tether.proc import ExitWaiter, ProcessId, descendants, identify, is_running
from mcp_tether.proc.signals import signal_process

# A stdlib MCP server: answers initialize, ignores notifications; on EOF it exits, or
# with "ignore-eof" keeps a non-daemon thread alive (like python-sdk issue 2231).
SERVER = r"""
import json, sys, threading, time
if len(sys.argv) > 1 and sys.argv[1] == "ignore-eof":
    threading.Thread(target=lambda: time.sleep(3600)).start()
for line in sys.stdin.buffer:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {},
            "serverInfo": {"name": "bench", "version": "0"}}}
        sys.stdout.buffer.write(json.dumps(reply).encode() + b"\n")
        sys.stdout.buffer.flush()
"""

HOST = r"""
import json, os, sys, anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters
cfg = json.loads(sys.argv[1])
if cfg["ours"]:
    from mcp_tether.client import stdio_client
else:
    from mcp.client.stdio import stdio_client
from mcp_tether.proc import descendants
async def main():
    params = StdioServerParameters(command=cfg["command"], args=cfg["args"], env=cfg["env"],
                                   cwd=cfg.get("cwd"))
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            print(json.dumps([list(p.ident) for p in descendants(os.getpid())]), flush=True)
            await anyio.sleep_forever()
anyio.run(main)
"""

QUIET = {"MCP_TETHER_LOG": "quiet"}
CLIENTS: dict[str, Callable[..., Any]] = {"sdk": sdk_stdio_client, "ours": our_stdio_client}


def ms(x: float) -> str:
    return f"{x * 1000:8.1f} ms"


class TreeWatch:
    """Exit instants (pidfd) of a fixed set of processes, collected by a thread."""

    def __init__(self, idents: list[ProcessId]) -> None:
        self.idents = idents
        self.waiter = ExitWaiter(idents)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + 30
        while self.waiter.pending and time.monotonic() < deadline:
            self.waiter.wait(0.5)

    def result(self, timeout: float = 10.0) -> dict[ProcessId, float]:
        self.thread.join(timeout)
        exited = self.waiter.exited
        self.waiter.close()
        return exited


def one_session(client: str, server: list[str], cwd: str | None = None) -> dict[str, float]:
    """Start, initialize, leave; instants relative to leaving the block."""
    params = StdioServerParameters(command=server[0], args=server[1:], env=QUIET, cwd=cwd)
    out: dict[str, float] = {}

    async def main() -> None:
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        async with CLIENTS[client](params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                out["startup"] = time.monotonic() - t0
                tree = [p.ident for p in descendants(os.getpid())]
                watch = TreeWatch(tree)
                # the server is the process running our script (not the guard)
                srv = [i for i in tree if _is_server(i)]
            out["leave"] = time.monotonic()
        out["returned"] = time.monotonic()
        # Both clients have reaped their child by now, and the guard its server: the
        # delta is the CPU of the whole session's processes, a load-proof cost.
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        out["tree_cpu"] = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        exited = watch.result()
        if len(exited) == len(tree):
            out["last_gone"] = max(exited.values())
            out["server_gone"] = exited[srv[0]] if srv else float("nan")

    anyio.run(main)
    base = out.pop("leave")
    return {k: (v if k in ("startup", "tree_cpu") else v - base) for k, v in out.items()}


def _is_server(ident: ProcessId) -> bool:
    try:
        with open(f"/proc/{ident.pid}/cmdline", "rb") as fh:
            return b"bench_server" in fh.read()
    except OSError:
        return False


def compare(
    title: str, server: list[str], n: int, keys: list[str], cwd: str | None = None
) -> dict[str, dict[str, float]]:
    runs: dict[str, list[dict[str, float]]] = {"sdk": [], "ours": []}
    for _ in range(n):
        for client in ("sdk", "ours"):  # interleaved: both see the same machine load
            runs[client].append(one_session(client, server, cwd))
    med = {c: {k: statistics.median(r[k] for r in runs[c] if k in r) for k in keys}
           for c in runs}
    print(f"\n{title} (median of {n})")
    for k in keys:
        s, o = med["sdk"][k], med["ours"][k]
        print(f"  {k:12} sdk {ms(s)}   ours {ms(o)}   diff {ms(o - s)}   ratio {o / s:6.3f}")
    return med


def host_kill(client: str, server: list[str], cwd: str | None, window: float) -> str:
    """SIGKILL a host mid-session; how long until the server's tree is gone."""
    env = {**QUIET, "PATH": os.environ["PATH"]}
    cfg = {"ours": client == "ours", "command": server[0], "args": server[1:], "env": env,
           "cwd": cwd}
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(HOST)
    host = subprocess.Popen([sys.executable, fh.name, json.dumps(cfg)], stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)
    try:
        assert host.stdout is not None
        tree = [ProcessId(int(p), float(s)) for p, s in json.loads(host.stdout.readline())]
        host_id = identify(host.pid)
        assert host_id is not None
        watch = TreeWatch(tree)
        t0 = time.monotonic()
        signal_process(host_id, signal.SIGKILL)
        host.wait()
        deadline = t0 + window
        while any(is_running(i) for i in tree) and time.monotonic() < deadline:
            time.sleep(0.01)
        alive = [i for i in tree if is_running(i)]
        if alive:
            for ident in alive:  # positively ours: the tree our host started
                signal_process(ident, signal.SIGKILL)
            watch.result(5)
            return f"{len(alive)} of {len(tree)} processes still alive after {window:.0f} s (LEAK)"
        gone = watch.result()
        return f"tree of {len(tree)} gone {ms(max(gone.values()) - t0).strip()} after the SIGKILL"
    finally:
        if host.stdout:
            host.stdout.close()
        os.unlink(fh.name)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=11)
    ap.add_argument("--n-slow", type=int, default=3, help="runs of the 2 s ladder cases")
    ap.add_argument("--node", action="store_true", help="add the Node `timer` fixture")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    script = tmp / "bench_server.py"
    script.write_text(SERVER)
    eof = [sys.executable, str(script)]
    ignore = [sys.executable, str(script), "ignore-eof"]
    print(f"python {sys.version.split()[0]}, mcp {_mcp_version()}, {os.cpu_count()} CPUs")

    compare("1+2. EOF-honouring server: start-up, and exit after leaving the block",
            eof, args.n, ["startup", "tree_cpu", "server_gone", "returned", "last_gone"])
    if args.n_slow > 0:
        compare("3. EOF-ignoring server (2 s grace in both), exit after leaving the block",
                ignore, args.n_slow, ["returned", "last_gone"])
    node: list[str] | None = None
    cwd = None
    if args.node:
        from mcp_tether.lab import node_env

        cache = node_env.ensure(quiet=True)
        node, cwd = ["node", str(cache / "timer.mjs")], str(cache)
    if node and args.n_slow > 0:
        compare("3b. Node `timer` fixture (ignores EOF, live timer), exit after leaving the block",
                node, args.n_slow, ["returned", "last_gone"], cwd)
    print("\n4. host SIGKILLed mid-session")
    cases = [("python, ignores EOF", ignore)] + ([("node timer", node)] if node else [])
    for label, server in cases:
        for client in ("sdk", "ours"):
            print(f"  {label:20} {client:5} {host_kill(client, server, cwd, 5.0)}")
    return 0


def _mcp_version() -> str:
    from importlib.metadata import version

    return version("mcp")


if __name__ == "__main__":
    sys.exit(main())
