"""The lab's default summary: one line per leak, each distinct fix printed once.

Rendering only (no process involved), so the rows are made by hand."""

from __future__ import annotations

import io

from mcp_tether.lab.summary import render_summary
from mcp_tether.probe import ScenarioResult

LONG_FIX = "In the Node server add the four listeners with a run-once shutdown: `...`"


def _row(label: str, scenario: str, verdict: str, remedy: str) -> ScenarioResult:
    r = ScenarioResult(scenario=scenario, host_style="node", verdict=verdict,
                       passed=verdict in ("exited", "terminated"), exit_ms=None, rung=None,
                       exit_status=None, label=label, remedy=remedy)
    r.block = "guarded"  # type: ignore[attr-defined]  # as run_lab sets it
    return r


def test_a_fix_shared_by_many_rows_is_printed_once_and_referred_to_after() -> None:
    rows = [_row(f"G{i} run -- node timer", "exit", "orphaned", LONG_FIX) for i in (1, 2, 3)]
    rows.append(_row("G4 run -- python thread", "exit", "orphaned", "Call `mcp_tether.run`"))
    rows.append(_row("G5 run -- node stubborn", "close", "terminated", ""))
    out = io.StringIO()
    render_summary(rows, ("guarded",), {}, out=out)
    text = out.getvalue()
    assert text.count(LONG_FIX) == 1
    assert "G2 run -- node timer exit: orphaned; fix: as for G1 exit" in text
    assert "G4 run -- python thread exit: orphaned; fix: Call `mcp_tether.run`" in text
    assert "G5" not in text  # not a leak: no line of its own
    assert "devnull" in text  # the takeaway says the guard covers a stdin already at EOF


def _leveled(label: str, scenario: str, level: str, passed: bool) -> ScenarioResult:
    return ScenarioResult(scenario=scenario, host_style="node",
                          verdict="exited" if passed else "orphaned", passed=passed,
                          exit_ms=None, rung=None, exit_status=None, label=label, level=level)


def test_the_lab_gives_each_server_one_level_word_over_its_rows() -> None:
    """none / spec / robust per server (and host style), from every row it has; the words
    are printed under the summary."""
    from mcp_tether.lab import server_levels

    rows = [
        _leveled("X1 node timer", "exit", "spec", False),
        _leveled("X2 node timer", "sigint", "robust", True),
        _leveled("X3 node plain", "exit", "spec", True),
        _leveled("X4 node plain", "inherited-writer", "robust", False),
        _leveled("T1 python tethered", "crash", "spec", True),
        _leveled("T2 python tethered", "inherited-writer", "robust", True),
    ]
    levels = server_levels(rows)
    assert levels == {"node timer [node]": "none", "node plain [node]": "spec",
                      "python tethered [node]": "robust"}
    out = io.StringIO()
    render_summary(rows, (), levels, out=out)
    assert "node plain [node]" in out.getvalue() and "robust" in out.getvalue()
