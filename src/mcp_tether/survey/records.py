"""The survey's records as `survey --json` prints them and `--from-json` reads them back:
a server's row, a failure, one run of a cell. (`records`, not `record` as in the other
capabilities: `survey.record` is the function that records a probe run on a row.)

`survey`'s dataclasses (`ServerResult`, `Failure`, `repeat.Run`) are what the survey
works with; their `to_dict` makes these, which a saved survey keeps and the renderings,
the host matrix (`survey.hosts`) and `--from-json` read back.

Guarantees:
- The keys in each type's order are the JSON's (`dataclasses.asdict` of the fields in
  order; a row adds `guard_pass` last).
- What is read back from a saved file is not trusted to have every key: `from_dict`
  takes any mapping (a survey saved by an older version lacks some).
- Types only, the standard library only.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = ["RunRow", "FailureRow", "SurveyRow"]


class RunRow(TypedDict):
    """One run of one cell (`repeat.Run`)."""

    verdict: str
    passed: bool
    load: float  # the 1-minute load average just before the run


class FailureRow(TypedDict):
    """A failed cell (`survey.Failure`): a host style's scenario."""

    style: str
    scenario: str
    level: str  # spec | robust
    verdict: str
    diagnosis: str
    remedy: str
    repeated: str  # repeats | flaky | unrepeated ("": a survey made before repeats)
    runs: list[RunRow]  # every run of the cell, the first included
    sdk_recheck: str  # an independent SDK host's word on it ("": not re-checked)


class SurveyRow(TypedDict):
    """One server's row (`survey.ServerResult.to_dict`): an item of the
    `mcp-tether/survey` document's `results`."""

    label: str
    spec: str  # the list's line: npm:PKG, pypi:PKG ...
    name: str
    version: str
    language: str
    sdk: str  # what its entry point loads, with its version ("": none)
    sdk_exits_on_eof: bool | None
    launch: str
    command: list[str]
    needs: str | None  # the list's needs=
    downloads: int | None  # the list's downloads= (npm, a month)
    rank: int | None  # the list's rank= (PyPI)
    status: str  # ok | install-failed | no-command | did-not-start | needs-service ...
    note: str
    spec_pass: dict[str, bool | None]  # host style -> passes at spec (None: unknown)
    robust_pass: dict[str, bool | None]
    verdicts: dict[str, dict[str, str]]  # host style -> scenario -> verdict
    failures: list[FailureRow]  # the ones that repeat
    flaky: list[FailureRow]  # failed, then passed (or not rerun)
    loads: dict[str, float]  # host style -> the load before its probe run
    seconds: float
    install_scripts: list[str]  # packages of its tree with an install script
    scripts_ran: bool  # surveyed with --allow-scripts
    guard_pass: bool | None  # robust behind the guard (the `guarded` style)
