"""Benchmark: `mcp-tether ps --json` against `ps -e -o pid,ppid,args`, with 0 and N extra processes.

Run by hand:  .venv/bin/python bench/bench_ps.py [--extra 3000] [--runs 7] [--orphans KIND]
Target: at N = 3000 extra processes, `ps --json` within 1.6x of `ps(1)` in the
same run, and its cost per process (the slope between 0 and N extra) below `ps(1)`'s.
The fixed start-up of an ordinary Python program is accepted; what grows with the
machine must not cost more than the C program's. Prints both ratios, wall and CPU.

Both sides are timed at 0 extra processes, then again with N, interleaved run by run.
The bench runs in a pid namespace of its own (`--host-namespace` to run beside the
machine's processes instead), so that the count between the two points is exactly the N
added here, whatever else the machine starts or ends meanwhile, and so that nobody
else's `ps` sees our extra processes. The process scan is what is measured: DOCKER_HOST
points at a socket that does not exist, so container support is off and no daemon's
round trips (or `docker stats` runs) weigh on one side; `--daemon` keeps the machine's.

Default: the extra processes are children of this script (fork, pause), so they are
cheap and are all ended at the end by the identities held here, nothing else.
`--orphans` makes them orphans adopted by the namespace's init, the shapes that make the
scan look at every process's descriptors:
- `leaked`: each holds a pipe as stdin whose writer is gone and a pipe as stdout whose
  reader is gone: a thousand leaked stdio processes, each listed with its evidence;
- `daemons`: stdin and stdout at /dev/null, a pipe as stderr, as services under init
  look: not channels, but each must be searched for private copies of the stdio.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time

import _pidns  # bench/, beside this script

from mcp_tether.proc import ExitWaiter, ProcessId, identify, signal_process

TARGET = 1.6  # the target: within 1.6x of `ps -e -o pid,ppid,args` at 3000 extra processes


def _idle(comm: str | None) -> None:
    """The extra process's life: do nothing, cheaply, until killed."""
    if comm:  # look like another program to ps's and our name filter
        with open("/proc/self/comm", "w") as fh:
            fh.write(comm)
    try:
        signal.pause()
    finally:
        os._exit(0)


def spawn(n: int, comm: str | None) -> list[int]:
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            _idle(comm)
        pids.append(pid)
    return pids


def spawn_orphans(n: int, comm: str | None, kind: str) -> list[int]:
    """n processes adopted by the namespace's init (a double fork); their pids come back
    through a pipe. The pipes of `leaked` are closed here once every orphan holds them."""
    report_r, report_w = os.pipe()
    if kind == "leaked":
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        fds = (in_r, out_w, 2)
    else:
        null = os.open(os.devnull, os.O_RDWR)
        err_r, err_w = os.pipe()
        fds = (null, null, err_w)
    for _ in range(n):
        mid = os.fork()
        if mid == 0:
            pid = os.fork()
            if pid == 0:
                for target, fd in enumerate(fds):
                    os.dup2(fd, target)
                os.closerange(3, 256)
                _idle(comm)
            os.write(report_w, f"{pid}\n".encode())
            os._exit(0)
        os.waitpid(mid, 0)
    os.close(report_w)
    data = b""
    while chunk := os.read(report_r, 65536):
        data += chunk
    os.close(report_r)
    if kind == "leaked":
        for fd in (in_r, in_w, out_r, out_w):
            os.close(fd)  # writer and reader gone: only the orphans hold their ends
    else:  # err_r stays open here until the bench exits: a live reader of their
        for fd in (null, err_w):  # stderr, as journald is for a service's
            os.close(fd)
    return [int(x) for x in data.split()]


def timed(commands: list[list[str]], runs: int) -> tuple[list[list[float]], list[list[float]]]:
    """Wall and CPU (user + system) times of each command, interleaved run by run so
    that a busy machine weighs on both sides alike (medians are compared, not single
    runs). CPU time is what the command itself costs; on a machine whose load is far
    above its CPU count the wall times are mostly waiting for a CPU."""
    # Like an installed wheel (pip byte-compiles it), not a source tree with
    # PYTHONDONTWRITEBYTECODE: the warm-up run leaves .pyc files the timed runs use.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for argv in commands:  # warm caches
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, env=env)
    times: list[list[float]] = [[] for _ in commands]
    cpu: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for i, argv in enumerate(commands):
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, env=env)
            times[i].append(time.perf_counter() - t)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[i].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return times, cpu


