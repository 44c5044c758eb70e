"""Slower, not broken, under load: the handshake wait follows the
server's own progress, the lab retries a row that could not run, and no summary states
a result for rows that did not run."""

from __future__ import annotations

import io
import sys
from typing import Any

import pytest

from mcp_tether.probe import ProbeOptions, ScenarioResult, probe
from mcp_tether.proc import ProcessId
from mcp_tether.proc.progress import Look, look, moved

PY = [sys.executable, "-S"]
FAST = {"grace": 0.3, "term_grace": 0.3, "window": 1.0}

# Busy (a CPU loop, by the wall clock) for BUSY seconds before it reads stdin: a server
# importing its SDK on a loaded machine. Then a minimal MCP server.
BUSY_THEN_SERVE = r"""
import json, sys, time
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    pass
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {},
         "serverInfo": {"name": "busy", "version": "0"}} if m["method"] == "initialize" else {}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"""


@pytest.mark.linux
def test_a_server_busy_longer_than_the_ready_timeout_is_awaited_not_given_up() -> None:
    """1. busy 1.5 s before reading stdin, --ready-timeout 0.4; 2. it still gets its
    handshake and its verdict (the fixed wait said "no answer within 0.4 s")."""
    report = probe([*PY, "-c", BUSY_THEN_SERVE, "1.5"],
                   ProbeOptions(scenarios=("close",), ready_timeout=0.4, **FAST))
    (r,) = report.results
    assert r.verdict == "exited", r.detail


@pytest.mark.linux
def test_an_idle_silent_server_is_given_up_after_the_ready_timeout_a_busy_one_at_the_ceiling(
) -> None:
    """`sleep` never answers and does nothing: idle for --ready-timeout, given up; a
    server spinning forever is given up at the ceiling (6x), and the reason says which."""
    idle = probe(["sleep", "60"], ProbeOptions(scenarios=("exit",), ready_timeout=0.3, **FAST))
    busy = probe([*PY, "-c", "while True: pass"],
                 ProbeOptions(scenarios=("exit",), ready_timeout=0.3, **FAST))
    assert idle.results[0].verdict == "error"
    assert "idle and silent for 0.3 s" in idle.results[0].detail
    assert busy.results[0].verdict == "error"
    assert "still working" in busy.results[0].detail and "6 x" in busy.results[0].detail


def test_progress_is_cpu_members_or_a_runnable_member_and_unknown_never_extends() -> None:
    a, b = ProcessId(10, 1.0), ProcessId(11, 2.0)
    idle = Look(1.0, frozenset({a}), False)
    assert moved(idle, Look(1.0, frozenset({a}), False)) is False
    assert moved(idle, Look(1.005, frozenset({a}), False)) is False  # timer noise
    assert moved(idle, Look(1.5, frozenset({a}), False)) is True
    assert moved(idle, Look(1.0, frozenset({a, b}), False)) is True
    assert moved(idle, Look(1.0, frozenset({a}), True)) is True
    assert moved(None, idle) is None and moved(idle, None) is None


@pytest.mark.linux
def test_a_look_sees_a_busy_child_and_not_the_excluded_parent() -> None:
    import os
    import subprocess

    p = subprocess.Popen([*PY, "-c", "while True: pass"])
    try:
        first = look(os.getpid())
        assert first is not None and p.pid in {m.pid for m in first.members}
        second = look(os.getpid(), frozenset((p.pid,)))
        assert second is not None and p.pid not in {m.pid for m in second.members}
    finally:
        p.kill()
        p.wait()


def _res(label: str, scenario: str, verdict: str, detail: str = "") -> ScenarioResult:
    r = ScenarioResult(scenario=scenario, host_style="python", verdict=verdict,
                       passed=verdict in ("exited", "terminated"), exit_ms=None, rung=None,
                       exit_status=None, label=label, detail=detail)
    r.block = "python"  # type: ignore[attr-defined]  # as run_lab sets it
    return r


