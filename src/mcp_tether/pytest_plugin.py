"""pytest plugin (registered as `pytest11`): keep an MCP stdio server honest in CI.

```python
def test_server_dies_with_its_client(mcp_lifecycle):
    report = mcp_lifecycle(["python", "-m", "my_server"])
    report.assert_passes()                 # the spec level: what the MCP spec asks
    report.assert_passes(level="robust")   # also SIGINT and a leaked stdin writer
```

Guarantees:
- `mcp_lifecycle(argv, scenarios=None, **options)` runs the probe's scenarios (all that
  apply, or the named ones) against `argv` and returns a `LifecycleReport`. Options (the
  `ProbeOptions` fields; any other name is a TypeError naming the valid ones):
  host_style ("node" or "python", or a sequence of both: each is probed, results
  joined), window, idle, ready_timeout, horizon, grace, term_grace (seconds), call
  ((tool, arguments): a call in flight, adds the call-in-flight scenario), env (dict
  added to the environment), cwd, jobs.
- `assert_passes(level="spec")` fails when a `spec` scenario failed; robust failures
  are listed in the message only when `level="robust"`, which counts both.
- No process is left behind: the probe ends every tree it started, whatever the verdict.
- pytest loads this plugin in every test run where mcp-tether is installed: it imports
  nothing of the probe until the fixture is first used, so a suite that never uses it
  runs exactly as without mcp-tether.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # pragma: no cover
    from mcp_tether.probe import ProbeReport, ScenarioResult

__all__ = ["LifecycleReport", "mcp_lifecycle"]

STDERR_TAIL_LINES = 5  # of the server's stderr, per failed scenario


class LifecycleReport:
    """The probe's report for one command, plus `assert_passes()`.

    Attributes not defined here (`results`, `command`, `to_dict`) come from the probe's
    `ProbeReport`.
    """

    def __init__(self, reports: Sequence[ProbeReport]) -> None:
        self.reports = list(reports)
        self.command: list[str] = self.reports[0].command if self.reports else []
        self.results: list[ScenarioResult] = [r for rep in self.reports for r in rep.results]

    @property
    def passed(self) -> bool:
        """Every scenario of the `spec` level passed."""
        return self.passes("spec")

    def passes(self, level: str = "spec") -> bool:
        return not self.failures_at(level)

    @property
    def meets(self) -> str:
        """"robust", "spec" or "none"."""
        from mcp_tether.probe import level_met

        return level_met(self.results)

    @property
    def failures(self) -> list[ScenarioResult]:
        return [r for r in self.results if not r.passed]

    def failures_at(self, level: str) -> list[ScenarioResult]:
        _check_level(level)
        return [r for r in self.results if not r.passed and r.counts_at(level)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "passed": self.passed,
            "results": [r.to_dict() for r in self.results],
        }

    def summary(self) -> str:
        """One line per scenario: `ok`/`FAIL`, scenario, host style, verdict, rung, time."""
        lines = []
        for r in self.results:
            ms = "" if r.exit_ms is None else f" in {r.exit_ms:.0f} ms"
            rung = f" at {r.rung}" if r.rung else ""
            status = "" if r.exit_status is None else f", status {r.exit_status}"
            lines.append(
                f"{'ok  ' if r.passed else 'FAIL'} {r.scenario} ({r.host_style} host):"
                f" {r.verdict}{rung}{ms}{status}"
            )
        return "\n".join(lines)

    def explain(self, level: str = "robust") -> str:
        """What failed and why at `level`: each failed scenario, its verdict, the probe's
        diagnosis and remedy, the survivors and the server's last stderr lines."""
        cmd = " ".join(self.command)
        failed = self.failures_at(level)
        counted = [r for r in self.results if r.counts_at(level)]
        if not failed:
            return f"{cmd}: all {len(counted)} lifecycle scenarios of level {level} passed"
        from mcp_tether.probe.scenarios import SCENARIOS, get

        out = [f"{cmd}: {len(failed)} of {len(counted)} lifecycle scenarios failed "
               f"(level {level})"]
        for r in failed:
            out.append("")
            sc = get(r.scenario) if r.scenario in SCENARIOS else None
            expected = sc.pass_verdict if sc else None
            out.append(
                f"scenario {r.scenario!r} ({r.host_style} host): verdict {r.verdict!r}"
                + (f", expected {expected!r}" if expected else "")
                + f" [level {r.level}]"
            )
            if sc is not None:
                out.append(f"  scenario: {sc.description}")
            if r.detail:
                out.append(f"  {r.detail}")
            if r.diagnosis:
                out.append(f"  diagnosis: {r.diagnosis}")
            if r.remedy:
                out.append(f"  remedy: {r.remedy}")
            for s in r.survivors:
                out.append(f"  survivor pid {s.pid} (ppid {s.ppid}): {s.cmdline}")
            for w in r.warnings:
                out.append(f"  warning: {w}")
            tail = [ln for ln in (r.stderr_tail or "").splitlines() if ln.strip()]
            if tail:
                out.append("  server stderr (last lines):")
                out.extend(f"    {ln}" for ln in tail[-STDERR_TAIL_LINES:])
        out.append("")
        out.append(self.summary())
        return "\n".join(out)

    def assert_passes(self, level: str = "spec") -> None:
        """Raise AssertionError with `explain(level)` unless every scenario of `level`
        passed: "spec" (default) counts the spec scenarios, "robust" counts them all."""
        __tracebackhide__ = True
        _check_level(level)
        if not self.results:
            raise AssertionError(f"{' '.join(self.command)}: no lifecycle scenario ran")
        if not self.passes(level):
            raise AssertionError(self.explain(level))

    def __repr__(self) -> str:
        verdicts = ", ".join(f"{r.scenario}={r.verdict}" for r in self.results)
        return f"<LifecycleReport {'passed' if self.passed else 'FAILED'}: {verdicts}>"


