"""A failure is published only when it repeats: the policy on fakes, the truth on real
servers (a fixture wheel that fails only on its first run, one that always fails)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_tether.cli import main
from mcp_tether.survey import SurveyResult, parse_list, rerun, run_survey
from mcp_tether.survey.render import to_html, to_json, to_markdown
from mcp_tether.survey.repeat import REPEATS, Run, busy, failed_verdict, judge, repeat_failing
from package_fixtures import wheel

MINI = (Path(__file__).resolve().parent / "servers" / "mini.py").read_text()
# Fails `close` (a non-daemon thread outlives EOF) only when its marker file is absent,
# i.e. on the first run of all; every later run exits on EOF.
FIRST_RUN_ONLY = (
    "import os, sys\n"
    "marker = os.environ['FLAKY_MARKER']\n"
    "if not os.path.exists(marker):\n"
    "    open(marker, 'w').close()\n"
    "    sys.argv.append('--thread')\n") + MINI


def _result(scenario: str, verdict: str, passed: bool) -> dict[str, Any]:
    return {"scenario": scenario, "verdict": verdict, "passed": passed}


def test_a_cell_is_judged_on_all_its_runs() -> None:
    """1. Failed twice or more: repeats (a FAIL), a pass beside them included. 2. Failed
    once, passed otherwise: flaky. 3. Only the first run got a verdict: unrepeated
    (unknown, not a FAIL)."""
    fail, ok, err = Run("lingered", False, 1.0), Run("exited", True, 1.0), \
        Run("error", False, 9.0)
    assert judge([fail, fail, fail]) == "repeats"
    assert judge([fail, err, fail]) == "repeats"
    assert judge([fail, ok, fail]) == "repeats"
    assert judge([fail, fail, ok]) == "repeats"
    assert judge([fail, ok, ok]) == "flaky"
    assert judge([fail, ok, err]) == "flaky"
    assert judge([fail, err, err]) == "unrepeated"


def test_a_fail_cell_is_named_by_what_its_failing_runs_did() -> None:
    """The verdict the failing runs share; mixed, the worst (a tree left running before one
    the ladder ended, before one gone by itself late): `lingered` only when every failing
    run lingered."""
    def runs(*verdicts: str) -> list[Run]:
        return [Run(v, v == "exited", 1.0) for v in verdicts]

    assert failed_verdict(runs("lingered", "lingered", "exited"), "lingered") == "lingered"
    assert failed_verdict(runs("lingered", "orphaned", "lingered"), "lingered") == "orphaned"
    assert failed_verdict(runs("killed", "terminated"), "killed") == "killed"
    assert failed_verdict(runs("orphaned", "error"), "orphaned") == "orphaned"
    assert failed_verdict([], "killed") == "killed"


def test_every_failing_scenario_is_run_again_with_the_load_before_each_run() -> None:
    """1. Only the failures (not the passes, not the errors) are probed again, REPEATS
    times, all in one probe run each. 2. Each run carries the load taken just before it.
    3. A probe that could not run at all gives `error` runs, never a pass."""
    first = [_result("close", "orphaned", False), _result("exit", "lingered", False),
             _result("crash", "exited", True), _result("idle", "error", False)]
    asked: list[tuple[str, ...]] = []
    loads = iter([2.5, 3.5])

    def probe(names: tuple[str, ...]) -> list[dict[str, Any]] | None:
        asked.append(names)
        if len(asked) == 1:
            return [_result("close", "orphaned", False), _result("exit", "exited", True)]
        return None

    runs = repeat_failing(first, 1.5, probe, lambda: next(loads))
    assert asked == [("close", "exit")] * REPEATS
    assert [(r.verdict, r.load) for r in runs["close"]] == \
        [("orphaned", 1.5), ("orphaned", 2.5), ("error", 3.5)]
    assert judge(runs["close"]) == "repeats" and judge(runs["exit"]) == "flaky"
    assert repeat_failing([_result("close", "exited", True)], 0, probe, lambda: 0) == {}


def test_a_machine_is_busy_when_its_load_stayed_above_the_cpu_count() -> None:
    assert busy([5.0, 4.0, 1.0], 2) and not busy([5.0, 1.0, 1.0], 2) and not busy([], 2)


def test_a_failure_that_does_not_repeat_is_flaky_and_one_that_does_stays_a_fail(
        tmp_path: Path) -> None:
    """1. A server that fails `close` only on its very first run: the node style's
    failure is flaky, with its three runs and their loads, and the levels pass.
    2. A server that always fails: FAIL in both styles, each cell with three failed runs.
    3. The renderings show the flaky cell as flaky, never as FAIL; the JSON has a load
    for every probe run. 4. The rerun path (`rerun`) repeats a failure the same way."""
    flaky = wheel(tmp_path, "flaky-server", ["flaky-server"], source=FIRST_RUN_ONLY)
    bad = wheel(tmp_path, "stubborn-server", ["stubborn-server"])
    marker = tmp_path / "ran-once"
    listing = tmp_path / "servers.list"
    listing.write_text(f"pypi:{flaky} launch=direct name=flaky env=FLAKY_MARKER={marker}\n"
                       f"pypi:{bad} launch=direct name=stubborn -- --thread\n")
    result = run_survey(parse_list(listing), jobs=1, scenarios=("close",))
    rows = {r.label: r for r in result.rows}
    once = rows["flaky"]
    assert not once.failures and once.spec_pass == {"node": True, "python": True,
                                                    "guarded": True}
    [f] = once.flaky
    assert (f.style, f.scenario, f.repeated) == ("node", "close", "flaky")
    assert [r["passed"] for r in f.runs] == [False, True, True]
    assert all(isinstance(r["load"], float) for r in f.runs)
    stubborn = rows["stubborn"]
    assert stubborn.spec_pass["node"] is False and stubborn.spec_pass["python"] is False
    assert {(f.style, f.repeated, len(f.runs)) for f in stubborn.failures} == \
        {("node", "repeats", 3), ("python", "repeats", 3)}
    assert not stubborn.flaky
    md = to_markdown(result)
    line = next(ln for ln in md.splitlines() if ln.startswith("| flaky |"))
    assert "FAIL" not in line and "flaky: node close" in line
    assert "close \\[spec\\] (node): flaky, not a FAIL" in md  # md_text escapes [ ]
    assert "close (node): failed 3 of 3 runs: terminated at load" in md
    assert "flaky: node close" in to_html(result)
    data = json.loads(to_json(result))
    assert all(set(r["loads"]) == {"node", "python", "guarded"} for r in data["results"])
    assert data["cpus"] >= 1 and isinstance(data["busy"], bool)
    rerun(result, parse_list(listing), "python", ("close",), jobs=1, only=("stubborn",))
    [again] = [f for f in stubborn.failures if f.style == "python"]
    assert (again.repeated, len(again.runs)) == ("repeats", 3)


def test_a_busy_survey_is_marked_and_its_table_is_written_only_when_allowed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """1. Loads above the CPU count: the table says BUSY MACHINE. 2. `--out` writes only
    the JSON and exits 1, with one line. 3. `--allow-busy` writes the table too."""
    doc = {"started": "2026-01-01T00:00:00Z", "seconds": 10, "jobs": 1, "cpus": 2,
           "pid_namespace": True, "load_average": {"start": 9.0, "end": 8.0},
           "results": [{"label": "a", "spec": "npm:a", "loads": {"node": 7.5}}]}
    saved = tmp_path / "busy.json"
    saved.write_text(json.dumps(doc))
    listing = tmp_path / "servers.list"
    listing.write_text("npm:a\n")
    result = SurveyResult.from_dict(doc)
    assert result.busy and to_markdown(result).startswith("BUSY MACHINE")
    out = tmp_path / "out" / "table"
    code = main(["survey", str(listing), "--from-json", str(saved), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and "only" in err and len(err.strip().splitlines()) == 1
    assert Path(f"{out}.json").exists() and not Path(f"{out}.md").exists()
    assert main(["survey", str(listing), "--from-json", str(saved), "--out", str(out),
                 "--allow-busy"]) == 0
    assert Path(f"{out}.md").read_text().startswith("BUSY MACHINE")


def test_a_failure_the_sdk_host_did_not_confirm_says_so_beside_it() -> None:
    """The row keeps its FAIL (it repeated), and its failures cell says the SDK host saw
    otherwise; a confirmed one adds nothing to the cell. The `kill PID` column is the
    sigterm-pid verdict per style."""
    fail = {"style": "python", "scenario": "exit", "level": "spec", "verdict": "lingered",
            "diagnosis": "d", "remedy": "r", "repeated": "repeats",
            "runs": [{"verdict": "lingered", "passed": False, "load": 1.0}] * 3}
    doc = {"started": "2026-01-01T00:00:00Z", "seconds": 1, "jobs": 1,
           "pid_namespace": True, "results": [{
               "label": "az", "spec": "npm:az", "status": "ok",
               "spec_pass": {"node": True, "python": False},
               "robust_pass": {"node": True, "python": False},
               "verdicts": {"node": {"sigterm-pid": "exited"},
                            "python": {"sigterm-pid": "orphaned"}},
               "failures": [{**fail, "sdk_recheck": "not confirmed: the SDK host saw the "
                             "tree gone (328 ms)"},
                            {**fail, "scenario": "crash", "sdk_recheck": "confirmed (x)"}]}]}
    md = to_markdown(SurveyResult.from_dict(doc))
    line = next(ln for ln in md.splitlines() if ln.startswith("| az |"))
    assert "pass / FAIL" in line and "| ends / LEFT |" in line  # `kill PID`: sigterm-pid
    assert "exit (SDK host: not confirmed: the SDK host saw the tree gone (328 ms))" in line
    assert "crash (SDK host" not in line and "SDK host: confirmed (x)" in md
    doc["results"][0]["verdicts"] = {"node": {"close": "exited"}}  # made before sigterm-pid
    line = next(ln for ln in to_markdown(SurveyResult.from_dict(doc)).splitlines()
                if ln.startswith("| az |"))
    assert "| pass / FAIL | — |" in line


REPO = Path(__file__).resolve().parents[1]
SAVED = REPO / "docs" / "survey-table.json"


def _cell_runs(verdicts: list[str]) -> list[dict[str, Any]]:
    return [{"verdict": v, "passed": v == "exited", "load": 1.0} for v in verdicts]


def test_a_saved_row_is_worded_by_todays_rule_in_every_column() -> None:
    """A row saved when a pass made any failure flaky: read back, its 2-of-3 cells are
    FAILs (failures list, level, `kill PID` LEFT), its 1-of-3 cell stays flaky (`kill
    PID` flaky), a cell whose failing runs all lingered reads `lingered`, never LEFT; the
    servers x hosts table reads the same cells the same way."""
    from mcp_tether.survey import ServerResult
    from mcp_tether.survey.hosts import HostEvent, HostLadder, derive, judged_verdicts
    from mcp_tether.survey.render import cells

    def cell(style: str, scenario: str, level: str, runs: list[str]) -> dict[str, Any]:
        return {"style": style, "scenario": scenario, "level": level, "verdict": runs[0],
                "diagnosis": "d", "remedy": "r", "repeated": "flaky", "runs": _cell_runs(runs)}

    row = ServerResult.from_dict({
        "label": "x", "spec": "npm:x", "status": "ok",
        "spec_pass": {"node": True, "python": True}, "robust_pass": {"node": True, "python": True},
        "verdicts": {"node": {"close": "orphaned", "sigterm-pid": "lingered", "crash": "lingered"},
                     "python": {"close": "exited", "sigterm-pid": "orphaned"}},
        "failures": [{**cell("node", "sigterm-pid", "robust", ["lingered"] * 3),
                      "repeated": "repeats"}],
        "flaky": [cell("node", "close", "spec", ["orphaned", "exited", "orphaned"]),
                  cell("node", "crash", "spec", ["lingered", "exited", "exited"]),
                  cell("python", "sigterm-pid", "robust", ["orphaned", "orphaned", "exited"])]})
    assert {(f.style, f.scenario) for f in row.failures} == \
        {("node", "sigterm-pid"), ("node", "close"), ("python", "sigterm-pid")}
    assert [(f.scenario, f.repeated) for f in row.flaky] == [("crash", "flaky")]
    assert row.spec_pass == {"node": False, "python": True}
    assert row.robust_pass == {"node": False, "python": False}
    words = cells(row)
    assert words[6:9] == ["FAIL / pass", "FAIL / FAIL", "lingered / LEFT"], words
    assert "flaky: node crash" in words[-1] and "python: sigterm-pid" in words[-1]
    judged = judged_verdicts(row)
    assert judged["node"] == {"close": "orphaned", "sigterm-pid": "lingered", "crash": "flaky"}
    host = HostLadder("h", "node", "test", {"sigkill": HostEvent("server-left", "EOF")})
    assert derive(judged, host, "sigkill").state == "flaky"


def test_the_published_table_is_its_json_read_by_the_one_rule() -> None:
    """docs/survey-table.{json,md,html} as published are the saved JSON rendered by this
    code (rendering them again changes nothing); in them `@browsermcp/mcp`'s python
    `sigterm-pid` (orphaned, orphaned, exited) is a FAIL with `kill PID` LEFT, and
    `@zereight/mcp-gitlab`'s node `kill PID` (lingered 3 of 3) reads `lingered`; no cell
    failing twice is flaky, no flaky cell failed twice; the header's counts are the
    rows'."""
    from mcp_tether.survey.render import cells

    result = SurveyResult.from_dict(json.loads(SAVED.read_text()))
    assert to_json(result) == SAVED.read_text()
    assert to_markdown(result) == SAVED.with_suffix(".md").read_text()
    assert to_html(result) == SAVED.with_suffix(".html").read_text()
    rows = {r.label.rpartition("@")[0]: r for r in result.rows}  # without the version
    browser, gitlab = rows["npm:@browsermcp/mcp"], rows["npm:@zereight/mcp-gitlab"]
    assert [f.repeated for f in browser.failures
            if (f.style, f.scenario) == ("python", "sigterm-pid")] == ["repeats"]
    assert cells(browser)[8] == "ends / LEFT"
    assert cells(gitlab)[8] == "lingered / LEFT"
    for r in result.rows:
        for f in r.failures:
            assert not f.runs or sum(not x["passed"] for x in f.runs) >= 2, (r.label, f)
        for f in r.flaky:
            assert sum(not x["passed"] for x in f.runs if x["verdict"] != "error") < 2
    header = to_markdown(result).splitlines()[0]
    shown = sum(1 for r in result.rows if cells(r)[6] != "—")
    assert f"{len(result.rows)} servers ({shown} with results," in header
    assert f"Floor ({result.probe_runs} probe runs" in header
