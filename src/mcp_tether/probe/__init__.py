"""The lifecycle probe: does a stdio MCP server die with its client?

    from mcp_tether.probe import probe, ProbeOptions
    report = probe(["node", "server.js"], ProbeOptions(host_style="node"))
    report.passes("spec"), [(r.scenario, r.level, r.verdict) for r in report.results]

Each scenario runs in a keeper process of its own (`keeper.py`), all in parallel. The
public names load lazily from `api.py`: a keeper imports this package on its start-up
path and must not pay for dataclasses, shutil and the error types it never uses.
"""

from __future__ import annotations

__all__ = [
    "probe",
    "ProbeOptions",
    "ProbeReport",
    "ScenarioResult",
    "Survivor",
    "SCENARIOS",
    "HOST_STYLES",
    "LEVELS",
    "build_specs",
    "resolve_command",
    "level_met",
]

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp_tether.probe.api import (
        HOST_STYLES,
        LEVELS,
        SCENARIOS,
        ProbeOptions,
        ProbeReport,
        ScenarioResult,
        Survivor,
        build_specs,
        level_met,
        probe,
        resolve_command,
    )


def __getattr__(name: str) -> object:
    if name in __all__:
        from mcp_tether.probe import api

        return getattr(api, name)
    raise AttributeError(f"module 'mcp_tether.probe' has no attribute {name!r}")
