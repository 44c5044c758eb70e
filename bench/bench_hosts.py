"""Benchmark: wrap of a large ~/.claude.json, and what crash safety costs per write.

Run by hand:  python bench/bench_hosts.py
1. A ~/.claude.json with 1500 projects (a real one grows like this), one stdio server
   each: the JSONC parse alone (baseline), `wrap --dry-run` (parse, plan, re-parse and
   round-trip check, diff) and a real `wrap` (plus backup and atomic replace), as
   ratios to the parse.
2. One small config rewritten 20 times: with the janitor (a process per write that
   removes temps after a SIGKILL) and without it (baseline, in this same run).
All figures are measured in this run; nothing here is asserted.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from mcp_tether import hosts
from mcp_tether.hosts import atomic, jsonc

TETHER = "/opt/tether/bin/mcp-tether"


def big_claude_json(path: Path) -> None:
    projects = {
        f"/w/p{i}": {
            "history": [{"display": "fix the tests " * 10} for _ in range(10)],
            "mcpServers": {"s": {"type": "stdio", "command": "npx", "args": ["-y", "pkg"]}},
        }
        for i in range(1500)
    }
    path.write_text(json.dumps({"projects": projects}, indent=2))


def timed(fn: object, n: int = 3) -> float:
    runs = []
    for _ in range(n):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MCP_TETHER_STATE_DIR"] = str(Path(tmp) / "state")
        cfg = Path(tmp) / ".claude.json"
        big_claude_json(cfg)
        text = cfg.read_text()
        parse = timed(lambda: jsonc.parse(text))
        dry = timed(lambda: hosts.wrap(cfg, "claude-code", TETHER, dry_run=True, force=True))

        def real() -> None:
            hosts.wrap(cfg, "claude-code", TETHER, force=True)
            hosts.unwrap(cfg, "claude-code")

        both = timed(real) / 2
        print(f"~/.claude.json: {len(text) / 1e6:.1f} MB, 1500 servers")
        print(f"  parse only (baseline)  {parse * 1000:8.0f} ms")
        print(f"  wrap --dry-run         {dry * 1000:8.0f} ms  ({dry / parse:.1f}x parse)")
        print(f"  wrap (written)         {both * 1000:8.0f} ms  ({both / parse:.1f}x parse)")

        small = Path(tmp) / "mcp.json"
        small.write_text('{"mcpServers": {"a": {"command": "x"}}}')
        old = small.read_bytes()
        with_janitor = timed(lambda: atomic.write_config(small, small, old, old), 20)
        real_janitor = atomic._Janitor

        class NoJanitor:
            def __init__(self, paths: object) -> None:
                pass

            def done(self) -> None:
                pass

        atomic._Janitor = NoJanitor  # type: ignore[misc,assignment]  # the baseline
        try:
            without = timed(lambda: atomic.write_config(small, small, old, old), 20)
        finally:
            atomic._Janitor = real_janitor  # type: ignore[misc]
        print("one small config rewrite (median of 20)")
        print(f"  without janitor (baseline) {without * 1000:6.1f} ms")
        print(f"  with janitor               {with_janitor * 1000:6.1f} ms"
              f"  (+{(with_janitor - without) * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
