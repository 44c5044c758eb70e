"""Benchmark: the same command on this machine as it is, then with CPU burners beside it.

Run by hand:
    python bench/under_load.py [--per-core 2] [--only loaded] -- COMMAND...
    python bench/under_load.py --lab reference            # mcp-tether lab --block reference
    python bench/under_load.py --lab python --ready-timeout 10

Prints, all measured in this run:
  1. the load average before each run (the machine is shared: "quiet" is what it was);
  2. the command's wall time, exit code and the machine's load average at its end,
     quiet and loaded, and the ratio loaded / quiet;
  3. with --lab: every row's verdict quiet vs loaded, and the rows that differ (the
     claim under test: under load the tools get slower, never wrong).

The burners are `python -c "while True: pass"` processes, `--per-core` per CPU
(os.cpu_count()). They are started by this script, remembered as (pid, start time) and
ended by identity-checked SIGKILL of exactly those processes, also on Ctrl-C or when
the command fails. Nothing else is signalled.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mcp_tether.proc import ProcessId, identify, signal_process

BURN = "while True: pass"


class Burners:
    """`n` busy loops, started here and ended here, by (pid, start time)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: list[subprocess.Popen[bytes]] = []
        self.idents: list[ProcessId] = []

    def __enter__(self) -> Burners:
        for _ in range(self.n):
            p = subprocess.Popen([sys.executable, "-c", BURN], stdin=subprocess.DEVNULL)
            self.procs.append(p)
            ident = identify(p.pid)
            if ident is not None:
                self.idents.append(ident)
        print(f"under_load: {self.n} burners running, pids "
              + " ".join(str(i.pid) for i in self.idents), file=sys.stderr)
        return self

    def __exit__(self, *exc: object) -> None:
        for ident in self.idents:
            signal_process(ident, signal.SIGKILL)  # re-checks identity before sending
        for p in self.procs:
            p.wait()  # our own children: reap them
        print(f"under_load: {self.n} burners ended", file=sys.stderr)


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def timed(cmd: list[str], capture: bool) -> tuple[float, int, str, str]:
    before = loadavg()
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, check=False,
                       stdout=subprocess.PIPE if capture else None, text=True)
    took = time.monotonic() - t0
    return took, p.returncode, p.stdout or "", f"{before} -> {loadavg()}"


def verdicts(out: str) -> dict[str, str]:
    try:
        rows = json.loads(out)["results"]
    except (ValueError, KeyError, TypeError):
        return {}
    return {f"{r.get('block')} {r.get('label')} {r.get('scenario')}": str(r.get("verdict"))
            for r in rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-core", type=int, default=2, help="burners per CPU (2)")
    ap.add_argument("--only", choices=("quiet", "loaded", "both"), default="both")
    ap.add_argument("--lab", action="append", default=[], metavar="BLOCK",
                    help="run `mcp-tether lab --json --block BLOCK` (repeatable) and "
                    "compare the verdicts row by row")
    ap.add_argument("--ready-timeout", default=None, help="passed to the lab")
    ap.add_argument("command", nargs="*", help="the command (after --)")
    args = ap.parse_args(argv)
    cmd = list(args.command)
    if args.lab:
        cmd = [sys.executable, "-m", "mcp_tether", "lab", "--json"]
        for b in args.lab:
            cmd += ["--block", b]
        if args.ready_timeout:
            cmd += ["--ready-timeout", args.ready_timeout]
    if not cmd:
        ap.error("a command (after --) or --lab BLOCK")
    n = args.per_core * (os.cpu_count() or 1)
    runs: dict[str, tuple[float, int, str, str]] = {}
    print(f"under_load: {' '.join(cmd)}", file=sys.stderr)
    if args.only in ("quiet", "both"):
        runs["quiet"] = timed(cmd, capture=bool(args.lab))
    if args.only in ("loaded", "both"):
        with Burners(n):
            runs["loaded"] = timed(cmd, capture=bool(args.lab))
    print(f"\n{'run':<8} {'wall s':>8} {'exit':>5}  load average (1/5/15 min) before -> after")
    for name, (took, code, _out, load) in runs.items():
        print(f"{name:<8} {took:8.1f} {code:5d}  {load}")
    if len(runs) == 2:
        print(f"loaded / quiet wall time: {runs['loaded'][0] / runs['quiet'][0]:.2f}x "
              f"({n} burners on {os.cpu_count()} CPUs)")
    if args.lab:
        per = {name: verdicts(r[2]) for name, r in runs.items()}
        names = list(per)
        keys = list(dict.fromkeys(k for v in per.values() for k in v))
        print()
        differ = 0
        for k in keys:
            vs = [per[name].get(k, "-") for name in names]
            mark = "" if len(set(vs)) == 1 else "   <- differs"
            differ += bool(mark)
            print(f"  {k:<48} " + "  ".join(f"{v:<11}" for v in vs) + mark)
        print(f"\n{len(keys)} rows, {differ} differ between " + " and ".join(names))
        errors = {name: sum(v == "error" for v in per[name].values()) for name in names}
        print("rows that could not run: "
              + ", ".join(f"{name} {e}" for name, e in errors.items()))
        return 1 if differ or any(errors.values()) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
