"""Benchmark: a whole `probe` run against its longest inherent wait.

Run by hand:  python bench/bench_probe.py [--repeat N]
For a compliant server (tests/servers/mini.py) and one that orphans (mini.py --thread),
prints, all measured in this run:
  - the server's start-up: spawn to the answer of `initialize`, by a minimal client
    (median of N), the baseline;
  - the inherent floor: start-up + the longest wait a scenario cannot skip, with the
    probe's defaults: the idle period (3 s), the client's full ladder (grace +
    term-grace, 4 s) and, when the tree outlives its window, window + horizon (2 + 4 s);
  - the whole probe's wall time (median of N) and its ratio to the floor. Target: <= 1.25;
  - where the time beyond the floor went, for the median run: the scenario that ended
    last, how long after the run's start its keeper began (start delay) and how long it
    took itself (its own start-up, any start-up allowance, window, horizon);
  - the probe's own CPU (keepers + clients, summed over the scenarios; median run).
`--crowd N` first starts N idle processes (a busy desktop's process table), which the
keepers' tree scans must not pay for; they are ended (our own children) at the end.
Timing targets live here, never in the tests.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mcp_tether.ladder import GRACE_AFTER_EOF, TERM_GRACE
from mcp_tether.probe import ProbeOptions, probe
from mcp_tether.probe.spec import IDLE, WINDOW

MINI = str(Path(__file__).resolve().parent.parent / "tests" / "servers" / "mini.py")
SERVERS = {
    "compliant (mini.py)": [sys.executable, "-S", MINI],
    "orphaning (mini.py --thread)": [sys.executable, "-S", MINI, "--thread"],
}
INIT = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"}}}) + "\n").encode()


def startup(argv: list[str]) -> float:
    """Spawn to the first answer line, seconds (the server is then closed and reaped)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(INIT)
    p.stdin.flush()
    p.stdout.readline()
    took = time.monotonic() - t0
    p.kill()  # our own unreaped child
    p.wait()
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--crowd", type=int, default=0, help="idle processes to add first")
    args = ap.parse_args()
    n = args.repeat
    crowd = [subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL)
             for _ in range(args.crowd)]
    try:
        run(n, len(crowd))
    finally:
        for p in crowd:
            p.kill()  # our own unreaped children
            p.wait()


def run(n: int, crowd: int) -> None:
    ladder = GRACE_AFTER_EOF + TERM_GRACE
    print(f"defaults: window {WINDOW:g} s, horizon {ladder:g} s, ladder {ladder:g} s, "
          f"idle {IDLE:g} s; {n} runs each; {crowd} extra idle processes")
    for name, argv in SERVERS.items():
        base = statistics.median(startup(argv) for _ in range(n))
        walls, floors, lasts, cpus = [], [], [], []
        for _ in range(n):
            t0 = time.monotonic()
            report = probe(argv, ProbeOptions())
            walls.append(time.monotonic() - t0)
            lasts.append(_last(report.results, t0))
            cpus.append(sum(r.probe_cpu_ms or 0.0 for r in report.results))
            outlived = any(r.verdict in ("orphaned", "lingered") for r in report.results)
            wait = max(IDLE, ladder, WINDOW + ladder if outlived else WINDOW)
            floors.append(base + wait)
        wall, floor = statistics.median(walls), statistics.median(floors)
        print(f"{name}: start-up {base * 1000:.0f} ms, floor {floor:.2f} s, "
              f"whole probe {wall:.2f} s (min {min(walls):.2f}, max {max(walls):.2f}), "
              f"ratio {wall / floor:.2f}")
        name_, delay, own = lasts[walls.index(sorted(walls)[len(walls) // 2])]
        print(f"  median run ended with {name_}: start delay {delay:.2f} s, "
              f"its own {own:.2f} s; probe CPU {statistics.median(cpus):.0f} ms")


def _last(results: list[Any], t0: float) -> tuple[str, float, float]:
    """The scenario that ended last: name, its keeper's start after t0, its own length."""
    best = ("?", 0.0, 0.0)
    for r in results:
        raw = r.record or {}
        events = raw.get("events") or []
        if raw.get("t0") is None or not events:
            continue
        delay = float(raw["t0"]) - t0
        # Its end: the last process event, or the window's / horizon's end when the
        # scenario sat through it (a survivor at the window's end).
        own = max(float(e["t_ms"]) for e in events if e.get("pid") is not None)
        marks = {e["what"]: float(e["t_ms"]) for e in events if e.get("pid") is None}
        if raw.get("survivors") or raw.get("killed_at_window"):
            own = max(own, marks.get("window-end", 0.0), marks.get("horizon-end", 0.0))
        own /= 1000
        if r.scenario == "idle":
            own += IDLE  # its silence follows the handshake, with no event at its end
        if delay + own > best[1] + best[2]:
            best = (r.scenario, delay, own)
    return best


if __name__ == "__main__":
    main()
