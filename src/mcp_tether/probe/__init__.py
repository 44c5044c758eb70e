"""The lifecycle probe: does a stdio MCP server die with its client?

    from mcp_tether.probe import probe, ProbeOptions
    report = probe(["node", "server.js"], ProbeOptions(host_style="node"))
    report.passes("spec"), [(r.scenario, r.level, r.verdict) for r in report.results]

    from mcp_tether import hosts                       # every server of a host's configs
    from mcp_tether.probe import probe_configured
    entries, errors = hosts.configured_servers("cursor")
    report = probe_configured(entries)
    report.passed, [(s.label, s.meets) for s in report.servers]

Each scenario runs in a keeper process of its own (`keeper.py`), all in parallel. The
public names load from `api.py` and `configured.py` when first used: every keeper
imports this package before its own module, and needs neither (nor `hosts`).
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
    "probe_configured",
    "plan_configured",
    "probe_planned",
    "ConfiguredOptions",
    "ConfiguredReport",
    "PlannedServer",
    "ServerResult",
]

from typing import TYPE_CHECKING

from mcp_tether import _lazy

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
    from mcp_tether.probe.configured import (
        ConfiguredOptions,
        ConfiguredReport,
        PlannedServer,
        ServerResult,
        plan_configured,
        probe_configured,
        probe_planned,
    )

_CONFIGURED = ("probe_configured", "plan_configured", "probe_planned", "ConfiguredOptions",
               "ConfiguredReport", "PlannedServer", "ServerResult")

__getattr__, __dir__ = _lazy.attach(__name__, {
    **dict.fromkeys((n for n in __all__ if n not in _CONFIGURED), ".api"),
    **dict.fromkeys(_CONFIGURED, ".configured"),
})
