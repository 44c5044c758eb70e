"""The load a survey did not make: the machine's runnable tasks less the survey's own.

    with OthersLoad() as others:      # a daemon thread samples every `interval` s
        run_the_survey()
    others.summary()                  # {"median": 0.0, "max": 3, "samples": 812} or None

Why: a survey's own probes load the machine (each probe run starts every scenario of a
host style at once, `jobs` of them at a time): on 2 cores its 1-minute load average
reaches 8-14 with nothing else running, so "the load stayed above the CPU count" would
call every survey busy. What makes a survey's timings the machine's rather than the
servers' is work that is not the survey's. So, every `interval` seconds: the tasks
runnable on the whole machine (the count the load average averages) less the threads
of the survey's own processes (this process and its descendants, by parent links) that
are runnable at that moment. The two readings are a few milliseconds apart, so one
sample can be off by the tasks that started or stopped in between; the median over a
survey's hundreds of samples is what the table is judged on (`repeat.busy_others`).

Guarantees:
- Reads only (the process table and the backend's task counts); signals nothing.
- Where the backend cannot count runnable tasks (the portable one), `summary()` is None
  and a survey is judged on its load average, as before.
- `sample(machine, own)` is a pure function, tested without a busy machine.
"""

from __future__ import annotations

import os
import statistics
import threading
from typing import Any

from mcp_tether import platform
from mcp_tether.proc.tree import descendants

__all__ = ["OthersLoad", "sample", "own_pids", "INTERVAL"]

INTERVAL = 2.0  # seconds between samples: hundreds in a survey, each ~1 ms of reading


def sample(machine: int | None, own: list[int | None]) -> int | None:
    """Runnable tasks that are not ours: `machine` (every runnable task) less the sum of
    `own` (each of our processes' runnable threads; None: one we could not read, left
    out). None when the machine's count is unknown. Never below 0 (the two readings are
    not one instant)."""
    if machine is None:
        return None
    return max(machine - sum(n for n in own if n is not None), 0)


def own_pids(root: int | None = None) -> list[int]:
    """`root` (default: this process) and its live descendants (`proc.tree`)."""
    root = os.getpid() if root is None else root
    return [root] + [rec.pid for rec in descendants(root)]


class OthersLoad:
    """Samples `sample()` in a daemon thread from `__enter__` to `__exit__`."""

    def __init__(self, interval: float = INTERVAL) -> None:
        self.interval = interval
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def take(self) -> int | None:
        """One sample now (also what the thread calls)."""
        backend = platform.backend
        machine = backend.running_tasks()
        if machine is None:
            return None
        return sample(machine, [backend.running_threads(p) for p in own_pids()])

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                n = self.take()
            except (OSError, ValueError):
                n = None  # a table that could not be read this time: no sample
            if n is None and platform.backend.running_tasks() is None:
                return  # the backend cannot count: nothing to sample, ever
            if n is not None:
                self.samples.append(n)
            self._stop.wait(self.interval)

    def __enter__(self) -> OthersLoad:
        self._thread = threading.Thread(target=self._loop, name="others-load", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def summary(self) -> dict[str, Any] | None:
        """median, max and count of the samples; None when there are none."""
        if not self.samples:
            return None
        return {"median": float(statistics.median(self.samples)), "max": max(self.samples),
                "samples": len(self.samples)}
