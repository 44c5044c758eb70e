"""Benchmark: stdin EOF to process gone, Node server with `tether(server)` vs by hand.

Two servers, measured alternately in one run (not a test; prints figures): the fixture
tests/node/server.mjs on an SDK line with a 100 ms timer that keeps it alive,
  tether    the one line: `tether(server, { onShutdown })`: server.close(), the hook, exit
  own-end   the same server exiting in its own handler: `process.stdin.on("end", () =>
            process.exit(0))`, the least any server can do: the baseline
Each run: spawn with pipes, MCP handshake (initialize, initialized), then close stdin at
t0; t1 is the instant a pidfd on the server turns readable (the exit, not the reap).
Runs alternate in pairs (the order flips each pair) and the median of the pairs'
differences is the figure judged, since a loaded machine drifts between runs.
Target: tether within +5 ms of own-end.

    python bench/bench_node_tether.py [--runs 30] [--line v1|v2]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import node_tether_env  # noqa: E402  (the fixtures' folder: pinned SDKs + this package)


def _line(proc: subprocess.Popen[bytes], timeout: float = 60.0) -> bytes:
    assert proc.stdout is not None
    if not select.select([proc.stdout], [], [], timeout)[0]:
        raise RuntimeError("server did not answer")
    return proc.stdout.readline()


def one_run(fx: Path, line: str, mode: str, timeout: float = 5.0) -> float | None:
    """Seconds from closing stdin to the process gone; None if it outlived `timeout`."""
    proc = subprocess.Popen(["node", "server.mjs", line, "timer", mode], cwd=fx,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None
    pidfd = os.pidfd_open(proc.pid)
    try:
        def send(message: dict[str, object]) -> None:
            assert proc.stdin is not None
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "0"}}})
        _line(proc)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        time.sleep(0.05)  # let the server reach its tether(...) / handler line after connect
        t0 = time.monotonic()
        proc.stdin.close()
        ready = select.select([pidfd], [], [], timeout)[0]
        t1 = time.monotonic()
        return (t1 - t0) if ready else None
    finally:
        os.close(pidfd)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def _fmt(xs: list[float]) -> str:
    ms = sorted(x * 1000 for x in xs)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    return f"median {statistics.median(ms):6.2f} ms  p90 {p90:6.2f} ms  min {ms[0]:6.2f} ms"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30, help="runs per server (default 30)")
    ap.add_argument("--line", choices=("v1", "v2"), default="v1", help="SDK line (v1)")
    args = ap.parse_args(argv)
    if not hasattr(os, "pidfd_open"):
        print("needs Linux pidfds", file=sys.stderr)
        return 2
    fx = node_tether_env.ensure()
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    print(f"node {node}, SDK line {args.line}, {args.runs} runs each, alternating")
    times: dict[str, list[float]] = {"tether": [], "own-end": []}
    lost = dict.fromkeys(times, 0)
    pairs: list[float] = []  # tether - own-end, run back to back: the load drifts less
    one_run(fx, args.line, "tether")  # warm the file cache: not counted
    for i in range(args.runs):
        got = {}
        for mode in (("tether", "own-end") if i % 2 == 0 else ("own-end", "tether")):
            t = one_run(fx, args.line, mode)
            if t is None:
                lost[mode] += 1
            else:
                times[mode].append(t)
                got[mode] = t
        if len(got) == 2:
            pairs.append(got["tether"] - got["own-end"])
    for mode, xs in times.items():
        print(f"  {mode:<8} {_fmt(xs)}  (did not exit: {lost[mode]})")
    diff = (statistics.median(times["tether"]) - statistics.median(times["own-end"])) * 1000
    paired = statistics.median(pairs) * 1000
    mins = (min(times["tether"]) - min(times["own-end"])) * 1000
    print(f"tether - own-end: medians {diff:+.2f} ms, median of paired runs {paired:+.2f} ms, "
          f"minimums {mins:+.2f} ms (target: <= +5 ms): {'met' if paired <= 5 else 'NOT met'}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
