"""Soak: a Node host SIGKILLed N times, its server daemonizing at start-up (by hand, not a test).

    .venv/bin/python bench/soak_node_watchdog.py [--rounds 50] [--supervisor node]

Inside a pid namespace of its own (bench/_pidns.py), each round starts a real host on the
TypeScript SDK's 1.x Client with mcp-tether/client's StdioClientTransport (the package's
test host, node/test/fixtures/host.mjs) whose server, behind `sh -c '...; true'`, starts
a helper through a double fork at start-up (setsid, and its parent exits at once:
reparented before any look of the supervisor). Once the host says ready and the server
and its helper have written their "pid start" lines, the host is SIGKILLed. The round's
processes (host, supervisor, shell, server, helper) are recorded by pid + start time;
any still alive as themselves `--deadline` seconds later counts as left, and is then
SIGKILLed by this script through a pidfd (after the count). Prints the count.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import _pidns  # noqa: E402
import node_tether_env  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HOST = REPO / "node" / "test" / "fixtures" / "host.mjs"
STUBBORN = REPO / "node" / "test" / "fixtures" / "stubborn.cjs"


def _stat(pid: int) -> tuple[str, int, str] | None:
    """(state, ppid, start) of a process, None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            rest = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return rest[0], int(rest[1]), rest[19]


def _alive(pid: int, start: str) -> bool:
    st = _stat(pid)
    return st is not None and st[0] not in "ZX" and st[2] == start


def _descendants(root: int) -> list[tuple[int, str]]:
    rows = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (st := _stat(int(name))) is not None and st[0] not in "ZX":
            rows[int(name)] = st
    out, queue = [], [root]
    while queue:
        p = queue.pop()
        for pid, (_, ppid, start) in rows.items():
            if ppid == p:
                out.append((pid, start))
                queue.append(pid)
    return out


def one_round(fx: Path, supervisor: str, deadline: float) -> list[tuple[int, str]]:
    """The processes of one round still alive `deadline` s after the host's SIGKILL."""
    with tempfile.TemporaryDirectory() as tmp:
        pids = Path(tmp) / "pids"
        env = {**os.environ, "HOST_SDK_DIR": str(fx), "HOST_SDK": "1", "HOST_ENDING": "idle",
               "HOST_SUPERVISOR": supervisor, "HOST_GRACE_MS": "300", "HOST_PIDS": str(pids),
               "HOST_WAIT": "2"}
        host = subprocess.Popen(
            ["node", str(HOST), "sh", "-c", f"node {STUBBORN} --daemon; true"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env)
        assert host.stdout is not None
        line = host.stdout.readline().decode()
        if not line.startswith("ready"):
            host.kill()
            host.wait()
            raise RuntimeError(f"the host did not get ready: {line!r}")
        st = _stat(host.pid)
        assert st is not None
        tree = [(host.pid, st[2]), *_descendants(host.pid)]
        tree += [(int(p), s) for p, s in (ln.split() for ln in pids.read_text().split("\n") if ln)]
        host.send_signal(signal.SIGKILL)
        host.wait()
        host.stdout.close()
        end = time.monotonic() + deadline
        left = [t for t in tree if _alive(*t)]
        delay = 0.005
        while left and time.monotonic() < end:
            time.sleep(delay)  # polling for the state, with a deadline
            delay = min(delay * 2, 0.05)
            left = [t for t in tree if _alive(*t)]
        for pid, start in left:  # counted; now cleared, by pidfd after an identity check
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                if _alive(pid, start):
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
            finally:
                os.close(fd)
        return left


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--supervisor", choices=("node", "mcp-tether"), default="node")
    ap.add_argument("--deadline", type=float, default=15.0,
                    help="seconds after the SIGKILL for the tree to be gone (default 15)")
    ap.add_argument("--host-namespace", action="store_true",
                    help="run without a pid namespace of its own")
    args = ap.parse_args(argv)
    _pidns.enter(allow_host=args.host_namespace)
    fx = node_tether_env.ensure()
    total = 0
    rounds_with_leftovers = 0
    for i in range(args.rounds):
        left = one_round(fx, args.supervisor, args.deadline)
        total += len(left)
        rounds_with_leftovers += bool(left)
        if left:
            print(f"round {i + 1}: left {left}", flush=True)
    print(f"supervisor {args.supervisor}: {args.rounds} host SIGKILLs with a daemonizing "
          f"server: {total} process(es) left ({rounds_with_leftovers} round(s) with any)")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
