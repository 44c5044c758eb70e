"""Benchmark: from stdin EOF to process gone, for a Python MCP server on mcp 2.x.

Four servers, measured side by side in one run (not a test; prints figures):
  lifespan    tethered, plus a lifespan whose `finally` awaits (a checkpoint) and writes a
              marker, and an async hook awaiting a task on the server's loop: the run
              counts only if the marker and the hook's mark are there (cleanup unwound)
  tethered    MCPServer + a non-daemon thread, served with `mcp_tether.run(mcp)`
  untethered  the same server with `mcp.run()`: the thread holds it open forever
  plain       MCPServer with no thread, `mcp.run()`: exits via interpreter finalisation

Each run: spawn with pipes, MCP handshake (initialize 2025-11-25, initialized,
tools/list), then close stdin at t0; t1 is the instant a pidfd on the server turns
readable (the exit itself, not the reap). Untethered runs are SIGKILLed after --timeout.

    python bench/bench_helper.py [--runs 20] [--timeout 3]
    python bench/bench_helper.py --against OTHER/src [--runs 40]

With `--against SRC` (another checkout's src/, e.g. the previous main's), only the
tethered and lifespan servers run, this tree's and that one's interleaved run by run in
one process, and the ratio of medians (this / that) is printed: a regression check that
a change in the machine's load hits both sides alike.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

COMMON = textwrap.dedent(
    """
    import threading
    from mcp.server.mcpserver import MCPServer

    mcp = MCPServer("bench")

    @mcp.tool()
    def echo(text: str) -> str:
        "Return the text."
        return text
    """
)
LIFESPAN = textwrap.dedent(
    """
    import asyncio, os, sys, threading
    from contextlib import asynccontextmanager
    from mcp.server.mcpserver import MCPServer
    import mcp_tether

    marker = os.environ["BENCH_MARKER"]
    task = None

    @asynccontextmanager
    async def lifespan(_server):
        global task
        task = asyncio.create_task(asyncio.sleep(3600))
        try:
            yield {}
        finally:
            await asyncio.sleep(0)
            open(marker, "a").write("lifespan\\n")

    mcp = MCPServer("bench", lifespan=lifespan)

    @mcp_tether.on_shutdown
    async def close_pool():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        open(marker, "a").write("hook\\n")

    threading.Thread(target=threading.Event().wait, daemon=False).start()
    mcp_tether.run(mcp)
    """
)
SERVERS = {
    "lifespan": LIFESPAN,
    "tethered": COMMON
    + textwrap.dedent(
        """
        import mcp_tether
        threading.Thread(target=threading.Event().wait, daemon=False).start()
        mcp_tether.run(mcp)
        """
    ),
    "untethered": COMMON
    + textwrap.dedent(
        """
        threading.Thread(target=threading.Event().wait, daemon=False).start()
        mcp.run()
        """
    ),
    "plain": COMMON + "mcp.run()\n",
}


def _line(proc: subprocess.Popen[bytes], timeout: float = 180.0) -> bytes:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        raise RuntimeError("server did not answer")
    return proc.stdout.readline()


def one_run(script: Path, timeout: float, src: Path = SRC) -> float | None:
    """Seconds from closing stdin to the process gone; None if it outlived `timeout`.

    With a marker file (the lifespan server), a run whose cleanup did not complete
    counts as not exited.
    """
    marker = script.with_suffix(".marker")
    marker.unlink(missing_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(src),
        "MCP_TETHER_LOG": "quiet",
        "BENCH_MARKER": str(marker),
    }
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin is not None
    pidfd = os.pidfd_open(proc.pid)
    try:

        def send(message: dict[str, object]) -> None:
            assert proc.stdin is not None
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()

        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "0"},
                },
            }
        )
        _line(proc)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        _line(proc)
        t0 = time.monotonic()
        proc.stdin.close()
        ready, _, _ = select.select([pidfd], [], [], timeout)
        t1 = time.monotonic()
        if "BENCH_MARKER" in script.read_text() and (
            not marker.exists() or marker.read_text().split() != ["lifespan", "hook"]
        ):
            return None  # gone, but its cleanup was lost
        return (t1 - t0) if ready else None
    finally:
        os.close(pidfd)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20, help="runs per server (default 20)")
    ap.add_argument(
        "--timeout",
        type=float,
        default=3.0,
        help="seconds to wait for an exit before giving up (default 3)",
    )
    ap.add_argument(
        "--untethered-runs",
        type=int,
        default=3,
        help="runs of the server that never exits (each costs --timeout)",
    )
    ap.add_argument("--against", type=Path, metavar="SRC",
                    help="another checkout's src/: compare EOF-to-gone, this tree / that one")
    args = ap.parse_args(argv)
    if args.against is not None and not (args.against / "mcp_tether").is_dir():
        ap.error(f"--against {args.against}: no mcp_tether package there")
    if not hasattr(os, "pidfd_open"):
        print("needs Linux pidfds", file=sys.stderr)
        return 2
    import mcp  # noqa: F401  - fail early and clearly without the SDK

    print(
        f"python {sys.version.split()[0]}, mcp {_version('mcp')}, "
        f"{args.runs} runs (untethered: {args.untethered_runs})"
    )
    if args.against is not None:
        return _against(args.against.resolve(), args.runs, args.timeout)
    with tempfile.TemporaryDirectory(prefix="bench-helper-") as tmp:
        scripts = {}
        for name, text in SERVERS.items():
            scripts[name] = Path(tmp) / f"{name}.py"
            scripts[name].write_text(text)
        # Round-robin, so that a change in the machine's load hits every server alike.
        by_server: dict[str, list[float | None]] = {name: [] for name in SERVERS}
        for i in range(args.runs):
            for name, script in scripts.items():
                if name != "untethered" or i < args.untethered_runs:
                    by_server[name].append(one_run(script, args.timeout))
        rows = list(by_server.items())
    print(f"{'server':<12} {'median':>12} {'min':>9} {'max':>9}  exited")
    for name, times in rows:
        done = [t for t in times if t is not None]
        if not done:
            print(
                f"{name:<12} {'did not exit within ' + format(args.timeout, 'g') + ' s':>32}"
                f"  0/{len(times)}"
            )
            continue
        ms = [t * 1000 for t in done]
        print(
            f"{name:<12} {statistics.median(ms):>9.1f} ms {min(ms):>6.1f} ms {max(ms):>6.1f} ms"
            f"  {len(done)}/{len(times)}"
        )
    medians = {
        name: statistics.median(t * 1000 for t in ts if t is not None)
        for name, ts in rows
        if any(t is not None for t in ts)
    }
    if "lifespan" in medians and "tethered" in medians:
        base = medians["tethered"]
        print(
            f"lifespan unwound + loop-bound hook vs tethered without either: "
            f"{medians['lifespan'] / base:.2f}x ({medians['lifespan'] - base:+.1f} ms)"
        )
    return 0


def _against(other: Path, runs: int, timeout: float) -> int:
    """This tree vs `other`, interleaved: tethered and lifespan, EOF to gone."""
    print(f"this tree {SRC} vs {other}; load average {os.getloadavg()[0]:.1f}")
    sides = {"this": SRC, "that": other}
    with tempfile.TemporaryDirectory(prefix="bench-helper-") as tmp:
        times: dict[tuple[str, str], list[float]] = {}
        failed = 0
        for name in ("tethered", "lifespan"):
            script = Path(tmp) / f"{name}.py"
            script.write_text(SERVERS[name])
            for i in range(runs):
                order = ("this", "that") if i % 2 == 0 else ("that", "this")
                for side in order:
                    t = one_run(script, timeout, sides[side])
                    if t is None:
                        failed += 1
                    else:
                        times.setdefault((name, side), []).append(t * 1000)
    print(f"{'server':<10} {'this (ms)':>10} {'that (ms)':>10} {'this/that':>10}")
    for name in ("tethered", "lifespan"):
        a = statistics.median(times.get((name, "this"), [float("nan")]))
        b = statistics.median(times.get((name, "that"), [float("nan")]))
        print(f"{name:<10} {a:>10.1f} {b:>10.1f} {a / b:>9.3f}x")
    if failed:
        print(f"{failed} run(s) did not exit within {timeout:g} s or lost their cleanup")
    return 1 if failed else 0


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
