"""Benchmark: `mcp-tether ps --json` against `ps -e -o pid,ppid,args`, 1000 extra processes.

Run by hand:  .venv/bin/python bench/bench_ps.py [--extra 1000] [--runs 5] [--orphans KIND]
Target (issue 10): ps at most 1.5x the time of `ps -e` in the same run; prints the ratio.

Default: the extra processes are children of this script (fork, pause), so they are
cheap and are all ended at the end by the identities held here, nothing else.
`--orphans` makes them orphans adopted by init, the shapes that make the scan look at
every process's descriptors (it re-executes itself in a pid namespace of its own first,
so that init is the namespace's and nothing else on the machine is seen or touched):
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

from mcp_tether.proc import ExitWaiter, identify, signal_process

TARGET = 1.5  # issue 10: within 1.5x of `ps -e -o pid,ppid,args`


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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--extra", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--comm", default=None,
                    help="rename the extra processes (e.g. sleep); default: they stay "
                         "`python`, the worst case, since scan must read every python argv")
    ap.add_argument("--orphans", choices=("leaked", "daemons"), default=None,
                    help="make the extra processes orphans of these shapes (in a pid "
                         "namespace of its own); default: children of this script")
    args = ap.parse_args()
    if args.orphans:
        _pidns.enter()
    with open("/proc/loadavg") as fh:
        load = fh.read().split()[0]
    tether = shutil.which("mcp-tether", path=os.path.dirname(sys.executable)) or "mcp-tether"
    pids = (spawn_orphans(args.extra, args.comm, args.orphans) if args.orphans
            else spawn(args.extra, args.comm))
    idents = [i for i in map(identify, pids) if i is not None]
    try:
        total = sum(1 for n in os.listdir("/proc") if n.isdigit())
        (ours_all, ref_all, start_all), (ours_cpu, ref_cpu, _) = timed(
            [[tether, "ps", "--json"], ["ps", "-e", "-o", "pid,ppid,args"], [tether, "--version"]],
            args.runs)
        ours, ref = statistics.median(ours_all), statistics.median(ref_all)
        cpu_ratio = statistics.median(ours_cpu) / max(statistics.median(ref_cpu), 1e-6)
    finally:
        for ident in idents:
            signal_process(ident, signal.SIGKILL)
        with ExitWaiter(idents) as w:
            deadline = time.monotonic() + 10
            while w.pending and time.monotonic() < deadline:
                w.wait(deadline - time.monotonic())
        for pid in pids:  # our children (orphans are reaped by the namespace's init)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    ratio = ours / ref
    start = statistics.median(start_all)
    shape = f"orphans: {args.orphans}" if args.orphans else "children of the bench"
    print(f"processes on the machine during the run: {total} ({args.extra} extra, {shape}), "
          f"load average {load} on {os.cpu_count()} CPUs")
    print(f"mcp-tether ps --json   median {ours * 1000:7.1f} ms  "
          f"runs {' '.join(f'{t * 1000:.1f}' for t in ours_all)}")
    print(f"ps -e -o pid,ppid,args median {ref * 1000:7.1f} ms  "
          f"runs {' '.join(f'{t * 1000:.1f}' for t in ref_all)}")
    print(f"(mcp-tether --version, interpreter start-up alone: median {start * 1000:.1f} ms)")
    print(f"CPU time (user+sys) median: mcp-tether {statistics.median(ours_cpu) * 1000:.1f} ms, "
          f"ps {statistics.median(ref_cpu) * 1000:.1f} ms, ratio {cpu_ratio:.2f}x")
    print(f"ratio {ratio:.2f}x (target <= {TARGET}x): {'ok' if ratio <= TARGET else 'OVER'}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