LifecycleRunner = Callable[..., LifecycleReport]


def _check_level(level: str) -> None:
    if level not in ("spec", "robust"):
        raise ValueError(f"unknown level {level!r}: choose 'spec' or 'robust'")


def _as_tuple(value: str | Iterable[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def run_lifecycle(
    argv: Sequence[str], scenarios: str | Iterable[str] | None = None, **options: Any
) -> LifecycleReport:
    """Probe `argv` like the fixture does (usable outside pytest too)."""
    from mcp_tether.probe import ProbeOptions, probe  # when a test asks (module doc)

    valid = sorted({f.name for f in dataclasses.fields(ProbeOptions)} - {"scenarios"})
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise TypeError(f"mcp_lifecycle: unknown option(s) {', '.join(unknown)}; "
                        f"valid: scenarios, {', '.join(valid)}")
    styles = _as_tuple(options.pop("host_style", None)) or (ProbeOptions().host_style,)
    reports = [
        probe(
            [str(a) for a in argv],
            ProbeOptions(host_style=style, scenarios=_as_tuple(scenarios), **options),
        )
        for style in styles
    ]
    return LifecycleReport(reports)


@pytest.fixture
def mcp_lifecycle() -> LifecycleRunner:
    """`mcp_lifecycle(argv, scenarios=None, **options)`: probe a server, get a report.

    scenarios: names to run (default: all that apply). Options (seconds unless said):
    host_style "node" (default), "python" or both as a sequence; window (2) for the tree
    to go after its client; horizon (grace + term_grace) to tell lingered from orphaned;
    grace, term_grace (2 each) the client's ladder; idle (3); ready_timeout (10) of
    idleness per handshake answer (a busy server is awaited, up to 6x); call=(tool,
    arguments) a call in flight at EOF; env (added), cwd, jobs. Any other name raises
    TypeError listing the valid ones. Call
    `report.assert_passes()` (spec level) or `report.assert_passes(level="robust")` to
    fail the test with every failed scenario, its verdict, the diagnosis, the remedy and
    the processes that outlived their client.
    """
    return run_lifecycle
