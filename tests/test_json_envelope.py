"""Every `--json` prints one document with the documented envelope (docs/json.md):
`schema`, `version` first, the command's summary fields, `results` (a list) last.

Cheap invocations only: a stdlib fixture server, a config file in tmp_path, the
committed survey table re-rendered, a scan of this machine. `lab --json` (24 s) is
checked by tests/test_lab_json.py, a real `reap` (with outcomes) by tests/test_scan.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_tether.cli import main
from mcp_tether.jsonout import VERSION

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MINI = [sys.executable, str(HERE / "servers" / "mini.py")]
FAST = ["-s", "close", "--window", "2", "--grace", "1", "--term-grace", "1"]


def _config(tmp_path: Path) -> str:
    cfg = tmp_path / "mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {"mini": {"command": MINI[0],
                                                        "args": MINI[1:]}}}))
    return str(cfg)


def _invocations(tmp_path: Path) -> dict[str, list[str]]:
    cfg = _config(tmp_path)
    return {
        "probe": ["probe", "--json", *FAST, "--", *MINI],
        "probe-config": ["probe", "--json", "--config", cfg, "--yes", *FAST],
        "survey": ["survey", str(ROOT / "docs" / "survey.list"), "--json", "--from-json",
                   str(ROOT / "docs" / "survey-table.json")],  # the pre-envelope shape
        "hostcheck": ["hostcheck", "--json", "--settle", "0.3", "-s", "exit", "--",
                      sys.executable, str(HERE / "hostcheck_hosts" / "bad_host.py"),
                      "{server}"],
        "ps": ["ps", "--json"],
        "reap-plan": ["reap", "--dry-run", "--json"],
        "hosts": ["hosts", "--json", "--config", cfg],
        "wrap": ["wrap", "--json", "--dry-run", "--config", cfg, "--tether", sys.executable],
        "unwrap": ["unwrap", "--json", "--dry-run", "--config", cfg],
        "inspect": ["inspect", "--json"],
        "inspect-command": ["inspect", "--json", "--command", " ".join(MINI)],
    }


SHAPES = ["probe", "probe-config", "survey", "hostcheck", "ps", "reap-plan", "hosts", "wrap",
          "unwrap", "inspect", "inspect-command"]


def assert_envelope(doc: Any, shape: str) -> None:
    """The envelope of docs/json.md, for `shape`."""
    assert isinstance(doc, dict), doc
    keys = list(doc)
    assert keys[:2] == ["schema", "version"] and keys[-1] == "results", keys
    assert doc["schema"] == f"mcp-tether/{shape}" and doc["version"] == VERSION
    assert isinstance(doc["results"], list)


@pytest.mark.parametrize("shape", SHAPES)
def test_every_json_output_is_one_document_with_the_envelope(
        shape: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """`json.loads(stdout)` reads the whole output: schema, version, ..., results."""
    argv = _invocations(tmp_path)[shape]
    code = main(argv)
    out, err = capfd.readouterr()
    assert code in (0, 1), (code, err)
    doc = json.loads(out)
    assert_envelope(doc, shape)
    if shape in ("probe", "probe-config", "hostcheck", "hosts", "survey"):
        assert doc["results"], doc  # each of these has something to report here
    if shape == "probe":
        assert doc["results"][0]["scenario"] == "close" and "passed" in doc
    if shape == "probe-config":
        assert doc["results"][0]["name"] == "mini" and doc["results"][0]["results"]
    if shape == "hostcheck":
        assert doc["results"][0]["scenario"] == "exit" and doc["exit_code"] == code


def test_reap_watch_refuses_json_rather_than_print_lines_that_are_not_one_document(
        capfd: pytest.CaptureFixture[str]) -> None:
    """--watch streams one text line per action: --json with it is a usage error."""
    assert main(["reap", "--watch", "--yes", "--json"]) == 2
    assert "drop --json" in capfd.readouterr().err


# -- the shape: every key, in order -------------------------------------------------------
# What each document and its rows printed before results became records (issue 56; taken
# from the tree before the change), pinned: a key renamed, dropped or moved fails here. A
# new field is allowed by the envelope's rule (docs/json.md): add it here where it goes.
PROBE_ROW = ["scenario", "host_style", "level", "verdict", "passed", "exit_ms", "rung",
             "exit_status", "signaled", "survivors", "warnings", "detail", "guarded",
             "guard_rung", "call_answered", "window_s", "startup_ms", "handshake", "error_code",
             "stderr_tail", "probe_cpu_ms", "trigger_at", "gone_at", "t0", "events",
             "killed_at_window", "tether", "label", "diagnosis", "remedy"]
HOSTCHECK_ROW = ["scenario", "title", "verdict", "after", "hold", "hold_point", "held_ms",
                 "released_ms", "wrapper", "recorder_signals", "host_pgid", "host_sid",
                 "passed", "detail", "spec", "host_argv", "host_config", "after_edit",
                 "host_pid", "host_exit_ms", "host_status", "host_ended_by_cleanup",
                 "initialized_ms", "action", "action_ms", "left", "others_left", "layers",
                 "also", "ps", "calls", "killed_by_cleanup", "recorded", "events",
                 "host_output_tail", "processes"]
HOSTCHECK_PROCESS = ["pid", "role", "ppid", "direct_child", "signals", "stdin_closed_ms",
                     "stdin_closed_first", "pgid", "sid", "group", "session", "ended",
                     "ended_ms"]
SURVEY_ROW = ["label", "spec", "name", "version", "language", "sdk", "sdk_exits_on_eof",
              "launch", "command", "needs", "downloads", "rank", "status", "note", "spec_pass",
              "robust_pass", "verdicts", "failures", "flaky", "loads", "seconds",
              "install_scripts", "scripts_ran", "guard_pass"]
SURVEY_FAILURE = ["style", "scenario", "level", "verdict", "diagnosis", "remedy", "repeated",
                  "runs", "sdk_recheck"]
SURVEY_RUN = ["verdict", "passed", "load"]
LAB_ROW = ["scenario", "host_style", "verdict", "passed", "exit_ms", "rung", "exit_status",
           "survivors", "warnings", "detail", "probe_cpu_ms", "stderr_tail", "label", "level",
           "guarded", "guard_rung", "call_answered", "error_code", "diagnosis", "remedy",
           "block"]
PS_ROW = ["pid", "start", "state", "evidence", "mcp", "guess", "found_by", "what", "user",
          "uid", "age_seconds", "rss_bytes", "cpu_seconds", "cpu_percent", "command",
          "shown_command", "config", "host", "parent", "stdin", "channels", "stdin_writers",
          "stdout_readers", "listening", "superseded", "members"]
PS_PARTS = {
    "what": ["runtime", "package", "version", "sdk", "sdk_version", "script", "source"],
    "parent": ["pid", "name", "role", "host"],
    "stdin": ["kind", "writer", "inode", "private"],
    "channel": ["fd", "kind", "side", "inode", "end", "far", "peer", "detail"],
    "member": ["pid", "start", "ppid", "pgid", "name", "command", "rss_bytes", "cpu_seconds"],
}
TOTALS = ["servers", "leaked", "leaked_mcp", "live", "unknown", "abandoned",
          "abandoned_rss_bytes", "superseded", "superseded_rss_bytes", "leaked_rss_bytes",
          "live_rss_bytes", "orphans", "orphan_rss_bytes"]
SUMMARIES = {
    "probe": ["command", "level", "passed", "meets", "guarded", "summary", "rerun_alone",
              "suggest_jobs_1"],
    "probe-config": ["level", "passed"],
    "hostcheck": ["argv", "host", "passed", "exit_code"],
    "survey": ["started", "seconds", "jobs", "pid_namespace", "floor_seconds", "probe_runs",
               "first_runs", "repeat_runs", "cpus", "busy", "load_average", "others_running"],
    "ps": ["totals", "hosts_running", "config_errors", "scanned", "unreadable",
           "elapsed_seconds", "containers", "container_support"],
    "reap-plan": ["dry_run", "not_selected", "containers"],
}


@pytest.mark.parametrize("shape", list(SUMMARIES))
def test_every_document_keeps_its_keys_in_their_order(
        shape: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The summary fields between `version` and `results`, and each row's keys, in the
    order they were printed before the records: readers of saved JSON rely on them."""
    main(_invocations(tmp_path)[shape])
    doc = json.loads(capfd.readouterr().out)
    assert list(doc) == ["schema", "version", *SUMMARIES[shape], "results"]
    rows = doc["results"]
    if shape == "probe":
        assert list(rows[0]) == PROBE_ROW
    if shape == "probe-config":
        assert list(rows[0]) == ["name", "meets", "guarded", "results"]
    if shape == "hostcheck":
        assert list(rows[0]) == HOSTCHECK_ROW
        assert list(rows[0]["processes"][0]) == HOSTCHECK_PROCESS
    if shape == "survey":
        assert all(list(r) == SURVEY_ROW for r in rows)
        failures = [f for r in rows for f in r["failures"] + r["flaky"]]
        assert failures and all(list(f) == SURVEY_FAILURE for f in failures)
        assert all(list(run) == SURVEY_RUN for f in failures for run in f["runs"])
    if shape == "ps":
        assert list(doc["totals"]) == TOTALS


