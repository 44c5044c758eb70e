"""The probe's exactness: host styles as their hosts behave, its own death,
races, bad input, huge lines, large environments."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_tether.cli import main
from mcp_tether.probe import ProbeOptions, probe
from mcp_tether.proc import cmdline, identify, snapshot
from polling import until
from probe_helpers import FAST, MINI, PY

pytestmark = pytest.mark.linux

# Writes one 40 MB line of noise before anything else, then serves like mini.py.
HUGE_LINE = r"""
import json, sys
out = sys.stdout.buffer
out.write(b"x" * (40 << 20) + b"\n")
out.flush()
for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    if "id" in msg and "method" in msg:
        out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {}}).encode()
                  + b"\n")
        out.flush()
"""


def _alive_with(marker: str) -> list[int]:
    return [pid for pid in snapshot() if marker in " ".join(cmdline(pid))]


def test_a_large_environment_reaches_the_server_through_the_keepers_stdin() -> None:
    """140 KB of environment: the spec goes through the keeper's stdin, as in its argv
    it would exceed the kernel's argument limit (E2BIG)."""
    env = {f"MCP_TETHER_BIG_{i}": "v" * 14_000 for i in range(10)}
    report = probe([*PY, MINI], ProbeOptions(scenarios=("close",), env=env, **FAST))
    (r,) = report.results
    assert r.verdict == "exited", r.detail


@pytest.mark.parametrize("bad", ["nan", "inf", "-1", "-inf"])
@pytest.mark.parametrize("command", ["probe", "lab"])
def test_non_finite_or_negative_durations_are_usage_errors(
    command: str, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    tail = ["--", *PY, MINI] if command == "probe" else []
    assert main([command, f"--window={bad}", *tail]) == 2
    assert "must be finite and >= 0" in capsys.readouterr().err


def test_a_probe_option_of_nan_is_refused_by_the_api_too() -> None:
    from mcp_tether.errors import UsageError

    with pytest.raises(UsageError, match="--idle must be a finite number"):
        probe([*PY, MINI], ProbeOptions(idle=float("nan")))


def test_an_empty_scenario_list_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "-s", ",,", "--", *PY, MINI]) == 2
    assert "names no scenario" in capsys.readouterr().err


def test_a_missing_cwd_is_reported_as_the_directory(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["probe", "--cwd", "/nonexistent-dir", "--", *PY, MINI]) == 2
    err = capsys.readouterr().err
    assert "/nonexistent-dir" in err and "directory" in err and "not found" not in err


def test_a_script_without_a_shebang_exits_126_like_the_guard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "noshebang"
    script.write_text("echo hello\n")
    script.chmod(0o755)
    assert main(["probe", "-s", "close", "--", str(script)]) == 126
    capsys.readouterr()


def test_an_unwritable_junit_path_prints_the_results_first_then_fails(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["probe", "--json", "--junit", "/nonexistent-dir/out.xml", "-s", "exit",
                 "--window", "1", "--", *PY, MINI])
    captured = capsys.readouterr()
    assert code == 2
    assert json.loads(captured.out)["results"][0]["verdict"] == "exited"
    assert "cannot write --junit /nonexistent-dir/out.xml" in captured.err


