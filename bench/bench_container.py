"""Benchmark: does a `docker run -i` server outlive its client? Unguarded vs guarded.

Run by hand (needs a daemon and the test image, tests/containers/build):
    .venv/bin/python bench/bench_container.py [--baseline-src DIR] [--runs 1]
For each server mode (ignore-eof, stubborn) and each way of running it, a client
process starts the command with a pipe as its stdin, waits for the answer to a ping,
and is SIGKILLed. Printed: how long until no container of this run is running (or
"LEFT RUNNING" after --deadline s), and the count left. Ways:
  unguarded   docker run -i --rm IMAGE mode
  baseline    mcp-tether run -- docker run ... with the guard from --baseline-src (e.g.
              `git archive core src | tar -x -C DIR`: the guard before container follow)
  guarded     mcp-tether run -- docker run ... with this checkout's guard
Every container carries io.mcp-tether.test=1 and a per-run label; all of them (and only
them) are removed at the end. Clients are this script's children, killed by Popen.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'


def running(label: str) -> list[str]:
    out = subprocess.run(["docker", "ps", "-q", "--filter", f"label={label}"],
                         capture_output=True, text=True, check=False).stdout
    return out.split()


# The client: starts the server command on a pipe, relays one ping and its answer,
# then waits to be killed. (Killing the command itself would kill the guard, not its
# client: that is the other measurement, --kill-command.)
CLIENT = """
import subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
p.stdin.write(sys.stdin.buffer.readline()); p.stdin.flush()
sys.stdout.buffer.write(p.stdout.readline()); sys.stdout.flush()
time.sleep(3600)
"""


def trial(argv: list[str], label: str, env: dict[str, str], deadline: float,
          kill_command: bool) -> str:
    cmd = argv if kill_command else [sys.executable, "-c", CLIENT, *argv]
    client = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, env=env)
    assert client.stdin is not None and client.stdout is not None
    client.stdin.write(PING)
    client.stdin.flush()
    client.stdout.readline()
    t0 = time.monotonic()
    client.kill()  # our own child, by its Popen handle
    client.wait()
    client.stdin.close()
    client.stdout.close()
    while time.monotonic() - t0 < deadline:
        if not running(label):
            return f"{(time.monotonic() - t0) * 1000:7.0f} ms"
        time.sleep(0.1)  # polling for the state with a deadline
    return f"LEFT RUNNING ({len(running(label))})"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline-src", help="another version's src/ tree, run as the baseline")
    ap.add_argument("--deadline", type=float, default=20.0)
    ap.add_argument("--kill-command", action="store_true",
                    help="SIGKILL the command itself (the guard, when guarded)")
    args = ap.parse_args()
    image = subprocess.run([str(HERE / "tests/containers/build")], capture_output=True,
                           text=True, check=True).stdout.strip()
    run_id = uuid.uuid4().hex[:8]
    ways: list[tuple[str, list[str], dict[str, str]]] = [("unguarded", [], dict(os.environ))]
    guard = [sys.executable, "-m", "mcp_tether", "run", "--grace", "1", "--term-grace", "1",
             "--"]
    if args.baseline_src:
        env = dict(os.environ, PYTHONPATH=args.baseline_src)
        ways.append(("baseline", guard, env))
    ways.append(("guarded", guard, dict(os.environ, PYTHONPATH=str(HERE / "src"))))
    all_label = f"io.mcp-tether.bench={run_id}"
    try:
        for mode in ("ignore-eof", "stubborn"):
            for name, prefix, env in ways:
                label = f"io.mcp-tether.bench-trial={run_id}-{mode}-{name}"
                box = ["docker", "run", "-i", "--rm", "--network", "none", "--label",
                       "io.mcp-tether.test=1", "--label", all_label, "--label", label,
                       image, mode]
                who = "command" if args.kill_command else "client"
                result = trial([*prefix, *box], label, env, args.deadline, args.kill_command)
                print(f"{mode:10} {name:9} {who} SIGKILLed -> container gone after {result}",
                      flush=True)
    finally:
        ids = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={all_label}"],
                             capture_output=True, text=True, check=False).stdout.split()
        if ids:
            subprocess.run(["docker", "rm", "-f", *ids], capture_output=True, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
