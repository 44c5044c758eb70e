"""The scenarios: one module each, in the order of the JSON and the table.

Names are part of the JSON contract. A new scenario is one new module here plus its
entry in `_ALL` (the order of the JSON and the table).
"""

from __future__ import annotations

from mcp_tether.probe.scenarios import (
    call_in_flight,
    close,
    crash,
    devnull,
    exit,
    half_close,
    idle,
    inherited_writer,
    sigint,
    sigterm,
    sigterm_pid,
)
from mcp_tether.probe.scenarios.base import Scenario

__all__ = ["SCENARIOS", "HOST_STYLES", "VERDICTS", "Scenario", "get", "all_scenarios"]

HOST_STYLES = ("node", "python")

_ALL: tuple[Scenario, ...] = (
    close.SCENARIO, exit.SCENARIO, crash.SCENARIO, devnull.SCENARIO, idle.SCENARIO,
    half_close.SCENARIO, sigterm.SCENARIO, sigterm_pid.SCENARIO, sigint.SCENARIO,
    inherited_writer.SCENARIO,
    call_in_flight.SCENARIO,
)
_BY_NAME = {s.name: s for s in _ALL}

SCENARIOS = tuple(_BY_NAME)

VERDICTS = (
    "exited", "terminated", "killed", "lingered", "orphaned", "alive", "early-exit", "error",
)


def get(name: str) -> Scenario:
    """The scenario called `name`; KeyError when there is none."""
    return _BY_NAME[name]


def all_scenarios() -> list[Scenario]:
    return list(_BY_NAME.values())
