"""A failure is published only when it repeats: each failing cell is run again.

    runs = repeat_failing(first_results, probe_again, load)   # scenario -> [Run, ...]
    judge(runs["exit"])                                        # "repeats" | "flaky" | ...

A cell is one (server, host style, scenario). After a host style's probe, every scenario
that failed (a verdict, not an `error`: that one is already unknown) is probed again,
`REPEATS` more times, all of them in one probe run each (`-s A -s B`), with the machine's
1-minute load average taken just before each run, the first included. The cell is then
judged on all its runs:

- `repeats`: at least two runs that got a verdict failed (2 of 3, or 3 of 3): a FAIL,
  whatever the third did, shown with its runs;
- `flaky`: it failed once and passed in the other runs that got a verdict: never shown
  as a FAIL, but as `flaky` with its runs;
- `unrepeated`: only the first run got a verdict (the others could not start, or got no
  handshake): unknown (`?`), since one failure alone is not published.

One rule for every column and file: `failed_verdict(runs)` is the word a FAIL cell
shows (the verdict its failing runs share, else the worst of them: a tree that `lingered`
is named so, never as one left running).

Guarantees:
- `judge` is a pure function of the runs; `repeat_failing` takes the probe and the
  clock of load as functions, so the policy is tested without any server.
- A failure is a FAIL exactly when the cell failed at least twice (a pass beside two
  failures does not make them flaky).
- Every run carries its verdict, whether it passed and the load before it (JSON).
- `busy_others(medians, cpus)`: other work kept the machine busy (in some survey put
  together, the median of the runnable tasks that were not the survey's own, counted by
  `loadshare`, above the CPU count): the survey's table says so, and `survey --out`
  publishes it only when told to. `busy(loads, cpus)` (the median load average above
  the CPU count) is the same judgement where the survey's own tasks were not told apart:
  on 2 cores a survey's own probes alone hold the load average at 8-14.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_tether.probe.record import ScenarioRecord
    from mcp_tether.survey.records import RunRow

__all__ = ["REPEATS", "Run", "judge", "repeat_failing", "busy", "busy_others", "failing",
           "failed_verdict", "UNKNOWN"]

REPEATS = 2  # runs after the first: three in all, so one failure never stands alone
UNKNOWN = ("error", "early-exit")  # verdicts that say nothing about the scenario


@dataclass
class Run:
    """One run of one cell."""

    verdict: str
    passed: bool
    load: float  # the 1-minute load average just before the run

    @property
    def counted(self) -> bool:
        return self.verdict not in UNKNOWN

    def to_dict(self) -> RunRow:
        return {"verdict": self.verdict, "passed": self.passed, "load": self.load}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Run:
        return cls(str(d["verdict"]), bool(d["passed"]), float(d["load"]))


def judge(runs: list[Run]) -> str:
    """`repeats`, `flaky` or `unrepeated` (see the module docstring)."""
    counted = [r for r in runs if r.counted]
    if sum(1 for r in counted if not r.passed) >= 2:
        return "repeats"
    return "flaky" if len(counted) >= 2 else "unrepeated"


# The failing verdicts, worst first: a tree left running, then one the ladder had to end,
# then one that ended by itself, late.
_WORST = ("orphaned", "killed", "terminated", "lingered")


def failed_verdict(runs: list[Run], first: str) -> str:
    """What a FAIL cell's runs did: the verdict its failing runs share, else the worst of
    them (`first`, the first run's verdict, when no run is known)."""
    failed = {r.verdict for r in runs if r.counted and not r.passed}
    if len(failed) == 1:
        return failed.pop()
    return next((v for v in _WORST if v in failed), first)


def failing(results: Iterable[ScenarioRecord]) -> list[ScenarioRecord]:
    """The results of a probe that are failures with a verdict (not `error`)."""
    return [r for r in results if not r.get("passed") and r.get("verdict") not in UNKNOWN]


def repeat_failing(first: list[ScenarioRecord], first_load: float,
                   probe: Callable[[tuple[str, ...]], list[ScenarioRecord] | None],
                   load: Callable[[], float], repeats: int = REPEATS) -> dict[str, list[Run]]:
    """scenario -> its runs, for every failing scenario of `first` (a probe's results,
    run at `first_load`): `probe(scenarios)` runs them again (None: the probe itself could
    not run, every cell's run is an `error`)."""
    runs = {r["scenario"]: [Run(r["verdict"], False, first_load)] for r in failing(first)}
    for _ in range(repeats if runs else 0):
        before = load()
        again = {r["scenario"]: r for r in probe(tuple(runs)) or []}
        for scenario, cell in runs.items():
            r = again.get(scenario)
            cell.append(Run(r["verdict"], bool(r.get("passed")), before) if r is not None
                        else Run("error", False, before))
    return runs


def busy(loads: list[float], cpus: int) -> bool:
    """Did the load stay above the CPU count (its median over the runs)?"""
    return bool(loads) and statistics.median(loads) > cpus


def busy_others(medians: list[float], cpus: int) -> bool:
    """Did other work (the survey's own tasks not counted) keep more tasks runnable than
    there are CPUs, by its median, in any of the surveys put together?"""
    return any(m > cpus for m in medians)
