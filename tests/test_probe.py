"""The probe against real processes: small stdlib servers with known behaviour."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_tether.errors import CommandNotExecutable, CommandNotFound
from mcp_tether.probe import ProbeOptions, probe
from mcp_tether.probe.verdict import Facts, Rung, Survivor, decide
from mcp_tether.proc import descendants, identify, signal_process
from polling import until
from probe_helpers import FAST, MINI, PY

pytestmark = pytest.mark.linux


def verdicts(report) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {r.scenario: r.verdict for r in report.results}


def test_a_server_that_exits_on_eof_passes_every_scenario_but_the_parent_death_one() -> None:
    """1. node host style, all scenarios; 2. only inherited-writer needs a parent watch."""
    report = probe([*PY, MINI], ProbeOptions(**FAST))
    v = verdicts(report)
    assert v == {
        "close": "exited", "exit": "exited", "crash": "exited", "devnull": "exited",
        "idle": "alive", "half-close": "exited", "sigterm": "exited", "sigterm-pid": "exited",
        "sigint": "exited",
        "inherited-writer": "orphaned",
    }
    by = {r.scenario: r for r in report.results}
    assert by["close"].rung == "eof" and by["close"].exit_status == 0
    assert by["sigterm"].exit_status == 128 + signal.SIGTERM
    assert all(r.exit_ms is not None and r.exit_ms >= 0 for r in report.results
               if r.verdict == "exited")
    (survivor,) = by["inherited-writer"].survivors
    assert "mini.py" in survivor.cmdline


def test_a_lingering_thread_is_terminated_on_close_and_orphaned_on_exit() -> None:
    report = probe([*PY, MINI, "--thread"],
                   ProbeOptions(host_style="python", scenarios=("close", "exit", "crash"), **FAST))
    v = verdicts(report)
    assert v == {"close": "terminated", "exit": "orphaned", "crash": "orphaned"}
    close = report.results[0]
    assert close.rung == "sigterm" and close.exit_status == 143
    assert close.exit_ms is not None and close.exit_ms >= FAST["grace"] * 1000


def test_a_server_that_ignores_sigterm_is_killed_at_the_last_rung() -> None:
    report = probe([*PY, MINI, "--thread", "--ignore-term"],
                   ProbeOptions(scenarios=("close",), **FAST))
    (r,) = report.results
    assert (r.verdict, r.rung, r.exit_status) == ("killed", "sigkill", 137)


def test_the_stateless_handshake_is_used_when_initialize_is_refused() -> None:
    report = probe([*PY, MINI, "--stateless"], ProbeOptions(scenarios=("close",), **FAST))
    assert verdicts(report) == {"close": "exited"}


def test_a_call_in_flight_is_part_of_the_scenario() -> None:
    """--call sends a tool call right before the trigger: a server whose worker holds
    the process until the call ends outlives a short window; without it, it exits. (The
    call outlasts the window and the horizon by far, a loaded machine's credit included:
    the probe's clean-up ends it.)"""
    opts = {**FAST, "window": 0.5}
    busy = probe([*PY, MINI], ProbeOptions(scenarios=("exit",), call=("sleep", {"seconds": 60}),
                                           **opts))
    assert verdicts(busy) == {"exit": "orphaned"}
    idle = probe([*PY, MINI], ProbeOptions(scenarios=("exit",), **opts))
    assert verdicts(idle) == {"exit": "exited"}


def test_stdout_noise_is_a_warning_not_a_failure() -> None:
    report = probe([*PY, MINI, "--garbage"], ProbeOptions(scenarios=("close",), **FAST))
    (r,) = report.results
    assert r.verdict == "exited"
    assert any(w.startswith("stdout-noise") for w in r.warnings)


@pytest.mark.parametrize(
    "argv, expect",
    [
        (["cat"], "no answer to initialize"),
        (["sleep", "100"], "no answer to initialize"),
        ([sys.executable, "-c", "print('garbage', flush=True); import time; time.sleep(100)"],
         "stdout-noise"),
        ([sys.executable, "-c", "import os, time; os.close(1); time.sleep(100)"],
         "closed its stdout"),
    ],
)
def test_a_program_that_is_not_an_mcp_server_gets_an_error_with_the_reason(
    argv: list[str], expect: str
) -> None:
    report = probe(argv, ProbeOptions(scenarios=("exit",), ready_timeout=0.5, window=0.5))
    (r,) = report.results
    assert r.verdict == "error" and expect in r.detail


@pytest.mark.requires_linux_backend(
    "probe/client.py opens a pidfd on its server itself, late: a server that exits at once "
    "can be reaped first (an error, not early-exit); the client needs a portable exit watch")
def test_a_server_that_exits_at_once_is_an_early_exit() -> None:
    report = probe([sys.executable, "-c", "import sys; sys.exit(3)"],
                   ProbeOptions(scenarios=("close", "crash"), ready_timeout=2))
    assert verdicts(report) == {"close": "early-exit", "crash": "early-exit"}
    assert all(r.exit_status in (3, None) for r in report.results)


def test_missing_and_non_executable_commands_are_refused_before_anything_runs(
    tmp_path: Path,
) -> None:
    with pytest.raises(CommandNotFound):
        probe(["no-such-command-here"])
    f = tmp_path / "server.sh"
    f.write_text("#!/bin/sh\n")
    with pytest.raises(CommandNotExecutable):
        probe([str(f)])


def test_cli_exit_codes_and_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    from mcp_tether.cli import main

    assert main(["probe", "--", "no-such-command-here"]) == 127
    assert "command not found" in capsys.readouterr().err
    assert main(["probe"]) == 2
    assert main(["probe", "-s", "nope", "--", "cat"]) == 2
    code = main(["probe", "--json", "-s", "close", "--window", "1", "--", *PY, MINI])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["passed"] is True
    (r,) = out["results"]
    for key in ("scenario", "host_style", "verdict", "exit_ms", "rung", "exit_status",
                "survivors", "warnings"):
        assert key in r


def test_junit_output_marks_failures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from xml.etree import ElementTree as ET

    from mcp_tether.cli import main

    path = tmp_path / "probe.xml"
    code = main(["probe", "--junit", str(path), "--host-style", "python", "-s", "exit",
                 "--window", "0.5", "--", *PY, MINI, "--thread"])
    capsys.readouterr()
    assert code == 1
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_an_interrupted_probe_leaves_nothing_running(sig: int) -> None:
    """1. start the probe CLI on a lingering server; 2. signal it once the servers run;
    3. it exits 128+N and (checked by the autouse fixture) nothing is left."""
    p = subprocess.Popen(
        [sys.executable, "-m", "mcp_tether", "probe", "--", *PY, MINI, "--thread"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        # A child started from a background shell may inherit SIGINT ignored; a user's
        # Ctrl-C reaches a foreground probe with the default disposition.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    ident = identify(p.pid)
    assert ident is not None

    def servers_up() -> bool:  # keepers, clients and servers are up
        assert p.poll() is None, f"the probe exited {p.returncode} before its servers ran"
        return len([d for d in descendants(p.pid) if d.comm.startswith("python")]) >= 15

    try:
        until(servers_up, "15 python processes under the probe", 20)
    except AssertionError:
        p.kill()  # our own child: its keepers see it go and end their trees
        p.communicate()
        raise
    assert signal_process(ident, sig) == "sent"
    _, err = p.communicate(timeout=30)
    assert p.returncode == 128 + sig, err
    assert b"nothing left running" in err


def test_verdicts_follow_the_rungs() -> None:
    rungs = [Rung("close-stdin", 10.0, "timeout"), Rung("sigterm", 12.0, "timeout"),
             Rung("sigkill", 14.0, "exited")]
    f = Facts("close", judge="ladder", trigger=10.0, gone_at=10.01, rungs=rungs)
    assert decide(f) == ("exited", "eof", 10.0)
    f.gone_at = 12.002
    assert decide(f)[:2] == ("terminated", "sigterm")
    f.gone_at = 14.5
    assert decide(f)[:2] == ("killed", "sigkill")
    f.survivors = [Survivor(1)]
    assert decide(f)[0] == "orphaned"
    assert decide(Facts("exit", trigger=1.0, gone_at=1.25, trigger_what="eof")) == (
        "exited", "eof", 250.0)
    assert decide(Facts("idle", judge="answer", answered=True))[0] == "alive"
    assert decide(Facts("crash", error="boom"))[0] == "error"
    assert os.getpid() > 0