def test_a_server_with_a_row_that_did_not_run_gets_no_level_and_the_block_no_takeaway() -> None:
    """"python fixed: none" was printed for a server whose rows never ran."""
    from mcp_tether.lab import server_levels
    from mcp_tether.report.lab_summary import render_summary

    rows = [
        _res("P19 python fixed", "close", "exited"),
        _res("P20 python fixed", "exit", "error", "no answer to initialize"),
        _res("P21 python fixed", "crash", "exited"),
    ]
    levels = server_levels(rows)
    assert levels == {"python fixed [python]": "not measured (1 of 3 rows could not run)"}
    out = io.StringIO()
    render_summary(rows, ("python",), levels, out=out)
    text = out.getvalue()
    assert "takeaway: not stated, 1 of 3 rows could not run" in text
    assert "P20 python fixed exit: could not run: no answer to initialize" in text
    assert "keeps a Python server alive" not in text  # the block's usual takeaway


def test_the_lab_runs_a_row_that_could_not_run_once_more_alone(monkeypatch: Any) -> None:
    """Scheduling only (the runner is faked): the errored row is run again by itself, with
    the lab's --ready-timeout, and its second result stands, saying so."""
    import mcp_tether.lab as lab
    from mcp_tether.lab import run_lab

    calls: list[tuple[int, int | None, float]] = []

    def fake_run_specs(specs: list[Any], *, jobs: int | None = None, **_: Any) -> list[Any]:
        calls.append((len(specs), jobs, specs[0].ready_timeout))
        out = []
        for i, s in enumerate(specs):
            first_try = len(calls) == 1
            verdict = "error" if first_try and i == 1 else "exited"
            out.append({"scenario": s.scenario, "host_style": s.host_style,
                        "verdict": verdict, "passed": verdict == "exited", "exit_ms": None,
                        "rung": None, "exit_status": None, "survivors": [], "warnings": [],
                        "detail": "no answer to initialize" if verdict == "error" else ""})
        return out

    monkeypatch.setattr(lab, "run_specs", fake_run_specs)  # the name the lab calls
    results = run_lab(("python",), ready_timeout=42.0, quiet=True)
    assert calls[0][0] == 21 and calls[1:] == [(1, 1, 42.0)]
    assert [r.verdict for r in results] == ["exited"] * 21
    assert "run again alone" in results[1].warnings[-1]
    assert all(c[2] == 42.0 for c in calls)


# Exits on stdin EOF after CPU_AT_EXIT seconds of CPU work, pinned to one CPU (argv[1]).
CPU_BOUND_EXIT = r"""
import json, os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {},
         "serverInfo": {"name": "cpu", "version": "0"}} if m["method"] == "initialize" else {}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
t = time.process_time()
while time.process_time() - t < float(sys.argv[2]):
    pass
"""


@pytest.mark.linux
@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["exit", "close"])
def test_a_server_starved_of_cpu_after_eof_is_judged_on_its_own_time(scenario: str) -> None:
    """1. seven busy loops pinned to the server's CPU; 2. the server needs 0.1 s of CPU to
    exit after EOF, the window and the ladder's rungs are 0.5 s; 3. the wall time it takes
    is mostly waiting for the CPU: the window (exit) and the rung (close) count that wait,
    so it is `exited` (wall-clock ones called it `lingered` / `terminated`)."""
    import os
    import subprocess

    cpu = min(os.sched_getaffinity(0))
    burn = f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"
    burners = [subprocess.Popen([*PY, "-c", burn]) for _ in range(7)]
    try:
        report = probe([*PY, "-c", CPU_BOUND_EXIT, str(cpu), "0.1"],
                       ProbeOptions(scenarios=(scenario,), window=0.5, horizon=10.0,
                                    grace=0.5, term_grace=0.5, host_style="python"))
    finally:
        for b in burners:
            b.kill()  # our own unreaped children: the pid is still theirs
            b.wait()
    (r,) = report.results
    assert r.verdict == "exited", (r.detail, r.warnings)
    if scenario == "exit" and r.exit_ms is not None and r.exit_ms > 500.0:
        # past the nominal window, so only the CPU-wait credit kept it in: it is said. (A
        # server in a scheduling group of its own, autogroup, may get its CPU in time.)
        assert any("waited that long for a CPU" in w for w in r.warnings), r.warnings


def test_the_suites_hang_guard_scales_with_the_machines_load(request: Any) -> None:
    """pytest-timeout's 120 s (set-up included) is multiplied by the load per CPU when a
    test starts (tests/conftest.py), never lowered: a loaded runner is slower, not hung."""
    marker = request.node.get_closest_marker("timeout")
    assert marker is not None and 120.0 <= marker.args[0] <= 1200.0