def test_an_unwritable_html_path_still_writes_the_markdown_and_junit_asked_for(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    """One line for the file that failed, exit 2, and the others are written."""
    md, xml = tmp_path / "r.md", tmp_path / "r.xml"
    code = main(["probe", "--json", "--html", "/nonexistent-dir/r.html", "--markdown", str(md),
                 "--junit", str(xml), "-s", "exit", "--window", "1", "--", *PY, MINI])
    err = capsys.readouterr().err
    assert code == 2
    assert "mcp-tether probe: --html /nonexistent-dir/r.html: No such file" in err
    assert md.read_text().strip() and xml.read_text().startswith("<?xml")


def test_the_node_style_destroys_the_stdio_when_the_wrapper_dies() -> None:
    """1. `sh -c 'server; true'` gets SIGTERM (node style: the direct child only); 2. the
    client destroys the stdio it gave sh, so the server sees EOF and exits; 3. the python
    style keeps its pipes (its ladder has not ended): a SIGINT sent to sh's pid alone
    leaves the server (the python style's SIGTERM would reach it: it signals the group)."""
    wrapper = ["sh", "-c", f"{sys.executable} -S {MINI}; true"]
    node = probe(wrapper, ProbeOptions(scenarios=("sigterm",), host_style="node",
                                       **{**FAST, "window": 4.0}))  # room for a loaded CI
    assert node.results[0].verdict == "exited", node.results[0].detail
    py = probe(wrapper, ProbeOptions(scenarios=("sigint",), host_style="python",
                                     window=0.5, horizon=0.2))
    assert py.results[0].verdict == "orphaned", py.results[0].detail


def test_escalation_says_who_was_alive_what_the_probe_did_and_what_outlived_it() -> None:
    report = probe([*PY, MINI, "--thread", "--ignore-term"],
                   ProbeOptions(scenarios=("sigterm",), **FAST))
    (r,) = report.results
    assert r.verdict == "killed"
    assert "alive then: pid" in r.detail and "SIGKILLed the server" in r.detail
    assert "nothing outlived that" in r.detail


def test_a_sigkilled_probe_leaves_nothing_running(tmp_path: Path) -> None:
    """1. a probe on a server that ignores EOF; 2. SIGKILL the probe in its window;
    3. its keepers notice (EOF on their stdin, PDEATHSIG) and end their trees."""
    marker = f"--marker-{tmp_path.name}"
    p = subprocess.Popen(
        [sys.executable, "-m", "mcp_tether", "probe", "-s", "exit,crash", "--window", "60",
         "--", *PY, MINI, "--thread", marker],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    ident = identify(p.pid)
    assert ident is not None
    until(lambda: len(_alive_with(marker)) >= 2, f"two processes with {marker} in argv", 30)
    p.kill()  # our own unreaped child
    p.wait()
    try:
        until(lambda: not _alive_with(marker), f"every process with {marker} to end", 15)
    except AssertionError as e:
        raise AssertionError(f"{e}; still running: {_alive_with(marker)}") from None


def test_a_40_mb_line_is_read_in_linear_time_and_taken_as_noise(tmp_path: Path) -> None:
    script = tmp_path / "huge.py"
    script.write_text(HUGE_LINE)
    # A generous ready-timeout: the quadratic reader needed 9 s of CPU on this line.
    opts = {**FAST, "ready_timeout": 30.0}
    report = probe([*PY, str(script)], ProbeOptions(scenarios=("close",), **opts))
    (r,) = report.results
    assert r.verdict == "exited", r.detail
    assert any(w.startswith("stdout-noise") for w in r.warnings)
    assert r.probe_cpu_ms is not None


def test_a_correct_server_never_fails_half_close_by_a_race() -> None:
    """The trigger is recorded before it is pulled; 12 at once against a fast server."""
    report = probe([*PY, MINI], ProbeOptions(scenarios=("half-close",) * 12, **FAST))
    assert [r.verdict for r in report.results] == ["exited"] * 12


def test_devnull_allows_the_start_up_others_measured_not_the_ready_timeout() -> None:
    from mcp_tether.probe.scenarios import get
    from mcp_tether.probe.spec import Spec

    class FakeKeeper:
        def __init__(self, startup: float | None) -> None:
            self.spec = Spec(["x"], "devnull", window=2.0, ready_timeout=10.0, startup=startup)

        def live_members(self) -> list[Any]:
            return []

    devnull = get("devnull")
    assert devnull.window(FakeKeeper(None), 100.0)() == 112.0  # type: ignore[arg-type]
    assert devnull.window(FakeKeeper(0.25), 100.0)() == pytest.approx(103.0)  # type: ignore[arg-type]


def test_devnull_waits_while_the_server_is_still_starting(tmp_path: Path) -> None:
    """The measured start-up says 0.5 s, this run's server burns CPU for 1.5 s before it
    reads stdin: it is still starting (state R), so the allowance grows; then it exits
    at EOF and passes."""
    script = tmp_path / "slow_start.py"
    script.write_text("import sys, time\nend = time.monotonic() + 1.5\n"
                      "while time.monotonic() < end:\n    pass\nsys.stdin.read()\n")
    from mcp_tether.probe.runner import run_specs
    from mcp_tether.probe.spec import Spec

    spec = Spec([*PY, str(script)], "devnull", window=0.3, ready_timeout=8.0, startup=0.0)
    (r,) = run_specs([spec])
    assert r["verdict"] == "exited", r["detail"]


def test_our_options_after_a_command_without_dashes_are_refused_with_a_hint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`probe node server.mjs -s close` would run the server with `-s close`: exit 2, hint."""
    from mcp_tether.cli import main

    assert main(["probe", sys.executable, "server.py", "-s", "close"]) == 2
    err = capsys.readouterr().err
    assert "-s" in err and "`--`" in err
