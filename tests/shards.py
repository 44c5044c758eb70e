"""The suite's two halves, balanced by each test file's seconds, and how those seconds are
kept true: tests/durations.json, recorded from a whole run and checked against the files.

`tests/run` runs the suite as two passes at once (MCP_TETHER_SHARD=1/2 and 2/2): `deal`
gives each whole file (its module fixtures stay in one pass) to the lighter half,
heaviest first, by its seconds in tests/durations.json. Those seconds go stale as files
come and go, so:
- `MCP_TETHER_RECORD_DURATIONS=1 tests/run` records them: each half writes what its own
  files took (set-up, call and tear-down of every test, `Timings`), and `record` rewrites
  tests/durations.json from both halves once they have ended;
- tests/test_shards.py fails when the file names a test file that is gone or misses one
  that exists (`stale`), saying that command.
A file added by hand before the next recording carries an estimate, listed under
"estimated" until a recording times it.

Run as `python tests/shards.py record OUT PART...` (tests/run does), it writes OUT from
the parts; the test files are those beside OUT.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DURATIONS = HERE / "durations.json"
REFRESH = "MCP_TETHER_RECORD_DURATIONS=1 tests/run"
HOW = (f"Seconds each test file takes in a whole run of the suite (`tests/run`), by which it "
       f"deals the files into two halves of equal weight (tests/shards.py). Refresh with "
       f"`{REFRESH}`, then commit this file; \"estimated\" lists files whose seconds are a "
       f"guess, not a recorded time.")


def test_files(folder: Path = HERE) -> list[str]:
    """The suite's files, as pytest finds them (`test_*.py` in tests/)."""
    return sorted(p.name for p in folder.glob("test_*.py"))


def load(path: Path = DURATIONS) -> tuple[dict[str, float], list[str]]:
    """Each file's seconds, and the files whose seconds are estimates. A missing or
    unreadable file is no weights at all (every file then weighs the same)."""
    try:
        doc: Any = json.loads(path.read_text())
        seconds = {str(k): float(v) for k, v in doc["seconds"].items()}
        return seconds, [str(f) for f in doc.get("estimated", [])]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}, []


def deal(files: Iterable[str], seconds: dict[str, float], n: int) -> dict[str, int]:
    """Which of `n` shards (0-based) runs each file: whole files, heaviest first, each to
    the lightest shard so far. A file without seconds weighs the median of the others."""
    known = sorted(seconds.values()) or [1.0]
    median = known[len(known) // 2]
    load_ = [0.0] * n
    owner: dict[str, int] = {}
    for name in sorted(set(files), key=lambda f: (-seconds.get(f, median), f)):
        i = load_.index(min(load_))
        owner[name] = i
        load_[i] += seconds.get(name, median)
    return owner


def stale(seconds: dict[str, float], files: Iterable[str]) -> tuple[list[str], list[str]]:
    """(files named in durations.json that are gone, test files it does not name)."""
    have = set(files)
    return sorted(set(seconds) - have), sorted(have - set(seconds))


class Timings:
    """What one pass's files took: every test's set-up, call and tear-down, summed per
    file (a module fixture's set-up counts in the file that uses it)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def add(self, nodeid: str, duration: float) -> None:
        name = os.path.basename(nodeid.split("::", 1)[0])
        self.seconds[name] = self.seconds.get(name, 0.0) + duration

    def write(self, path: str) -> None:
        Path(path).write_text(json.dumps(self.seconds, indent=1, sort_keys=True) + "\n")


def merged(parts: Iterable[dict[str, float]], files: Iterable[str],
           before: tuple[dict[str, float], list[str]]) -> dict[str, Any]:
    """The new durations.json: every test file, with its recorded seconds where a part
    timed it; a file no part timed (it ran no test) keeps its old seconds, or 0, as an
    estimate. Files that are gone are dropped."""
    timed: dict[str, float] = {}
    for part in parts:
        for name, s in part.items():
            timed[name] = timed.get(name, 0.0) + s
    old, _ = before
    seconds, estimated = {}, []
    for name in sorted(set(files)):
        if name in timed:
            seconds[name] = round(timed[name], 1)
        else:
            seconds[name] = old.get(name, 0.0)
            estimated.append(name)
    return {"how": HOW, "estimated": estimated, "seconds": seconds}


def dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1) + "\n"


def record(out: Path, part_paths: list[str]) -> str:
    """Rewrite `out` from the halves' parts; the line to print. Refuses (ValueError)
    when a part is missing: that half did not run to its end."""
    missing = [p for p in part_paths if not os.path.exists(p)]
    if missing:
        raise ValueError(f"not recorded: {len(missing)} of {len(part_paths)} passes wrote no "
                         f"timings (interrupted, or a narrowed run: -k, -m, -x, --lf)")
    parts = [json.loads(Path(p).read_text()) for p in part_paths]
    doc = merged(parts, test_files(out.parent), load(out))
    out.write_text(dump(doc))
    total = sum(doc["seconds"].values())
    guessed = f"; not timed, kept as estimates: {', '.join(doc['estimated'])}" \
        if doc["estimated"] else ""
    return (f"recorded {out.name}: {len(doc['seconds'])} files, {total:.0f} s in all"
            f"{guessed}; commit it")


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] != "record":
        print("usage: python tests/shards.py record OUT PART...", file=sys.stderr)
        return 2
    try:
        print(f"tests/run: {record(Path(argv[1]), argv[2:])}")
    except ValueError as exc:
        print(f"tests/run: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
