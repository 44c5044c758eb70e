"""The survey: list files, one table from real probes, services that are not there, and
nothing left running after an interrupted survey.

The servers are local fixture wheels (tests/package_fixtures.py); pip runs without an
index, so no test reaches a registry.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_tether.cli import main
from mcp_tether.errors import ConfigError
from mcp_tether.survey import parse_line, parse_list
from package_fixtures import go_offline, wheel
from polling import until

SERVICE_DOWN = (  # the wheel's console script runs this as __main__
    "import sys\n"
    "sys.stderr.write('Error: connect ECONNREFUSED 127.0.0.1:5432\\n')\n"
    "sys.exit(1)\n")


@pytest.fixture(autouse=True)
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return go_offline(tmp_path, monkeypatch)


def test_a_list_line_gives_spec_launch_env_call_needs_and_the_server_arguments() -> None:
    """Words split like a shell's; everything after `--` is the server's."""
    e = parse_line("npm:x@1.0.0 launch=direct bin=x-server env=API_KEY=dummy env=B=2 "
                   "'call=echo:{\"message\": \"hi\"}' needs=postgres name=X timeout=60 "
                   "-- --flag 'a b'  # comment", 3)
    assert e is not None and e.spec.text == "npm:x@1.0.0" and e.launch == "direct"
    assert e.bin == "x-server" and e.env == {"API_KEY": "dummy", "B": "2"}
    assert e.call == ("echo", {"message": "hi"}) and e.needs == "postgres"
    assert e.label == "X" and e.timeout == 60.0 and e.args == ["--flag", "a b"] and e.line == 3
    assert parse_line("   # only a comment") is None


@pytest.mark.parametrize("line, why", [
    ("npm:x launch=docker", "launch='docker'"),
    ("npm:x --flag", "server arguments go after `--`"),
    ("npm:x call=t:{not json}", "not JSON"),
    ("npm:x env=NOVALUE", "env=KEY=VALUE"),
    ("cargo:x", "not a package spec"),
])
def test_a_bad_list_line_is_a_config_error_naming_the_line(
        tmp_path: Path, line: str, why: str) -> None:
    f = tmp_path / "servers.list"
    f.write_text(f"# servers\npypi:ok==1.0\n{line}\n")
    with pytest.raises(ConfigError, match=rf"servers.list:3:1: .*{why}"):
        parse_list(f)


def test_a_survey_row_has_both_host_styles_the_guard_and_every_rendering(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """1. A server that exits on EOF passes; 2. one that a non-daemon thread keeps alive
    after EOF fails `close` in both host styles, with a diagnosis and a remedy, and passes
    behind the guard; 3. Markdown, JSON and HTML carry the same rows."""
    good = wheel(tmp_path, "good-server", ["good-server"])
    bad = wheel(tmp_path, "stubborn-server", ["stubborn-server"])
    listing = tmp_path / "servers.list"
    listing.write_text(f"pypi:{good} launch=direct name=good\n"
                       f"pypi:{bad} launch=direct name=stubborn -- --thread\n")
    out = tmp_path / "out" / "survey"
    code = main(["survey", str(listing), "--host-namespace", "-s", "close",
                 "--out", str(out), "--jobs", "2", "--allow-busy"])  # CI may be busy
    assert code == 0
    data = json.loads(Path(f"{out}.json").read_text())
    rows = {r["label"]: r for r in data["results"]}
    assert rows["good"]["spec_pass"] == {"node": True, "python": True, "guarded": True}
    assert rows["good"]["language"] == "python" and rows["good"]["version"] == "1.0.0"
    stubborn = rows["stubborn"]
    assert stubborn["spec_pass"]["node"] is False and stubborn["spec_pass"]["python"] is False
    assert stubborn["guard_pass"] is True
    failed = {(f["style"], f["scenario"]) for f in stubborn["failures"]}
    assert failed == {("node", "close"), ("python", "close")}
    assert all(f["diagnosis"] and f["remedy"] for f in stubborn["failures"])
    md = Path(f"{out}.md").read_text()
    assert "| stubborn | — | 1.0.0 | python |" in md and "| passes |" in md
    assert "Fix: [1]." in md and "### The fixes" in md and "FAIL / FAIL" in md
    page = Path(f"{out}.html").read_text()
    assert "<td>stubborn</td>" in page and "behind the guard" in page
    out, err = capsys.readouterr()
    assert out == md
    assert "mcp-tether survey: 2/2 after " in err  # progress: stderr only, one line a row


def test_a_server_that_cannot_reach_its_service_is_reported_so_not_as_a_leak(
        tmp_path: Path) -> None:
    """Its stderr says ECONNREFUSED and it never answers: `needs-service`, no verdicts."""
    whl = wheel(tmp_path, "db-server", ["db-server"], source=SERVICE_DOWN)
    listing = tmp_path / "servers.list"
    listing.write_text(f"pypi:{whl} launch=direct\n")
    from mcp_tether.survey import run_survey

    result = run_survey(parse_list(listing), scenarios=("close",), ready_timeout=5)
    row = result.rows[0]
    assert row.status == "needs-service" and "ECONNREFUSED" in row.note
    assert not row.failures and not row.spec_pass


def test_an_interrupted_survey_ends_every_server_it_started(tmp_path: Path) -> None:
    """1. A survey of a server that ignores EOF and SIGTERM is running its probes;
    2. SIGTERM to the survey; 3. it exits 143, and nothing it started is left (the
    suite's leftover check covers every process carrying the session's cookie)."""
    whl = wheel(tmp_path, "stubborn-server", ["stubborn-server"])
    listing = tmp_path / "servers.list"
    listing.write_text(f"pypi:{whl} launch=direct -- --thread --ignore-term\n")
    p = subprocess.Popen([sys.executable, "-m", "mcp_tether", "survey", str(listing),
                          "--host-namespace", "-s", "idle"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        until(lambda: _server_running(p.pid), "the survey to start the server", 60)
    except AssertionError:
        p.kill()  # our own child, not yet reaped
        p.communicate()
        raise
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert "stopped by SIGTERM; nothing left running" in err
    assert "stubborn_server" in out  # the table of what was done is still printed


def _server_running(root: int) -> bool:
    from mcp_tether.proc import cmdline, descendants, snapshot

    return any("stubborn-server" in " ".join(cmdline(i.pid))
               for i in descendants(root, snapshot()))


def test_a_server_that_only_passes_devnull_did_not_start() -> None:
    """`devnull` needs no handshake: its pass does not mean the server started."""
    from mcp_tether.survey import Failure, ServerResult

    row = ServerResult("x", "npm:x@1",
                       verdicts={"node": {"devnull": "exited", "close": "early-exit"}},
                       failures=[Failure("node", "close", "spec", "early-exit",
                                         "Exited during start-up (status 1): Error: boom.",
                                         "")])
    row.reclassify()
    assert row.status == "did-not-start" and "boom" in row.note
    row = ServerResult("y", "npm:y@1", needs="postgres",
                       verdicts={"node": {"close": "early-exit"}})
    row.reclassify()
    assert row.status == "needs-service" and row.note.startswith("needs postgres")
    row = ServerResult("z", "npm:z@1",
                       verdicts={"node": {"devnull": "exited", "close": "orphaned"}})
    row.reclassify()
    assert row.status == "ok"


def test_a_survey_json_renders_again_without_probing(tmp_path: Path) -> None:
    """`survey LIST --from-json FILE --out BASE`: the same table, no server started."""
    from mcp_tether.survey import ServerResult, SurveyResult
    from mcp_tether.survey.render import to_json

    listing = tmp_path / "servers.list"
    listing.write_text("npm:db@1.0.0 needs=postgres\n")
    row = ServerResult("npm:db@1.0.0", "npm:db@1.0.0", version="1.0.0",
                       verdicts={"node": {"close": "early-exit"}})
    saved = tmp_path / "old.json"
    saved.write_text(to_json(SurveyResult([row], 1.8e9, 12.0, 2, True)))
    assert main(["survey", str(listing), "--from-json", str(saved),
                 "--out", str(tmp_path / "new")]) == 0
    data = json.loads((tmp_path / "new.json").read_text())
    assert data["results"][0]["status"] == "needs-service" and data["seconds"] == 12.0
    assert "needs a service: needs postgres" in (tmp_path / "new.md").read_text()


def test_a_survey_says_its_load_and_its_rows_and_runs_as_counted_from_its_rows() -> None:
    """The table's header gives the load average at the start and end, the rows as the
    table shows them (with results, did not start, cannot be installed...), and the run
    time as a ratio of its floor: the probe runs the rows made (one per style a row got
    to, a server that did not start stopping after one; two more per style whose
    failures were run again) x 15 s / jobs."""
    from mcp_tether.survey import Failure, ServerResult, SurveyResult
    from mcp_tether.survey.render import to_json, to_markdown

    styles = {"node": 1.0, "python": 1.0, "guarded": 1.0}
    runs = [{"verdict": "orphaned", "passed": False, "load": 1.0}] * 3
    rows = [ServerResult("npm:a@1", "npm:a@1", spec_pass={"node": True}, loads=styles),
            ServerResult("npm:d@1", "npm:d@1", spec_pass={"node": False}, loads=styles,
                         failures=[Failure("node", "close", "spec", "orphaned", "", "",
                                           "repeats", runs)]),
            ServerResult("npm:b@1", "npm:b@1", status="did-not-start", loads={"node": 1.0}),
            ServerResult("npm:c@1", "npm:c@1", status="install-failed")]
    result = SurveyResult(rows, 1.8e9, 60.0, 2, True, (0.41, 1.9))
    assert (result.first_runs, result.repeat_runs) == (7, 2)
    assert result.floor == 9 * 15.0 / 2
    header = to_markdown(result).splitlines()[0]
    assert "4 servers (2 with results, 1 did not start, 1 cannot be installed here)" in header
    assert "load average 0.41 at the start and 1.9 at the end" in header
    assert ("Floor (9 probe runs: 7 first runs + 2 repeat runs of failures, x 15 s / 2): "
            "68 s; this run 0.89x.") in header
    again = SurveyResult.from_dict(json.loads(to_json(result)))
    assert again.load == (0.41, 1.9) and again.seconds == 60.0


def test_a_list_line_carries_how_much_the_server_is_used_into_its_row() -> None:
    """`downloads=` (npm, a month) and `rank=` (PyPI) reach the row and the table's
    "used" column; a figure that is not a whole number is the line's error."""
    from mcp_tether.survey import ServerResult
    from mcp_tether.survey.listfile import parse_line
    from mcp_tether.survey.render import cells

    npm = parse_line("npm:a@1.0.0 downloads=1234567 needs=postgres -- x")
    pypi = parse_line("pypi:b==2.0 rank=812")
    assert npm is not None and npm.downloads == 1234567 and npm.args == ["x"]
    assert pypi is not None and pypi.rank == 812 and pypi.downloads is None
    row = ServerResult("npm:a@1.0.0", "npm:a@1.0.0", downloads=npm.downloads,
                       status="did-not-start")
    assert cells(row)[1] == "1,234,567/month"
    pypi_row = ServerResult("pypi:b==2.0", "pypi:b==2.0", rank=812, status="error")
    assert cells(pypi_row)[1] == "PyPI #812"
    with pytest.raises(ValueError, match="whole number"):
        parse_line("npm:a@1.0.0 downloads=lots")


