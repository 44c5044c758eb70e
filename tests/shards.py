"""The suite's passes: which backend runs which test files, dealt by each file's seconds
so that every pass ends at about the same time, and how those seconds are kept true
(tests/durations.json, recorded from a whole run and checked against the files).

`tests/run` (no path) runs the whole suite as several pytest passes at once, each in a
pid namespace of its own. Each backend's subset (`BACKENDS`: the Linux backend runs
every file, the portable one the files of `PORTABLE_FILES`, darwin-sim those of
`DARWIN_SIM_FILES`) is split into as many passes
as keep it from being the last to end (`plan`), and its files are dealt whole (a
file's module fixtures stay in one pass) to the lightest pass, heaviest first (`deal`).
The suite mostly waits on processes (grace periods, windows), so on 2 cores eight passes
overlap the waiting of one with the work of another (`default_passes`).

Those seconds go stale as files come and go, so:
- `MCP_TETHER_RECORD_DURATIONS=1 tests/run` records them: each pass writes what its own
  files took (set-up, call and tear-down of every test, `Timings`), and `record`
  rewrites tests/durations.json from every pass once they have ended;
- tests/test_shards.py fails when the file names a test file that is gone or misses one
  that exists (`stale`), saying that command.
A file added by hand before the next recording carries an estimate, listed under
"estimated" until a recording times it.

    python tests/shards.py plan N        # the passes, one a line: BACKEND FILE...
    python tests/shards.py record OUT PART...   # tests/run does both
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
       f"deals the files into passes of equal weight (tests/shards.py): \"seconds\" on the "
       f"Linux backend, \"backends\" the other backends' subsets. Refresh with "
       f"`{REFRESH}`, then commit this file; \"estimated\" lists files whose seconds are a "
       f"guess, not a recorded time.")

# -- the portable backend: `MCP_TETHER_BACKEND=portable tests/run -m portable` runs these
# files on psutil + POSIX only (conftest.py marks their tests `portable`). A test whose
# promise is the Linux backend's alone says so with
# `@pytest.mark.requires_linux_backend("why")`: skipped, with that reason, under the
# portable backend only; a test beside it asserts the weaker promise.
PORTABLE_FILES = ("test_proc.py", "test_guard.py", "test_guard_argv.py", "test_client.py",
                  "test_probe.py", "test_probe_levels.py", "test_portable.py")
PORTABLE_PREFIXES = ("test_tether", "test_scan")
# -- the darwin backend on a libproc answered from /proc (`MCP_TETHER_BACKEND=darwin-sim
# tests/run -m darwin_sim`): the machine view, the guard, the host client, the tree
# kill's leave rule, the process core.
DARWIN_SIM_FILES = ("test_scan.py", "test_scan_leaks.py", "test_scan_channels.py",
                    "test_scan_table.py", "test_scan_watch.py", "test_scan_evidence.py",
                    "test_darwin.py", "test_seam.py", "test_guard.py", "test_leave.py",
                    "test_proc.py", "test_client.py")

# Each backend a whole run covers (its MCP_TETHER_BACKEND; `files_of` says which files):
# a pass is given its files as paths, so it collects and runs those alone (the portable
# passes' files hold only tests marked `portable`: the same selection as -m portable;
# the darwin-sim ones, likewise, `darwin_sim`).
BACKENDS = ("linux", "portable", "darwin-sim")


def is_portable(name: str) -> bool:
    return name in PORTABLE_FILES or name.startswith(PORTABLE_PREFIXES)


def is_darwin_sim(name: str) -> bool:
    return name in DARWIN_SIM_FILES


def files_of(backend: str, files: Iterable[str]) -> list[str]:
    """The test files a backend's passes run."""
    keep = {"linux": lambda f: True, "portable": is_portable, "darwin-sim": is_darwin_sim}
    return sorted(f for f in files if keep[backend](f))


def test_files(folder: Path = HERE) -> list[str]:
    """The suite's files, as pytest finds them (`test_*.py` in tests/)."""
    return sorted(p.name for p in folder.glob("test_*.py"))


def _doc(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
        return doc if isinstance(doc, dict) else {}
    except (OSError, ValueError):
        return {}


def load(path: Path = DURATIONS) -> tuple[dict[str, float], list[str]]:
    """Each file's seconds on the Linux backend, and the files whose seconds are
    estimates. A missing or unreadable file is no weights at all (every file then weighs
    the same)."""
    try:
        doc: Any = json.loads(path.read_text())
        seconds = {str(k): float(v) for k, v in doc["seconds"].items()}
        return seconds, [str(f) for f in doc.get("estimated", [])]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}, []


def seconds_on(backend: str, path: Path = DURATIONS) -> dict[str, float]:
    """A backend's seconds per file: its own where recorded, else the Linux backend's (a
    file the other backend has not timed weighs what it weighs there)."""
    linux, _ = load(path)
    if backend == "linux":
        return linux
    try:
        own = {str(k): float(v) for k, v in _doc(path)["backends"][backend].items()}
    except (KeyError, TypeError, ValueError, AttributeError):
        own = {}
    return {**linux, **own}


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


