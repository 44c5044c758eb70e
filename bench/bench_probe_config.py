"""Benchmark: `probe --config` with 8 servers vs the slowest one alone and vs the sum.

Run by hand:  python bench/bench_probe_config.py
Eight small stdlib servers (tests/servers/mini.py: four that exit on EOF, four with a
lingering thread) in one config file. Prints the wall time of probing all eight at once,
of each server alone, the slowest alone, the sum, and the ratios (target: about the
slowest, far below the sum). All measured in this run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MINI = str(Path(__file__).resolve().parent.parent / "tests" / "servers" / "mini.py")
ARGS = ["-s", "close,exit,crash,devnull,sigterm", "--window", "1"]


def run(argv: list[str]) -> float:
    t = time.monotonic()
    subprocess.run([sys.executable, "-m", "mcp_tether", "probe", *argv],
                   stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.monotonic() - t


def main() -> None:
    servers = {f"plain{i}": [MINI] for i in range(4)}
    servers.update({f"lingering{i}": [MINI, "--thread"] for i in range(4)})
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "mcp.json"
        cfg.write_text(json.dumps({"mcpServers": {
            name: {"command": sys.executable, "args": ["-S", *args]}
            for name, args in servers.items()}}))
        together = run(["--config", str(cfg), "--yes", *ARGS])
        alone = {name: run([*ARGS, "--", sys.executable, "-S", *args])
                 for name, args in servers.items()}
    slowest = max(alone.values())
    total = sum(alone.values())
    print(f"8 servers x 5 scenarios via --config: {together:6.2f} s")
    print(f"each alone: {', '.join(f'{n} {t:.2f}' for n, t in alone.items())}")
    print(f"slowest alone {slowest:.2f} s, sum {total:.2f} s")
    print(f"--config / slowest = {together / slowest:.2f}x   "
          f"--config / sum = {together / total:.2f}x")


if __name__ == "__main__":
    main()