def test_a_scan_row_keeps_its_keys_and_its_record_says_them_in_order() -> None:
    """A `ps` row built from a scan's types: the keys pinned above, which are the scan
    records' own, in their order (scan/record.py)."""
    from typing import get_type_hints

    from mcp_tether.proc.identity import ProcessId, ProcRecord
    from mcp_tether.scan import record
    from mcp_tether.scan.model import Channel, Member, ScanResult, Server

    member = Member(ProcRecord(7, 1, 7, 7, "S", 1.0, "node", argv=["node", "s.js"]), 0.5)
    server = Server(ident=ProcessId(7, 1.0), uid=0, user="root", age_seconds=3.0,
                    command=["node", "s.js"], shown=["node", "s.js"], found_by=["evidence"],
                    config=[], host=None, channels=[Channel(0, "pipe", "in", "p:1", "no")],
                    parent={"pid": 1, "name": "init", "role": "adopter", "host": None},
                    private_channels=False, stdin_kind="pipe", evidence=["parent-gone"],
                    members=[member])
    row = server.to_dict()
    assert list(row) == PS_ROW
    parts = {"what": row["what"], "parent": row["parent"], "stdin": row["stdin"],
             "channel": row["channels"][0], "member": row["members"][0]}
    assert {k: list(v) for k, v in parts.items()} == PS_PARTS
    doc = ScanResult([server], 1, 0, [], [], 0.1).to_dict()
    assert list(doc["totals"]) == TOTALS
    for typ, keys in ((record.ServerRow, PS_ROW), (record.WhatRow, PS_PARTS["what"]),
                      (record.Parent, PS_PARTS["parent"]), (record.StdinRow, PS_PARTS["stdin"]),
                      (record.ChannelRow, PS_PARTS["channel"]),
                      (record.MemberRow, PS_PARTS["member"]), (record.Totals, TOTALS),
                      (record.ScanDocument, list(doc))):
        assert list(get_type_hints(typ)) == keys, typ.__name__


def test_a_survey_and_a_lab_row_keep_their_keys_and_the_survey_records_say_them() -> None:
    from typing import get_type_hints

    from mcp_tether.lab.cli import _json_row
    from mcp_tether.probe import ScenarioResult
    from mcp_tether.survey import ServerResult
    from mcp_tether.survey import records as survey_record

    assert list(ServerResult(label="x", spec="npm:x").to_dict()) == SURVEY_ROW
    assert list(get_type_hints(survey_record.SurveyRow)) == SURVEY_ROW
    assert list(get_type_hints(survey_record.FailureRow)) == SURVEY_FAILURE
    assert list(get_type_hints(survey_record.RunRow)) == SURVEY_RUN
    r = ScenarioResult(scenario="exit", host_style="node", verdict="exited", passed=True,
                       exit_ms=1.0, rung=None, exit_status=0, block="reference")
    assert list(_json_row(r)) == LAB_ROW