def _longest(files: list[str], seconds: dict[str, float], n: int) -> float:
    """The heaviest of `n` shards of `files`, dealt by `deal`."""
    known = sorted(seconds.values()) or [1.0]
    median = known[len(known) // 2]
    sums = [0.0] * n
    for f, i in deal(files, seconds, n).items():
        sums[i] += seconds.get(f, median)
    return max(sums)


def plan(files: Iterable[str], seconds: dict[str, dict[str, float]], passes: int,
         ) -> list[tuple[str, list[str]]]:
    """The passes of a whole run, (backend, files) each: every backend at least one,
    then each further pass to the backend whose heaviest pass is the heaviest, while that
    splits it further (a pass holding one file cannot be split)."""
    files = list(files)
    subsets = {b: files_of(b, files) for b in BACKENDS}
    count = {b: 1 for b in BACKENDS if subsets[b]}
    while sum(count.values()) < passes:
        load_ = {b: _longest(subsets[b], seconds.get(b, {}), n) for b, n in count.items()}
        b = max(load_, key=lambda k: load_[k])
        if _longest(subsets[b], seconds.get(b, {}), count[b] + 1) >= load_[b]:
            break  # its heaviest file alone is that long: another pass would not help
        count[b] += 1
    out = []
    for b in BACKENDS:
        if b not in count:
            continue
        owner = deal(subsets[b], seconds.get(b, {}), count[b])
        out += [(b, sorted(f for f, i in owner.items() if i == k)) for k in range(count[b])]
    return out


def default_passes() -> int:
    """Four passes per CPU. On 2 cores the suite's CPU is about half its wall time
    (each file timed alone: docs/benchmarks.md), so two passes left a core idle while
    their tests waited on processes; a model of passes sharing two cores, from those
    timings, ends as soon as the CPU allows from six passes on, and eight let the
    portable backend's long files (the guard's 200 random rounds in CI) have two."""
    return 4 * (os.cpu_count() or 1)


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

    def write(self, path: str, backend: str = "linux") -> None:
        doc = {"backend": backend, "seconds": self.seconds}
        Path(path).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


def _sums(parts: Iterable[dict[str, float]]) -> dict[str, float]:
    timed: dict[str, float] = {}
    for part in parts:
        for name, s in part.items():
            timed[name] = timed.get(name, 0.0) + s
    return timed


def merged(parts: Iterable[dict[str, float]], files: Iterable[str],
           before: tuple[dict[str, float], list[str]],
           others: dict[str, dict[str, float]] | None = None) -> dict[str, Any]:
    """The new durations.json: every test file, with its recorded seconds where a part
    timed it; a file no part timed (it ran no test) keeps its old seconds, or 0, as an
    estimate. Files that are gone are dropped. `others`: each other backend's seconds,
    summed from its passes' parts the same way."""
    timed = _sums(parts)
    old, _ = before
    seconds, estimated = {}, []
    for name in sorted(set(files)):
        if name in timed:
            seconds[name] = round(timed[name], 1)
        else:
            seconds[name] = old.get(name, 0.0)
            estimated.append(name)
    backends = {b: {f: round(s, 1) for f, s in sorted(sec.items()) if f in seconds}
                for b, sec in sorted((others or {}).items())}
    return {"how": HOW, "estimated": estimated, "seconds": seconds, "backends": backends}


def dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1) + "\n"


def record(out: Path, part_paths: list[str]) -> str:
    """Rewrite `out` from the passes' parts; the line to print. Refuses (ValueError)
    when a part is missing: that pass did not run to its end."""
    missing = [p for p in part_paths if not os.path.exists(p)]
    if missing:
        raise ValueError(f"not recorded: {len(missing)} of {len(part_paths)} passes wrote no "
                         f"timings (interrupted, or a narrowed run: -k, -m, -x, --lf)")
    by: dict[str, list[dict[str, float]]] = {}
    for p in part_paths:
        part = json.loads(Path(p).read_text())
        by.setdefault(part["backend"], []).append(part["seconds"])
    others = {b: _sums(parts) for b, parts in by.items() if b != "linux"}
    doc = merged(by.get("linux", []), test_files(out.parent), load(out), others)
    out.write_text(dump(doc))
    total = sum(doc["seconds"].values())
    guessed = f"; not timed, kept as estimates: {', '.join(doc['estimated'])}" \
        if doc["estimated"] else ""
    return (f"recorded {out.name}: {len(doc['seconds'])} files, {total:.0f} s in all"
            f"{guessed}; commit it")


def main(argv: list[str]) -> int:
    if argv[:1] == ["plan"] and len(argv) <= 2:
        wanted = argv[1] if len(argv) == 2 and argv[1] else str(default_passes())
        if not wanted.isdigit() or int(wanted) < 1:
            print(f"tests/run: MCP_TETHER_PASSES={wanted!r}: a whole number above 0, please",
                  file=sys.stderr)
            return 2
        seconds = {b: seconds_on(b) for b in BACKENDS}
        for backend, files in plan(test_files(), seconds, int(wanted)):
            print(backend, *files)
        return 0
    if len(argv) < 3 or argv[0] != "record":
        print("usage: python tests/shards.py plan PASSES | record OUT PART...",
              file=sys.stderr)
        return 2
    try:
        print(f"tests/run: {record(Path(argv[1]), argv[2:])}")
    except ValueError as exc:
        print(f"tests/run: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
