"""Probing configured servers: every entry of a host's config, started as the host would.

    from mcp_tether import hosts
    from mcp_tether.probe import ConfiguredOptions, ProbeOptions, probe_configured

    entries, errors = hosts.configured_servers("vscode")
    report = probe_configured(entries, ConfiguredOptions(ProbeOptions(jobs=4)))
    report.passed, [(s.label, s.meets) for s in report.servers]

Guarantees:
- Each server starts exactly as its host would start it: variables expanded with the
  host's own syntax, `envFile` loaded, `cwd` resolved against the workspace (see
  `hosts.expand`; the workspace follows the entry's `scope`).
- A configuration problem is an `error` row naming it (an unresolvable variable such as
  `${input:api-key}`, an unreadable envFile, a missing cwd, a command not found): never
  a verdict on the server. Disabled entries are `disabled` rows and remote entries
  `skipped` rows: both are listed, neither is started nor counted as passed; the report
  passes when every server that was probed passes at the level, and at least one was.
- An entry behind our guard is probed with the guard in front, as the host runs it, and
  judged by the guard's promise (the probe widens the window to the guard's ladder).
- All scenarios of all servers run in parallel (8 servers take about as long as the
  slowest one); each server's failures are explained from its own command.
- Nothing here prompts or prints: `plan_configured()` says what would be started, so
  that a caller can ask first (the CLI does), and `probe_planned()` starts exactly that.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_tether.errors import TetherError, UsageError
from mcp_tether.hosts import REGISTRY
from mcp_tether.hosts.expand import Unresolvable, resolve, workspace_of
from mcp_tether.hosts.model import ServerEntry
from mcp_tether.probe.api import (
    ProbeOptions,
    ScenarioResult,
    build_specs,
    level_met,
    resolve_command,
)
from mcp_tether.probe.diagnose import annotate
from mcp_tether.probe.runner import run_specs
from mcp_tether.probe.spec import LEVELS, SPEC, Spec

if TYPE_CHECKING:
    from mcp_tether.cliprogress import Progress
    from mcp_tether.probe.record import ConfiguredDocument, ConfiguredServer, ScenarioRecord

__all__ = [
    "NOT_RUN",
    "ConfiguredOptions",
    "PlannedServer",
    "ServerResult",
    "ConfiguredReport",
    "plan_configured",
    "probe_planned",
    "probe_configured",
]

NOT_RUN = ("skipped", "disabled")


@dataclass(frozen=True)
class ConfiguredOptions:
    """How configured servers are probed: the probe's options (shared by every server;
    each entry's own env and cwd are added to them) and the level that decides a pass."""

    probe: ProbeOptions = field(default_factory=ProbeOptions)
    level: str = SPEC


@dataclass
class PlannedServer:
    """One configured server, resolved the host's way, or the reason it is not run."""

    label: str
    argv: list[str]  # as the host would start it ([] when it could not be resolved)
    options: ProbeOptions  # the shared options plus the entry's env and cwd
    path: Path  # the config file
    verdict: str = ""  # "": probe it; else "error", "disabled" or "skipped"
    detail: str = ""  # why not

    @property
    def runnable(self) -> bool:
        return not self.verdict


@dataclass
class ServerResult:
    """One configured server's results: its scenarios, or the one row saying why not."""

    label: str
    argv: list[str]
    results: list[ScenarioResult]

    @property
    def probed(self) -> bool:
        """Started (or failed to start for a reason of its config); not disabled/remote."""
        return all(r.verdict not in NOT_RUN for r in self.results)

    @property
    def guarded(self) -> bool:
        return any(r.guarded for r in self.results)

    @property
    def meets(self) -> str:
        """The level it meets (none / spec / robust); for one not probed, why not."""
        return level_met(self.results) if self.probed else self.results[0].verdict

    def passes(self, level: str) -> bool:
        return all(r.passed for r in self.results if r.counts_at(level))

    def to_dict(self) -> ConfiguredServer:
        return {"name": self.label, "meets": self.meets, "guarded": self.guarded,
                "results": [r.to_dict() for r in self.results]}


@dataclass
class ConfiguredReport:
    """Every configured server's results; `passed` at `level`."""

    servers: list[ServerResult]
    level: str = SPEC

    @property
    def probed(self) -> list[ServerResult]:
        return [s for s in self.servers if s.probed]

    @property
    def passed(self) -> bool:
        """At least one server was probed, and every probed one passes at the level."""
        return bool(self.probed) and all(s.passes(self.level) for s in self.probed)

    @property
    def results(self) -> list[ScenarioResult]:
        """Every row, server by server (each carries its server's `label`)."""
        return [r for s in self.servers for r in s.results]

    def to_dict(self) -> ConfiguredDocument:
        return {"level": self.level, "passed": self.passed,
                "servers": [s.to_dict() for s in self.servers]}


def _valid_text(words: list[str]) -> str | None:
    """Why these words cannot be an argv or environment (a NUL, a lone surrogate)."""
    for word in words:
        if "\0" in word:
            return f"{word!r} contains a NUL byte"
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            return f"{word.encode('utf-8', 'backslashreplace').decode()!r} is not valid Unicode"
    return None