def test_surveys_of_one_list_put_together_keep_each_runs_facts(tmp_path: Path) -> None:
    """`--from-json A --from-json B`: B's row replaces A's for the same server, rows follow
    the list's order, and the header gives each survey's own time, load and floor."""
    from mcp_tether.survey import ServerResult, SurveyResult
    from mcp_tether.survey.render import to_json

    listing = tmp_path / "servers.list"
    listing.write_text("npm:a@1 downloads=9\nnpm:b@1\nnpm:c@1\n")
    first = SurveyResult([ServerResult("npm:c@1", "npm:c@1"),
                          ServerResult("npm:a@1", "npm:a@1", status="did-not-start")],
                         1.8e9, 100.0, 2, True, (0.5, 9.0))
    second = SurveyResult([ServerResult("npm:a@1", "npm:a@1", version="1"),
                           ServerResult("npm:b@1", "npm:b@1")],
                          1.8e9 + 500, 50.0, 2, True, (0.3, 4.0))
    for name, part in (("one", first), ("two", second)):
        (tmp_path / f"{name}.json").write_text(to_json(part))
    assert main(["survey", str(listing), "--from-json", str(tmp_path / "one.json"),
                 "--from-json", str(tmp_path / "two.json"), "--out", str(tmp_path / "t")]) == 0
    data = json.loads((tmp_path / "t.json").read_text())
    assert [r["label"] for r in data["results"]] == ["npm:a@1", "npm:b@1", "npm:c@1"]
    assert data["results"][0]["status"] == "ok" and data["results"][0]["downloads"] == 9
    assert [r["seconds"] for r in data["runs"]] == [100.0, 50.0] and data["seconds"] == 150.0
    header = (tmp_path / "t.md").read_text().splitlines()[0]
    assert header.startswith("Put together from 2 surveys")
    assert "load average 0.5 at the start and 9 at the end" in header
    assert "load average 0.3 at the start and 4 at the end" in header


