"""Scenarios that cannot share a machine are re-run one at a time, and said so.

A server that binds a fixed port breaks its sibling scenarios when they run in parallel
(the default): one copy finds the address in use, or kills the copy holding it. The
probe re-runs those failures alone; the verdicts are the server's own, and the output
says that scenarios were re-run and suggests `--jobs 1` when that changed a verdict.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from mcp_tether.cli import main
from mcp_tether.probe.interfere import interference

pytestmark = pytest.mark.linux
SERVER = str(Path(__file__).parent / "servers" / "fixed_port.py")
FAST = ["--window", "1", "--idle", "0.3", "--grace", "0.3", "--term-grace", "0.3"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("how", ["address-in-use", "kills-the-holder"])
def test_a_fixed_port_server_passes_with_the_default_jobs_its_scenarios_rerun_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    """1. Every scenario at once against copies of one fixed-port server; 2. the ones that
    clashed are re-run alone (the server has no parent watch: inherited-writer, a robust
    warning, is its own failure): the probe passes the spec level; 3. the output says they were
    re-run one at a time, and suggests --jobs 1 since that changed their verdicts."""
    extra = ["--kill"] if how == "kills-the-holder" else []
    argv = [sys.executable, SERVER, str(_free_port()), str(tmp_path / "pid"), *extra]
    code = main(["probe", *FAST, "--", *argv])
    out, err = capsys.readouterr()
    assert code == 0, (out, err)
    assert "scenario(s) one at a time" in err and "--jobs 1" in err, err
    code = main(["probe", "--json", *FAST, "--", *argv])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["passed"] is True
    again = [r for r in doc["results"] if r.get("rerun")]
    assert again and doc["rerun_alone"] == [r["scenario"] for r in again]
    assert all(r["rerun"]["changed"] for r in again)  # alone: the server's own result
    assert doc["suggest_jobs_1"] is True


def test_only_failures_with_evidence_of_interference_are_rerun() -> None:
    """Pure: a pass, or a failure without address-in-use words or a foreign signal, is not
    interference; a signal the probe sent, or SIGPIPE, is not foreign; a "pass" by a
    server SIGKILLed by another is."""
    ok = {"passed": True, "verdict": "exited", "stderr_tail": "EADDRINUSE"}
    plain = {"passed": False, "verdict": "orphaned", "stderr_tail": "", "exit_status": None}
    ours = {"passed": False, "verdict": "killed", "exit_status": 137,
            "events": [{"what": "sigkill", "pid": 5}]}
    foreign = {"passed": False, "verdict": "early-exit", "exit_status": 137, "events": []}
    sigpipe = {"passed": True, "verdict": "exited", "exit_status": 141, "events": []}
    killed_yet_passed = {"passed": True, "verdict": "exited", "exit_status": 137}
    port = {"passed": False, "verdict": "early-exit", "exit_status": 1,
            "stderr_tail": "OSError: [Errno 98] Address already in use"}
    assert interference(ok) is None and interference(plain) is None
    assert interference(ours) is None and interference(sigpipe) is None
    assert "SIGKILL" in str(interference(killed_yet_passed))
    assert "SIGKILL" in str(interference(foreign))
    assert "address" in str(interference(port)).lower()
