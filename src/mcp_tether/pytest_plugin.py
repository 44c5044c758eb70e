"""pytest plugin (registered as `pytest11`): keep an MCP stdio server honest in CI.

```python
def test_server_dies_with_its_client(mcp_lifecycle):
    report = mcp_lifecycle(["python", "-m", "my_server"])
    report.assert_passes()   # fails naming each scenario, its verdict and what survived
```

Guarantees:
- `mcp_lifecycle(argv, scenarios=None, **options)` runs the probe's scenarios (all that
  apply, or the named ones) against `argv` and returns a `LifecycleReport`; options are
  `ProbeOptions` fields (host_style, window, idle, ready_timeout, call, env, cwd, grace,
  term_grace, jobs). `host_style` may also be a sequence, e.g. ("node", "python"): each
  style is probed and the results are joined.
- No process is left behind: the probe ends every tree it started, whatever the verdict.
- Loading the plugin costs nothing: the probe is imported when the fixture is first used,
  so installing mcp-tether never slows down or breaks anyone's pytest start-up.
"""

from __future__ import annotations

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
        return all(r.passed for r in self.results)

    @property
    def failures(self) -> list[ScenarioResult]:
        return [r for r in self.results if not r.passed]

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

    def explain(self) -> str:
        """What failed and why: each failed scenario, its verdict and the survivors."""
        cmd = " ".join(self.command)
        failed = self.failures
        if not failed:
            return f"{cmd}: all {len(self.results)} lifecycle scenarios passed"
        from mcp_tether.probe.scenarios import DESCRIPTIONS, PASS_VERDICT

        out = [f"{cmd}: {len(failed)} of {len(self.results)} lifecycle scenarios failed"]
        for r in failed:
            out.append("")
            expected = PASS_VERDICT.get(r.scenario)
            out.append(
                f"scenario {r.scenario!r} ({r.host_style} host): verdict {r.verdict!r}"
                + (f", expected {expected!r}" if expected else "")
            )
            if r.scenario in DESCRIPTIONS:
                out.append(f"  scenario: {DESCRIPTIONS[r.scenario]}")
            if r.detail:
                out.append(f"  {r.detail}")
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

    def assert_passes(self) -> None:
        """Raise AssertionError with `explain()` unless every scenario passed."""
        __tracebackhide__ = True
        if not self.results:
            raise AssertionError(f"{' '.join(self.command)}: no lifecycle scenario ran")
        if not self.passed:
            raise AssertionError(self.explain())

    def __repr__(self) -> str:
        verdicts = ", ".join(f"{r.scenario}={r.verdict}" for r in self.results)
        return f"<LifecycleReport {'passed' if self.passed else 'FAILED'}: {verdicts}>"


LifecycleRunner = Callable[..., LifecycleReport]


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
    from mcp_tether.probe import ProbeOptions, probe  # deferred: only when a test asks

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

    Call `report.assert_passes()` to fail the test with every failed scenario, its
    verdict and the processes that outlived their client.
    """
    return run_lifecycle
