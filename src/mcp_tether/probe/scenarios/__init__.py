"""The scenarios: one module each, in the order of the JSON and the table.

`get(name)` imports only that scenario's module (a keeper needs one); `all_scenarios()`
imports them all (the CLI's help, the API's checks). Names are part of the JSON contract.
A new scenario is one new module here plus its name in ORDER.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp_tether.probe.scenarios.base import Scenario

__all__ = [
    "ORDER", "SCENARIOS", "HOST_STYLES", "VERDICTS", "get", "all_scenarios", "applies",
]

HOST_STYLES = ("node", "python")

ORDER = (
    "close", "exit", "crash", "devnull", "idle", "half-close", "sigterm", "sigint",
    "inherited-writer", "call-in-flight",
)
SCENARIOS = ORDER

VERDICTS = (
    "exited", "terminated", "killed", "lingered", "orphaned", "alive", "early-exit", "error",
)

_cache: dict[str, Scenario] = {}


def get(name: str) -> Scenario:
    """The scenario called `name`; KeyError when there is none."""
    if name not in ORDER:
        raise KeyError(name)
    if name not in _cache:
        module = importlib.import_module(f"{__name__}.{name.replace('-', '_')}")
        _cache[name] = module.SCENARIO
    return _cache[name]


def all_scenarios() -> list[Scenario]:
    return [get(n) for n in ORDER]


def applies(name: str, host_style: str) -> bool:
    return get(name).applies(host_style)


def __getattr__(attr: str) -> object:
    # Derived tables, built on first use (they import every scenario module).
    if attr == "DESCRIPTIONS":
        return {s.name: s.description for s in all_scenarios()}
    if attr == "PASS_VERDICT":
        return {s.name: s.pass_verdict for s in all_scenarios()}
    if attr == "LEVEL":
        return {s.name: s.level for s in all_scenarios()}
    raise AttributeError(attr)