def test_a_survey_with_a_bad_cache_stops_at_once_with_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cache path that is a file: `cache PATH: ...`, exit 2, before any row is tried
    (not a table whose every row reads the same error, exit 1)."""
    listing = tmp_path / "servers.list"
    listing.write_text("npm:a@1.0.0\npypi:b==1.0\n")
    bad = tmp_path / "afile"
    bad.write_text("")
    monkeypatch.setenv("MCP_TETHER_CACHE", str(bad))
    code = main(["survey", str(listing), "--host-namespace", "-q"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", out
    assert err.strip().splitlines() == [f"mcp-tether survey: cache {bad}: a file, not a directory"]


def test_a_fix_many_rows_share_is_said_once_and_the_rows_point_to_it() -> None:
    """The survey's Markdown and HTML number each distinct remedy once; every failing row
    names its fix by that number, however many rows share it."""
    from mcp_tether.survey import Failure, ServerResult, SurveyResult
    from mcp_tether.survey.render import to_html, to_markdown

    fix = "Add `tether(server)` right after `server.connect(...)`."
    rows = [ServerResult(f"npm:s{i}@1", f"npm:s{i}@1", version="1", spec_pass={"node": False},
                         failures=[Failure("node", "close", "spec", "orphaned", f"diag {i}", fix)])
            for i in range(3)]
    result = SurveyResult(rows, 1.8e9, 1.0, 2, True)
    md, page = to_markdown(result), to_html(result)
    assert md.count(fix.replace("|", "\\|")) == 1 and md.count("Fix: [1].") == 3
    assert page.count("tether(server)") == 1 and page.count('href="#fix-1"') == 3


@pytest.mark.parametrize("where", ["file", "no-folder"])
def test_an_out_that_cannot_be_made_stops_before_any_row_with_one_line(
        tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--out under a file or an unreachable folder: exit 2 and one line before a server
    is fetched (the list's package does not exist: reaching it would say so)."""
    listing = tmp_path / "servers.list"
    listing.write_text("npm:mcp-tether-no-such-package@0.0.0\n")
    blocker = tmp_path / "afile"
    blocker.write_text("")
    base = blocker / "t" if where == "file" else Path("/proc/mcp-tether-nowhere/t")
    code = main(["survey", str(listing), "--out", str(base), "--host-namespace", "-q"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", out
    assert err.strip().splitlines() == [
        f"mcp-tether survey: --out {base}: cannot make its folder "
        f"({'File exists' if where == 'file' else 'No such file or directory'})"]


def test_a_file_of_out_that_cannot_be_written_still_leaves_the_table_on_stdout(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """BASE.json is a folder: the others are written, stdout has the table, one line
    names the file, exit 2."""
    from mcp_tether.survey import ServerResult, SurveyResult
    from mcp_tether.survey.render import to_json

    listing = tmp_path / "servers.list"
    listing.write_text("npm:db@1.0.0\n")
    saved = tmp_path / "old.json"
    saved.write_text(to_json(SurveyResult([ServerResult("npm:db@1.0.0", "npm:db@1.0.0")],
                                          1.8e9, 1.0, 2, True)))
    (tmp_path / "new.json").mkdir()
    code = main(["survey", str(listing), "--from-json", str(saved), "--out",
                 str(tmp_path / "new")])
    out, err = capsys.readouterr()
    assert code == 2 and "npm:db@1.0.0" in out
    assert err.strip().splitlines() == [
        f"mcp-tether survey: --out {tmp_path / 'new.json'}: Is a directory"]
    assert (tmp_path / "new.md").is_file() and (tmp_path / "new.html").is_file()
