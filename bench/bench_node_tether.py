"""Benchmark: stdin EOF to tree gone, Node server with `tether(server)` vs by hand.

Three servers, measured alternately in one run (not a test; prints figures): the fixture
tests/node/server.mjs on an SDK line with a 100 ms timer and a `sleep` child it never
ends itself (keep mode `sleep`),
  tether    the one line: `tether(server, { onShutdown })`: server.close(), the hook, the
            descendants' ladder (SIGTERM to the sleep), exit
  preload   no line, NODE_OPTIONS=--import=mcp-tether/register: the same, armed first
  own-end   the same server exiting in its own handler: `process.stdin.on("end", () =>
            process.exit(0))`, the least any server can do: the baseline (its sleep is
            left behind, and ended by this script after the run)
Each run: spawn with pipes, MCP handshake (initialize, initialized), then close stdin at
t0; t1 is the instant the pidfds on the server and (tether, preload) on its sleep child
have all turned readable (the exits, not the reaps): "tree gone".
Runs alternate (the order rotates each round) and the median of the rounds' differences
is the figure judged, since a loaded machine drifts between runs.
Target: tether within +5 ms of own-end.

    python bench/bench_node_tether.py [--runs 30] [--line v1|v2]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
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


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/children") as fh:
            out += [int(w) for w in fh.read().split()]
    return out


def one_run(fx: Path, line: str, mode: str, timeout: float = 5.0) -> float | None:
    """Seconds from closing stdin to the tree gone (own-end: the process); None if it
    outlived `timeout`."""
    env = dict(os.environ)
    if mode == "preload":
        env["NODE_OPTIONS"] = "--import=mcp-tether/register"
    proc = subprocess.Popen(["node", "server.mjs", line, "sleep",
                             "plain" if mode == "preload" else mode], cwd=fx, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None
    fds = [os.pidfd_open(proc.pid)]
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
        # The sleep child (spawned before connect), pinned by a pidfd before the trigger.
        kids = [os.pidfd_open(k) for k in _children(proc.pid)]
        if len(kids) != 1:
            raise RuntimeError(f"expected one sleep child, found {len(kids)}")
        fds += kids
        waited = fds if mode != "own-end" else fds[:1]
        t0 = time.monotonic()
        proc.stdin.close()
        pending = list(waited)
        while pending:
            left = t0 + timeout - time.monotonic()
            ready = select.select(pending, [], [], max(0.0, left))[0] if left > 0 else []
            if not ready:
                return None
            pending = [f for f in pending if f not in ready]
        return time.monotonic() - t0
    finally:
        for fd in fds[1:]:
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)  # own-end's orphan, by its pidfd
            except ProcessLookupError:
                pass
        for fd in fds:
            os.close(fd)
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
    modes = ("tether", "preload", "own-end")
    times: dict[str, list[float]] = {m: [] for m in modes}
    lost = dict.fromkeys(times, 0)
    rounds: dict[str, list[float]] = {"tether": [], "preload": []}  # minus own-end, same round
    one_run(fx, args.line, "tether")  # warm the file cache: not counted
    for i in range(args.runs):
        got = {}
        for mode in modes[i % 3:] + modes[:i % 3]:
            t = one_run(fx, args.line, mode)
            if t is None:
                lost[mode] += 1
            else:
                times[mode].append(t)
                got[mode] = t
        for mode in rounds:
            if mode in got and "own-end" in got:
                rounds[mode].append(got[mode] - got["own-end"])
    for mode, xs in times.items():
        what = "process gone" if mode == "own-end" else "tree gone"
        print(f"  {mode:<8} {_fmt(xs)}  ({what}; did not exit: {lost[mode]})")
    for mode, diffs in rounds.items():
        diff = (statistics.median(times[mode]) - statistics.median(times["own-end"])) * 1000
        paired = statistics.median(diffs) * 1000
        print(f"{mode} (tree) - own-end (process): medians {diff:+.2f} ms, median of rounds "
              f"{paired:+.2f} ms (target: <= +5 ms): {'met' if paired <= 5 else 'NOT met'}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