class Point:
    """Both sides timed with `count` processes visible: medians of wall and CPU time."""

    def __init__(self, tether: str, runs: int) -> None:
        self.count = _count()
        walls, cpus = timed([[tether, "ps", "--json"], PS], runs)
        self.walls = walls
        self.wall = [statistics.median(w) for w in walls]  # [ours, ps(1)]
        self.cpu = [statistics.median(c) for c in cpus]


PS = ["ps", "-e", "-o", "pid,ppid,args"]


def _count() -> int:
    return sum(1 for n in os.listdir("/proc") if n.isdigit())


def _load() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def _end(pids: list[int], idents: list[ProcessId]) -> None:
    for ident in idents:
        signal_process(ident, signal.SIGKILL)
    with ExitWaiter(idents) as w:
        deadline = time.monotonic() + 30
        while w.pending and time.monotonic() < deadline:
            w.wait(deadline - time.monotonic())
    for pid in pids:  # our children (orphans are reaped by the namespace's init)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--extra", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--comm", default=None,
                    help="rename the extra processes (e.g. sleep); default: they stay "
                         "`python`, the worst case, since scan must read every python argv")
    ap.add_argument("--orphans", choices=("leaked", "daemons"), default=None,
                    help="make the extra processes orphans of these shapes; default: "
                         "children of this script")
    ap.add_argument("--host-namespace", action="store_true",
                    help="run beside the machine's processes, not in a pid namespace of "
                         "its own (the count between the two points is then not exact)")
    ap.add_argument("--daemon", action="store_true",
                    help="let ps ask the machine's container daemon, as a user's would")
    args = ap.parse_args()
    if not args.host_namespace or args.orphans:
        _pidns.enter()
    if not args.daemon:
        os.environ["DOCKER_HOST"] = "unix:///nonexistent/bench-ps-no-daemon.sock"
    tether = shutil.which("mcp-tether", path=os.path.dirname(sys.executable)) or "mcp-tether"
    load0 = _load()
    start_all, _ = timed([[tether, "--version"]], args.runs)
    base = Point(tether, args.runs)
    pids = (spawn_orphans(args.extra, args.comm, args.orphans) if args.orphans
            else spawn(args.extra, args.comm))
    idents = [i for i in map(identify, pids) if i is not None]
    try:
        full = Point(tether, args.runs)
    finally:
        _end(pids, idents)
    load1 = _load()
    shape = f"orphans: {args.orphans}" if args.orphans else "children of the bench"
    where = "host namespace" if args.host_namespace and not args.orphans else "own pid namespace"
    daemon = "the machine's container daemon" if args.daemon else "no container daemon"
    print(f"{args.extra} extra processes ({shape}), {where}, {daemon}; load average {load0} "
          f"before, {load1} after, on {os.cpu_count()} CPUs; medians of {args.runs} runs")
    print(f"interpreter start-up alone (mcp-tether --version): "
          f"{statistics.median(start_all[0]) * 1000:.1f} ms wall")
    for p in (base, full):
        print(f"{p.count:6d} processes: mcp-tether ps --json {p.wall[0] * 1000:7.1f} ms wall "
              f"{p.cpu[0] * 1000:7.1f} ms CPU | ps(1) {p.wall[1] * 1000:7.1f} ms wall "
              f"{p.cpu[1] * 1000:7.1f} ms CPU | ratio {p.wall[0] / p.wall[1]:.2f}x wall "
              f"{p.cpu[0] / max(p.cpu[1], 1e-6):.2f}x CPU")
        print(f"         runs (ms): ours {' '.join(f'{t * 1000:.1f}' for t in p.walls[0])}; "
              f"ps(1) {' '.join(f'{t * 1000:.1f}' for t in p.walls[1])}")
    n = max(full.count - base.count, 1)
    per = [[(full.wall[i] - base.wall[i]) / n * 1e6 for i in (0, 1)],
           [(full.cpu[i] - base.cpu[i]) / n * 1e6 for i in (0, 1)]]
    for label, (ours, ref) in zip(("wall", "CPU"), per, strict=True):
        print(f"per process ({label}, slope over {n} processes): mcp-tether {ours:.1f} us, "
              f"ps(1) {ref:.1f} us")
    ratio = full.wall[0] / full.wall[1]
    ok_ratio, ok_slope = ratio <= TARGET, per[0][0] < per[0][1]
    print(f"at {full.count} processes: ratio {ratio:.2f}x (target <= {TARGET}x): "
          f"{'ok' if ok_ratio else 'OVER'}; per process {per[0][0]:.1f} vs {per[0][1]:.1f} us "
          f"(target below ps(1)'s): {'ok' if ok_slope else 'OVER'}")
    return 0 if ok_ratio and ok_slope else 1


if __name__ == "__main__":
    sys.exit(main())
