"""Benchmark: the lab's reference rows A-J against a serial fixed-wait baseline.

Run by hand:  python bench/bench_lab.py [--skip-baseline]
Prints, all measured in this run:
  1. wall time of `mcp-tether lab --block reference` vs the serial baseline (each row:
     start, handshake, trigger, wait 4 s, check), same ten rows, and the ratio;
     the two must agree on every verdict they can both see (alive or not after 4 s);
  2. the probe's exit time vs the fixed fixtures' own logged shutdown instant
     (event=shutdown mono=..., CLOCK_MONOTONIC in both) per scenario: the difference is
     the time from the fixture's last log line to the kernel reporting its exit;
  3. the probe's own CPU per scenario (keeper + client), median and max.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time

from mcp_tether.lab import node_env, rows, spec_for
from mcp_tether.probe.runner import run_specs

FIXED_WAIT = 4.0
INIT = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "baseline", "version": "0"}}}) + "\n").encode()

# A deliberately naive client: what one would write by hand to check a row.
CLIENT = rf"""
import os, signal, socket, subprocess, sys, time
mode, argv = sys.argv[1], sys.argv[2:]
a, b = socket.socketpair(); c, d = socket.socketpair()
p = subprocess.Popen(argv, stdin=b.fileno(), stdout=d.fileno())
b.close(); d.close()
print(p.pid, flush=True)
a.sendall({INIT!r})
c.recv(65536)
if mode == "exit":
    os._exit(0)
if mode == "crash":
    signal.pause()
a.shutdown(socket.SHUT_WR)
for sig in (signal.SIGTERM, signal.SIGKILL):
    try:
        p.wait(2.0); break
    except subprocess.TimeoutExpired:
        p.send_signal(sig)
p.wait()
signal.pause()
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def baseline(ref_rows) -> tuple[float, dict[str, bool]]:
    t0 = time.monotonic()
    out = {}
    for r in ref_rows:
        cl = subprocess.Popen([sys.executable, "-c", CLIENT, r.scenario, *r.argv],
                              stdout=subprocess.PIPE, text=True)
        server = int(cl.stdout.readline())
        if r.scenario == "crash":
            time.sleep(0.05)
            cl.kill()
        time.sleep(FIXED_WAIT)  # the naive way: wait a fixed time, then look
        out[r.row] = alive(server)
        if alive(server):
            os.kill(server, signal.SIGKILL)
        cl.kill()
        cl.wait()
    return time.monotonic() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-baseline", action="store_true")
    a = ap.parse_args()
    node_dir = node_env.ensure()
    ref = rows(node_dir, ("reference",))
    t0 = time.monotonic()
    res = run_specs([spec_for(r) for r in ref], jobs=len(ref))
    lab_s = time.monotonic() - t0
    print("1. reference rows A-J")
    verdicts = " ".join(f"{r.row}={x['verdict']}" for r, x in zip(ref, res, strict=False))
    print(f"   lab:      {lab_s:6.2f} s  " + verdicts)
    if not a.skip_baseline:
        base_s, base = baseline(ref)
        agree = all(
            base[r.row] == (x["verdict"] in ("orphaned",)) or r.scenario == "close"
            for r, x in zip(ref, res, strict=False)
        )
        print(f"   baseline: {base_s:6.2f} s  (serial, fixed {FIXED_WAIT:g} s wait per row)")
        print(f"   ratio:    {base_s / lab_s:6.1f}x faster; verdicts agree: {agree}")
    print("2. exit time vs the fixture's own shutdown instant (fixed fixtures)")
    specs = []
    for argv in ([*rows(node_dir, ("reference",))[6].argv],
                 [sys.executable, str(node_env.SRC.parent / "python" / "fixed.py")]):
        for sc in ("close", "exit", "crash", "sigterm", "inherited-writer"):
            for style in ("node", "python"):
                from mcp_tether.probe import ProbeOptions, build_specs
                specs += build_specs(argv, ProbeOptions(host_style=style, scenarios=(sc,)))
    diffs = []
    for _round in range(3):
        for _spec, x in zip(specs, run_specs(specs, jobs=4), strict=False):
            m = re.findall(r"event=shutdown mono=([0-9.]+)", x.get("stderr_tail", ""))
            if m and x.get("gone_at"):
                diffs.append((x["gone_at"] - float(m[-1])) * 1000)
    diffs.sort()
    print(f"   probe exit instant - fixture's logged shutdown: n={len(diffs)} "
          f"median {statistics.median(diffs):.2f} ms, min {diffs[0]:.2f}, max {diffs[-1]:.2f} ms")
    print(f"   within 2 ms: {sum(d <= 2 for d in diffs)}/{len(diffs)}")
    cpu = sorted(x["probe_cpu_ms"] for x in res)
    print("3. probe CPU per scenario (keeper + client), reference rows")
    print(f"   median {statistics.median(cpu):.1f} ms, max {cpu[-1]:.1f} ms")
    _ = socket  # the baseline client imports it in its own process


if __name__ == "__main__":
    main()
