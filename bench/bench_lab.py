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
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from mcp_tether.lab import node_env, rows, spec_for
from mcp_tether.probe.runner import run_specs
from mcp_tether.proc import SAME, compare, identify, signal_process

FIXED_WAIT = 4.0
INIT = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "baseline", "version": "0"}}}) + "\n").encode()

# A deliberately naive client: what one would write by hand to check a row.
CLIENT = rf"""
import os, signal, socket, subprocess, sys, time
mode, argv = sys.argv[1], sys.argv[2:]
a, b = socket.socketpair(); c, d = socket.socketpair()
p = subprocess.Popen(argv, stdin=b.fileno(), stdout=d.fileno(), stderr=subprocess.DEVNULL)
b.close(); d.close()
a.sendall({INIT!r})
c.recv(65536)
print(p.pid, flush=True)  # after the handshake answer
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


def baseline(ref_rows) -> tuple[float, dict[str, bool]]:
    t0 = time.monotonic()
    out = {}
    for r in ref_rows:
        cl = subprocess.Popen([sys.executable, "-c", CLIENT, r.scenario, *r.argv],
                              stdout=subprocess.PIPE, text=True)
        server = identify(int(cl.stdout.readline()))
        if r.scenario == "crash":
            cl.kill()
        time.sleep(FIXED_WAIT)  # the naive way: wait a fixed time, then look
        out[r.row] = server is not None and compare(server) == SAME
        if server is not None:
            signal_process(server, signal.SIGKILL)  # identity-checked: we started it
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
    print("2. exit time vs the server's own logged shutdown instant (CLOCK_MONOTONIC)")
    from mcp_tether.probe import ProbeOptions, build_specs

    mini = [sys.executable, "-S", str(Path(__file__).parent.parent / "tests" / "servers"
                                      / "mini.py"), "--log-shutdown"]
    servers = {
        "node fixed": [*rows(node_dir, ("reference",))[6].argv],
        "python fixed (mcp SDK)": [sys.executable,
                                   str(node_env.SRC.parent / "python" / "fixed.py")],
        "stdlib mini (no SDK, small)": mini,
    }
    for label, argv in servers.items():
        specs = []
        for sc in ("close", "exit", "crash", "inherited-writer"):
            for style in ("node", "python"):
                specs += build_specs(argv, ProbeOptions(host_style=style, scenarios=(sc,)))
        diffs = []
        for _round in range(3):
            for x in run_specs(specs, jobs=2):
                m = re.findall(r"event=shutdown mono=([0-9.]+)", x.get("stderr_tail", ""))
                if m and x.get("gone_at"):
                    diffs.append((x["gone_at"] - float(m[-1])) * 1000)
        if not diffs:
            print(f"   {label}: no shutdown instants logged")
            continue
        diffs.sort()
        print(f"   {label:28} n={len(diffs):2} median {statistics.median(diffs):6.2f} ms, "
              f"min {diffs[0]:6.2f}, max {diffs[-1]:6.2f}; within 2 ms: "
              f"{sum(d <= 2 for d in diffs)}/{len(diffs)}")
    print("   (the difference is last log line -> kernel reports the process gone: the")
    print("    server's own exit teardown plus the probe's wake-up; the small stdlib server")
    print("    shows the probe's share)")
    cpu = sorted(x["probe_cpu_ms"] for x in res)
    print("3. probe CPU per scenario (keeper + client), reference rows")
    print(f"   median {statistics.median(cpu):.1f} ms, max {cpu[-1]:.1f} ms")
    _ = socket  # the baseline client imports it in its own process


if __name__ == "__main__":
    main()
