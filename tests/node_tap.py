"""What a failed `node --test` run says, for an assertion message: each failing subtest
(its `not ok` line and YAML block: error, location, stack) first, then the output's tail.

The tail alone can miss the failure: the TAP stream prints a subtest where it ends, and
forty later passing subtests fill a 4,000-character tail (seen once in a whole-suite run,
with nothing left to tell which subtest had failed)."""

from __future__ import annotations

import re
import subprocess

NOT_OK = re.compile(r"^(\s*)not ok \d+")
BLOCK_LINES = 60  # of one failure's YAML block, at most


def failures(tap: str) -> list[str]:
    """Each `not ok` subtest with the lines that follow it at a deeper indent."""
    lines = tap.splitlines()
    out = []
    for i, line in enumerate(lines):
        m = NOT_OK.match(line)
        if not m:
            continue
        indent, block = m.group(1), [line]
        for nxt in lines[i + 1:i + 1 + BLOCK_LINES]:
            if not nxt.startswith(indent + " ") and nxt.strip():
                break
            block.append(nxt)
        out.append("\n".join(block))
    return out


def report(run: subprocess.CompletedProcess[str], tail: int = 2000) -> str:
    """The failing subtests (innermost last), then the tails of stdout and stderr."""
    failed = failures(run.stdout)
    head = "\n".join(failed) if failed else "(no `not ok` line in the output)"
    return (f"node --test exited {run.returncode}; failing subtests:\n{head}\n"
            f"--- stdout tail ---\n{run.stdout[-tail:]}\n--- stderr tail ---\n"
            f"{run.stderr[-tail:]}")