def _plan_one(e: ServerEntry, opts: ProbeOptions) -> PlannedServer:
    """How the host would start entry `e`, as probe options (or why it is not run)."""
    p = PlannedServer(e.label, [], opts, e.path)
    if e.transport != "stdio" or e.command is None:
        p.verdict, p.detail = "skipped", "remote (not a stdio server): not probed"
        return p
    if not e.command.strip():
        p.verdict, p.detail = "skipped", 'empty "command": nothing to run, not probed'
        return p
    if e.disabled:
        p.verdict, p.detail = "disabled", "disabled in the config: not started"
        return p
    host = REGISTRY.get(e.host or "")
    style = host.variables if host else "none"
    base_env = {**os.environ, **(opts.env or {})}
    here = Path(opts.cwd or os.getcwd())
    try:
        got = resolve(e, style, env=base_env, home=Path.home(),
                      workspace=workspace_of(e.path, e.scope, here))
    except Unresolvable as exc:
        p.verdict, p.detail = "error", f"config: {exc} (not started; not the server's fault)"
        return p
    bad = _valid_text([*got.argv, *got.env, *got.env.values(), got.cwd or ""])
    if bad:
        p.verdict, p.detail = "error", f"config: {bad}"
        return p
    if got.cwd is not None and not os.path.isdir(got.cwd):
        p.verdict, p.detail = "error", f"config: cwd {got.cwd} is not a folder"
        return p
    env = {**(opts.env or {}), **got.env}
    p.argv = got.argv
    p.options = dataclasses.replace(opts, env=env or None, cwd=got.cwd or opts.cwd)
    try:
        resolve_command(p.argv, p.options.env, p.options.cwd)
    except TetherError as exc:
        p.verdict, p.detail = "error", exc.msg
    return p


def plan_configured(entries: Iterable[ServerEntry],
                    options: ConfiguredOptions | None = None) -> list[PlannedServer]:
    """How each entry would be started (argv, env, cwd), or why it would not be."""
    opts = (options or ConfiguredOptions()).probe
    return [_plan_one(e, opts) for e in entries]


def _row(p: PlannedServer, style: str) -> ScenarioResult:
    return ScenarioResult("*", style, p.verdict, False, None, None, None,
                          detail=p.detail, label=p.label)


def probe_planned(
    planned: Sequence[PlannedServer],
    options: ConfiguredOptions | None = None,
    *,
    should_stop: Callable[[], bool] = lambda: False,
    progress: Progress | None = None,
) -> ConfiguredReport:
    """Probe the runnable servers of `planned`, all at once; the others are rows saying
    why not. Servers come in this order: config errors, probed, disabled or remote.

    `should_stop()` is asked while it runs: when true, every keeper ends its tree and
    KeyboardInterrupt is raised (as `probe()` does). `progress` is told of each
    server's scenario as it ends.
    """
    options = options or ConfiguredOptions()
    if options.level not in LEVELS:
        raise UsageError(f"unknown level {options.level!r} (choose from {', '.join(LEVELS)})")
    style = options.probe.host_style
    runnable = [p for p in planned if p.runnable]
    specs: list[Spec] = []
    owners: list[PlannedServer] = []
    for p in runnable:
        for spec in build_specs(p.argv, p.options):
            specs.append(spec)
            owners.append(p)
    tell = progress.per_index([f"{o.label} {s.scenario}" for o, s in zip(owners, specs,
                                                                          strict=True)]
                              ) if progress else None
    raw = run_specs(specs, jobs=options.probe.jobs, should_stop=should_stop,
                    on_result=tell) if specs else []
    rows: dict[int, list[ScenarioResult]] = {}
    for p in runnable:
        mine = [r for o, r in zip(owners, raw, strict=False) if o is p]
        annotate(mine, p.argv)  # each server's failures explained from its own command
        rows[id(p)] = [_result(r, p.label) for r in mine]
    # Two entries of one name (a user and a project file) are one server of the report,
    # as the matrix shows them.
    servers: dict[str, ServerResult] = {}
    order = [p for p in planned if p.verdict == "error"] + runnable + [
        p for p in planned if p.verdict in NOT_RUN]
    for p in order:
        server = servers.setdefault(p.label, ServerResult(p.label, p.argv, []))
        server.results += rows[id(p)] if p.runnable else [_row(p, style)]
    return ConfiguredReport(list(servers.values()), options.level)


def _result(record: ScenarioRecord, label: str) -> ScenarioResult:
    res = ScenarioResult.from_dict(record)  # the whole record kept, for --html and --detail
    res.label = label
    return res


def probe_configured(
    entries: Iterable[ServerEntry],
    options: ConfiguredOptions | None = None,
    *,
    should_stop: Callable[[], bool] = lambda: False,
) -> ConfiguredReport:
    """Probe every stdio entry as its host would start it: `plan_configured`, then
    `probe_planned`.

    `entries` come from `hosts.configured_servers()` or `hosts.read_servers()`. This
    starts the servers for real: a caller that asks first uses `plan_configured` and
    `probe_planned` instead.
    """
    return probe_planned(plan_configured(entries, options), options, should_stop=should_stop)
