"""The lab's default summary: one line per leak pointing to its fixes, each fix printed
once, a legend for the tags and levels.

Rendering only (no process involved), so the rows are made by hand."""

from __future__ import annotations

import io
from html import escape

from mcp_tether.probe import ScenarioResult
from mcp_tether.report.lab_summary import render_summary
from mcp_tether.report.legend import legend

LONG_FIX = "In the Node server add the four listeners with a run-once shutdown: `...`"


SHELL_FIX = "Make the shell exec the server so signals and EOF reach it"
PY_FIX = "In the Python server call `mcp_tether.run(mcp)` instead of `mcp.run()`"


def _row(label: str, scenario: str, verdict: str, steps: list[str],
         guard: str | None = None, block: str = "guarded") -> ScenarioResult:
    r = ScenarioResult(scenario=scenario, host_style="node", verdict=verdict,
                       passed=verdict in ("exited", "terminated"), exit_ms=None, rung=None,
                       exit_status=None, label=label, remedy="; ".join(steps))
    r.block = block  # as run_lab sets it
    r.record = {**r.to_dict(), "remedy_steps": steps, "remedy_guard": guard}  # as annotate
    return r


def test_a_fix_shared_by_many_rows_is_printed_once_and_the_rows_point_to_it() -> None:
    """1. Three rows (two of them behind a shell) share the Node fix, a fourth has the
    Python fix; 2. each fix text appears once, numbered; each row names its numbers, and
    [G] where the guard is its alternative; 3. a row that is no leak has no line."""
    rows = [_row("E node timer", "exit", "orphaned", [LONG_FIX], "mcp-tether run -- node t.mjs",
                 "reference"),
            _row("W1 sh -c + node timer", "close", "orphaned", [SHELL_FIX, LONG_FIX],
                 "mcp-tether run -- sh -c 'node t.mjs; true'", "wrappers"),
            _row("W3 sh -c + node timer", "exit", "orphaned", [LONG_FIX],
                 "mcp-tether run -- sh -c 'node t.mjs; true'", "wrappers"),
            _row("P8 python thread", "exit", "orphaned", [PY_FIX], "mcp-tether run -- python t.py",
                 "python"),
            _row("G5 run -- node stubborn", "close", "terminated", [])]
    out = io.StringIO()
    render_summary(rows, ("reference", "python", "wrappers", "guarded"), {}, out=out)
    text = out.getvalue()
    for fix in (LONG_FIX, SHELL_FIX, PY_FIX):
        assert text.count(fix) == 1, fix
    assert text.count("launch it behind the guard") == 1
    assert "  orphaned, fix [1], or [G]: E node timer exit\n" in text
    assert "  orphaned, fix [3] and [1], or [G]: W1 sh -c + node timer close\n" in text
    assert "  orphaned, fix [1], or [G]: W3 sh -c + node timer exit\n" in text
    assert "  orphaned, fix [2], or [G]: P8 python thread exit\n" in text
    assert "[1] " + LONG_FIX in text and "[3] " + SHELL_FIX in text
    assert "G5" not in text  # not a leak: no line of its own
    assert "devnull" in text  # the takeaway says the guard covers a stdin already at EOF


def test_lab_json_rows_carry_the_remedy_as_data_as_probe_json_does() -> None:
    """A failed row of `lab --json` has `remedy_steps` and `remedy_guard` from `annotate`;
    a row `annotate` left alone has neither, as in `probe --json`."""
    from mcp_tether.lab.cli import _json_row

    row = _json_row(_row("E node timer", "exit", "orphaned", [LONG_FIX],
                         "mcp-tether run -- node t.mjs", "reference"))
    assert row["remedy_steps"] == [LONG_FIX]
    assert row["remedy_guard"] == "mcp-tether run -- node t.mjs"
    assert row["block"] == "reference"
    passed = _leveled("X3 node plain", "exit", "spec", True)
    passed.record = passed.to_dict()  # as _annotated
    assert "remedy_steps" not in _json_row(passed) and "remedy_guard" not in _json_row(passed)


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
    text = out.getvalue()
    assert "  spec: [node] node plain\n" in text and "  robust: [node] python tethered\n" in text
    # The legend says what the tag is and why a server stops at spec.
    assert "[node] socketpair stdio" in text and "inherited-writer" in text


def test_markdown_and_html_say_each_fix_once_and_each_row_points_to_it() -> None:
    """Rows as `probe --json`/`lab` records: the Markdown has one "Fixes" list with each
    step once and each row's remedy as its pointers and guard command; the HTML links
    each card to the one list."""
    from mcp_tether.report.html import render_html
    from mcp_tether.report.markdown import render_markdown

    def rec(label: str, steps: list[str], guard: str) -> dict[str, object]:
        return {"label": label, "scenario": "exit", "host_style": "node", "verdict": "orphaned",
                "passed": False, "diagnosis": "Does not exit on stdin EOF. More.",
                "remedy": "; ".join([*steps, f"if you cannot change it: `{guard}`"]),
                "remedy_steps": steps, "remedy_guard": guard, "events": []}

    rows = [rec("E node timer", [LONG_FIX], "mcp-tether run -- node t.mjs"),
            rec("W1 sh -c + node timer", [SHELL_FIX, LONG_FIX], "mcp-tether run -- sh -c x"),
            rec("X2 node timer", [LONG_FIX], "mcp-tether run -- node t.mjs")]
    sections = [("lab: reference", {"results": rows[:1]}), ("lab: extra", {"results": rows[1:]})]
    md = render_markdown(sections)
    assert md.count(LONG_FIX) == 1 and md.count(SHELL_FIX) == 1
    assert "**Remedy.** fix [1], or [G] (`mcp-tether run -- node t.mjs`)" in md
    assert "**Remedy.** fix [2] and [1], or [G] (`mcp-tether run -- sh -c x`)" in md
    assert md.count("launch it behind the guard") == 1
    page = render_html(sections, title="t")
    assert page.count(LONG_FIX) == 1
    assert page.count('<li id="fix-1">') == 1 and page.count('href="#fix-1"') == 3
    assert page.count('href="#fix-G"') == 3 and page.count('<li id="fix-G">') == 1
    # The legend of the lab's summary, in the same words: the tags and the levels.
    assert legend(["node"]) in md and "[node] socketpair stdio" in md
    assert "robust = every row passed" in md and "spec = every spec row passed" in md
    assert escape(legend(["node"])) in page and "parent-death watch" in page


def test_a_verdict_that_is_its_rows_expected_answer_says_so_where_it_is_counted() -> None:
    """The idle rows' `alive` is a pass (the server still answers): the block's count
    says it is the expected answer there; a leak's verdict is counted plainly."""
    rows = [_row(f"T{i} python thread", "exit", "exited", [], block="tethered")
            for i in range(3)]
    idle = _row("T9 python thread", "idle", "alive", [], block="tethered")
    idle.passed = True
    leak = _row("T8 python thread", "close", "orphaned", [PY_FIX], block="tethered")
    out = io.StringIO()
    render_summary([*rows, idle, leak], ("tethered",), {}, out=out)
    line = next(ln for ln in out.getvalue().splitlines() if ln.strip().startswith("5 rows:"))
    assert line.strip() == ("5 rows: 3 exited, 1 alive (the idle rows: alive is the "
                            "expected answer there, a pass), 1 orphaned"), line
