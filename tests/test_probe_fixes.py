"""Under the probe's table: the whole diagnosis and the remedy of each failure, a remedy
shared by several scenarios printed once."""

from __future__ import annotations

import io
import sys

import pytest

from mcp_tether.cli import main
from mcp_tether.report.text import render_fixes


def test_scenarios_sharing_a_remedy_are_listed_together_and_the_remedy_printed_once() -> None:
    fix = "In the Python server call `mcp_tether.run(mcp)` instead of `mcp.run()`"
    rows = [
        {"scenario": "exit", "diagnosis": "Does not exit on stdin EOF. Thread flusher.",
         "remedy": fix},
        {"scenario": "crash", "diagnosis": "Does not exit on stdin EOF. Thread flusher.",
         "remedy": fix},
        {"scenario": "sigterm", "diagnosis": "", "remedy": ""},  # passed: nothing to say
        {"scenario": "sigint", "diagnosis": "Does not exit on SIGINT.", "remedy": "Add a handler"},
    ]
    out = io.StringIO()
    render_fixes(rows, out)
    text = out.getvalue()
    assert text.count("mcp_tether.run(mcp)") == 1
    assert "- exit, crash: Does not exit on stdin EOF. Thread flusher." in text
    assert "- sigint: Does not exit on SIGINT." in text and "fix: Add a handler" in text
    assert "sigterm" not in text


def test_a_scenario_that_failed_otherwise_is_never_shown_closes_needed_sigterm() -> None:
    """Close (terminated) and exit (orphaned) share a remedy; each keeps its own
    diagnosis, the remedy is printed once."""
    fix = "In the Python server call `mcp_tether.run(mcp)` instead of `mcp.run()`"
    rows = [
        {"scenario": "close", "remedy": fix,
         "diagnosis": "Does not exit on stdin EOF: it needed SIGTERM, 2003 ms after EOF."},
        {"scenario": "exit", "remedy": fix,
         "diagnosis": "Does not exit on stdin EOF: its tree outlived the window."},
    ]
    out = io.StringIO()
    render_fixes(rows, out)
    text = out.getvalue()
    assert "- close: Does not exit on stdin EOF: it needed SIGTERM" in text
    assert "- exit: Does not exit on stdin EOF: its tree outlived the window." in text
    assert text.count("needed SIGTERM") == 1 and text.count("mcp_tether.run(mcp)") == 1


def test_one_process_keeps_one_name_in_every_sentence_of_a_diagnosis() -> None:
    """A wrapper's child first seen before its exec (`sh -c ...`) and alive after
    it (`node srv.js`) is named by the command it runs, in the wrapper sentence as in its
    own."""
    from mcp_tether.probe.diagnose import diagnose

    r = {"scenario": "sigterm", "verdict": "orphaned", "passed": False, "events": [
        {"what": "spawn", "pid": 10, "role": "server", "cmd": "sh -c node srv.js", "t_ms": 0},
        {"what": "seen", "pid": 11, "ppid": 10, "cmd": "sh -c node srv.js", "t_ms": 5},
        {"what": "sigterm", "pid": 10, "t_ms": 100},
        {"what": "exit", "pid": 10, "t_ms": 110, "status": 143},
        {"what": "window-end", "t_ms": 1100}],
        "survivors": [{"pid": 11, "ppid": 1, "cmdline": "node srv.js"}]}
    text = str(diagnose(r, ["sh", "-c", "node srv.js"]))
    assert "descendant 11 (node srv.js)" in text and "Pid 11 (node srv.js)" in text, text
    assert text.count("sh -c node srv.js") == 1, text  # the wrapper itself, once


def test_nothing_is_printed_when_every_scenario_passed() -> None:
    out = io.StringIO()
    render_fixes([{"scenario": "close", "diagnosis": "", "remedy": ""}], out)
    assert out.getvalue() == ""


def test_the_probe_prints_the_whole_diagnosis_under_its_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["probe", "-s", "close", "--", sys.executable, "-c",
                 "import sys; print('no token. Set TOKEN and retry', file=sys.stderr); "
                 "sys.exit(4)"])
    out = capsys.readouterr().out
    assert code == 1
    why = out.split("why, and how to fix it:", 1)[1]
    assert "close: Exited during start-up (status 4)" in why
    assert "Set TOKEN and retry" in why  # past the first sentence, which the table's line keeps


NO_TOOLS = r'''
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        out = {"result": {"protocolVersion": msg["params"]["protocolVersion"],
                          "capabilities": {"prompts": {}},
                          "serverInfo": {"name": "no-tools", "version": "0"}}}
    elif msg["method"] == "ping":
        out = {"result": {}}
    else:
        out = {"error": {"code": -32601, "message": "Method not found"}}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **out}), flush=True)
'''


def test_a_server_that_declares_no_tools_is_not_warned_about_tools_list() -> None:
    from mcp_tether.probe import ProbeOptions, probe

    report = probe([sys.executable, "-c", NO_TOOLS], ProbeOptions(scenarios=("close",)))
    (r,) = report.results
    assert r.verdict == "exited", r.detail
    assert not [w for w in r.warnings if "answered with an error" in w], r.warnings
