"""Fault soak for the guard (by hand, not a test): randomized client deaths, survivors counted.

    .venv/bin/python bench/bench_soak.py [--rounds 2000] [--jobs 4] [--seed N] [--minutes M]

Each round: a fresh client starts `mcp-tether run --grace 0.2 --term-grace 0.2 -- SERVER`
with a pipe or a socketpair as stdin, then dies after a random delay (0-0.3 s) by
exiting, by SIGKILL, or by closing the guard's stdin; or (kill-guard) it SIGKILLs the
guard's pid, as a host that gives up does, and lives on 1 s with stdin open (its
survivors are counted once the tree had 10 s to end). SERVER is one process shape:
  direct    one process: exits on EOF / ignores EOF / ignores EOF and SIGTERM
  sh        `sh -c 'SERVER ignore-eof; true'` (the wrapper stays the parent)
  launcher  forks the real server (setsid, same stdio) and exits at once
  hopper    starts a descendant that forks and exits in a loop (with or without setsid)
  escaped   double-forks a helper out of the session (setsid, stdio on /dev/null)
Once the guard has exited, every process still carrying the round's unique marker in
its argv (every process of the tree does: argv survives fork) is a survivor. Printed:
rounds per shape and death, survivors (must be 0), wall time. Survivors are then
SIGKILLed, identity checked (they carry our marker: we started them).
The soak re-executes itself inside a pid namespace of its own (bench/_pidns.py): a
survivor it cannot end (a hopper outruns one SIGKILL per snapshot), or every process of
an interrupted soak, dies with the namespace and never stays on the machine.
Linux only (reads /proc).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

import _pidns  # bench/, beside this script

from mcp_tether.proc import SAME, ProcessId, cmdline, compare, identify, snapshot, wait_gone
from mcp_tether.proc.signals import signal_process

SERVER = r'''
import os, signal, sys, threading, time
mode, marker = sys.argv[1], sys.argv[2]

def forever():
    while True:
        time.sleep(3600)

def to_null():
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)

behave = "eof"
if mode in ("ignore", "stubborn"):
    behave = mode
if mode == "launcher" or mode == "launcher-ignore":
    if os.fork():
        os._exit(0)
    os.setsid()
    behave = "ignore" if mode == "launcher-ignore" else "eof"
if mode in ("hopper", "hopper-setsid") and os.fork() == 0:
    to_null()
    while True:
        if os.fork():
            os._exit(0)
        if mode == "hopper-setsid":
            os.setsid()
if mode == "escaped" and os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        to_null()
        forever()
    os._exit(0)
if behave == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if behave in ("ignore", "stubborn"):
    threading.Thread(target=forever).start()
while os.read(0, 65536):
    pass
'''

CLIENT = r'''
import json, os, signal, socket, subprocess, sys, time
kind, action, delay, report = sys.argv[1:5]
guard_argv = sys.argv[6:]
if kind == "socket":
    mine, theirs = socket.socketpair()
    guard = subprocess.Popen(guard_argv, stdin=theirs.fileno(), stdout=subprocess.DEVNULL)
    theirs.close()
else:
    r, w = os.pipe()
    guard = subprocess.Popen(guard_argv, stdin=r, stdout=subprocess.DEVNULL)
    os.close(r)
with open(report, "w") as fh:
    json.dump({"guard": guard.pid}, fh)
time.sleep(float(delay))
if action == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if action == "kill-guard":  # a host that gives up on its child: SIGKILL, stdin still open
    guard.kill()  # our own unreaped child
    guard.wait()
    time.sleep(1.0)  # the client lives on a while, its end of stdin open (no EOF comes)
    os._exit(0)
if action == "close":
    mine.close() if kind == "socket" else os.close(w)
    sys.exit(guard.wait())
os._exit(0)
'''

SHAPES = ["direct-eof", "direct-ignore", "direct-stubborn", "sh", "launcher",
          "launcher-ignore", "hopper", "hopper-setsid", "escaped"]
DEATHS = ["exit", "kill", "close", "kill-guard"]
SETTLE = 10.0  # kill-guard: the supervisor behind the guard's front still runs its ladder
GUARD_DEADLINE = 30.0  # generous: the soak runs on loaded machines too


def carrying(marker: str) -> list[ProcessId]:
    me = os.getpid()
    return [i.ident for i in snapshot().values()
            if not i.exited and i.pid != me and marker in " ".join(cmdline(i.pid))]


def one_round(n: int, rng: random.Random, tmp: str, server_py: str, client_py: str,
              lock: threading.Lock, shapes: list[str], deaths: list[str]
              ) -> tuple[str, str, list[tuple[ProcessId, str]]]:
    with lock:
        shape, death = rng.choice(shapes), rng.choice(deaths)
        kind, delay = rng.choice(["pipe", "socket"]), rng.uniform(0, 0.3)
    marker = os.path.join(tmp, f"round-{n}")
    mode = {"direct-eof": "eof", "direct-ignore": "ignore", "direct-stubborn": "stubborn"}
    inner = [sys.executable, server_py, mode.get(shape, shape), marker]
    if shape == "sh":
        inner = ["sh", "-c", f"{sys.executable} {server_py} ignore {marker}; true"]
    guard = [sys.executable, "-m", "mcp_tether", "run", "--grace", "0.2",
             "--term-grace", "0.2", "--", *inner]
    report = marker + ".json"
    env = dict(os.environ, MCP_TETHER_LOG="quiet")
    client = subprocess.Popen([sys.executable, client_py, kind, death, f"{delay}", report,
                               "--", *guard], stdout=subprocess.DEVNULL, env=env)
    try:
        client.wait(GUARD_DEADLINE * 2)  # a "close" client waits for its guard
    except subprocess.TimeoutExpired:
        client.kill()  # our own child; the guard then sees its parent die
        client.wait()
    found: list[ProcessId] = []
    try:
        with open(report) as fh:
            gpid = json.load(fh)["guard"]
    except (OSError, ValueError):
        gpid = None
    gident = identify(gpid) if gpid else None
    if gident is not None and wait_gone(gident, GUARD_DEADLINE) is None:
        found.append(gident)  # the guard itself did not finish in time
    if death == "kill-guard":  # the guard's pid is gone at once; its supervisor is not
        end = time.monotonic() + SETTLE
        while carrying(marker) and time.monotonic() < end:
            time.sleep(0.05)  # polling for a state, with a deadline
    found += [i for i in carrying(marker) if i not in found]
    survivors = []
    for ident in found:
        role = "the guard, still running" if ident == gident else "of the tree"
        what = f"{role}: {' '.join(cmdline(ident.pid))[-90:]}"
        if compare(ident) == SAME:
            signal_process(ident, signal.SIGKILL)
        survivors.append((ident, what))
    return shape, death, survivors


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--shapes", default=",".join(SHAPES),
                    help="comma list of shapes to draw from (default: all)")
    ap.add_argument("--deaths", default=",".join(DEATHS),
                    help="comma list of client deaths to draw from (default: all)")
    ap.add_argument("--minutes", type=float, default=None,
                    help="start no new round after this long (the summary says how many ran)")
    ap.add_argument("--host-namespace", action="store_true",
                    help="run even where no pid namespace of its own can be made (a hopper "
                    "that outlives a killed soak would then stay on the machine)")
    a = ap.parse_args()
    _pidns.enter(allow_host=a.host_namespace)
    shapes = [x for x in a.shapes.split(",") if x]
    deaths = [x for x in a.deaths.split(",") if x]
    if not shapes or not deaths or set(shapes) - set(SHAPES) or set(deaths) - set(DEATHS):
        ap.error(f"shapes from {SHAPES}, deaths from {DEATHS}")
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    lock = threading.Lock()
    counts: Counter[tuple[str, str]] = Counter()
    bad: list[tuple[int, str, str, list[tuple[ProcessId, str]]]] = []
    next_round = iter(range(a.rounds))
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mcp-tether-soak-") as tmp:
        server_py, client_py = os.path.join(tmp, "server.py"), os.path.join(tmp, "client.py")
        with open(server_py, "w") as fh:
            fh.write(SERVER)
        with open(client_py, "w") as fh:
            fh.write(CLIENT)

        def worker() -> None:
            while True:
                with lock:
                    late = a.minutes is not None and time.monotonic() - t0 > a.minutes * 60
                    n = None if late else next(next_round, None)
                if n is None:
                    return
                shape, death, survivors = one_round(n, rng, tmp, server_py, client_py, lock,
                                                    shapes, deaths)
                with lock:
                    counts[(shape, death)] += 1
                    if survivors:
                        bad.append((n, shape, death, survivors))
                    done = sum(counts.values())
                    if done % 100 == 0:
                        print(f"  {done} rounds, {len(bad)} with survivors, "
                              f"{time.monotonic() - t0:.0f} s", file=sys.stderr)

        threads = [threading.Thread(target=worker) for _ in range(a.jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    elapsed = time.monotonic() - t0
    ran = sum(counts.values())
    cut = f" (stopped after {a.minutes:g} min of {a.rounds})" if ran < a.rounds else ""
    print(f"guard fault soak: {ran} client deaths{cut}, seed {seed}, "
          f"{a.jobs} at a time, {elapsed:.0f} s")
    for shape in SHAPES:
        row = "  ".join(f"{d} {counts[(shape, d)]:4d}" for d in DEATHS)
        print(f"  {shape:16s} {row}")
    total = sum(len(s) for *_, s in bad)
    print(f"survivors: {total} (in {len(bad)} rounds)")
    for n, shape, death, survivors in bad[:20]:
        print(f"  round {n}: {shape} {death}:")
        for ident, what in survivors:
            print(f"    {ident}: {what}")
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main())
