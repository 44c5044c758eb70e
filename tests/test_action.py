"""The composite GitHub Action (action.yml) runs its steps as a runner would.

A small runner reads action.yml, substitutes `${{ inputs.* }}` and
`${{ steps.<id>.outputs.* }}`, and runs each step's script with `bash --noprofile --norc
-eo pipefail` (GitHub's `shell: bash`), with GITHUB_ACTION_PATH, GITHUB_OUTPUT,
GITHUB_STEP_SUMMARY (a fake file) and RUNNER_TEMP set. Three servers: one that passes,
one that leaks, a command that does not exist. The JUnit file and the job summary exist
in all three, and the step's status is the probe's.

The install step is run with this interpreter, which imports mcp-tether from this
checkout (PYTHONPATH): its reuse branch. Its pip branch (a fresh venv and `pip install`
of the checkout) downloads the dependencies, minutes on a slow network: it runs only with
MCP_TETHER_ACTION_PIP=1.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SERVERS = REPO / "tests" / "servers"


def run_action(inputs: dict[str, str], tmp: Path, python: str = sys.executable) -> tuple[int, str]:
    """Run every step of action.yml; (the failing step's status or 0, the job summary)."""
    spec = yaml.safe_load((REPO / "action.yml").read_text())
    values = {k: str(v.get("default", "")) for k, v in spec["inputs"].items()}
    values.update(python=python, **inputs)
    missing = [k for k, v in spec["inputs"].items() if v.get("required") and not values.get(k)]
    assert not missing, missing
    outputs: dict[str, dict[str, str]] = {}
    summary = tmp / "step-summary.md"
    summary.write_text("")

    def expand(text: str) -> str:
        def one(m: re.Match[str]) -> str:
            expr = m.group(1).strip()
            if expr.startswith("inputs."):
                return values[expr.split(".", 1)[1]]
            step, _, key = expr.removeprefix("steps.").partition(".outputs.")
            return outputs.get(step, {}).get(key, "")
        return re.sub(r"\$\{\{(.*?)\}\}", one, text)

    env_base = {**os.environ, "GITHUB_ACTION_PATH": str(REPO), "RUNNER_TEMP": str(tmp),
                "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_WORKSPACE": str(tmp)}
    assert spec["runs"]["using"] == "composite"
    for i, step in enumerate(spec["runs"]["steps"]):
        assert step["shell"] == "bash"
        out_file = tmp / f"output-{i}"
        out_file.write_text("")
        env = {**env_base, "GITHUB_OUTPUT": str(out_file),
               **{k: expand(str(v)) for k, v in (step.get("env") or {}).items()}}
        cwd = tmp / expand(step.get("working-directory", "."))
        script = tmp / f"step-{i}.sh"
        script.write_text(expand(step["run"]))
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                              cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=600)
        assert "Traceback" not in proc.stderr, proc.stderr
        outputs[step.get("id", str(i))] = dict(
            ln.split("=", 1) for ln in out_file.read_text().splitlines() if "=" in ln)
        if proc.returncode != 0:
            return proc.returncode, summary.read_text()
    return 0, summary.read_text()


def _junit(tmp: Path) -> ET.Element:
    return ET.parse(tmp / "mcp-tether-junit.xml").getroot()


def test_the_action_passes_a_server_that_exits_on_eof(tmp_path: Path) -> None:
    status, summary = run_action({"command": f"{sys.executable} {SERVERS / 'mini.py'}",
                                  "scenarios": "close,sigterm"}, tmp_path)
    assert status == 0, summary
    assert "**2/2 passed**" in summary and "exit status: **0**" in summary
    assert _junit(tmp_path).find(".//failure") is None


def test_the_action_fails_a_leaking_server_and_says_why_in_both_files(tmp_path: Path) -> None:
    status, summary = run_action({"command": f"{sys.executable} {SERVERS / 'named_thread.py'}",
                                  "scenarios": "close"}, tmp_path)
    assert status == 1
    assert "**Diagnosis.**" in summary and "**Remedy.**" in summary
    fail = _junit(tmp_path).find(".//failure")
    assert fail is not None and "Fix: " in (fail.get("message") or "")


def test_the_action_reports_a_missing_command_with_a_junit_file(tmp_path: Path) -> None:
    status, summary = run_action({"command": "no-such-mcp-server --stdio"}, tmp_path)
    assert status == 127
    assert "command not found" in summary and "exit status: **127**" in summary
    err = _junit(tmp_path).find(".//error")
    assert err is not None and "command not found" in (err.get("message") or "")


@pytest.mark.skipif(not os.environ.get("MCP_TETHER_ACTION_PIP"),
                    reason="pip-installs the checkout (network): MCP_TETHER_ACTION_PIP=1")
def test_the_action_installs_mcp_tether_from_its_own_checkout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pip branch: a Python without mcp-tether gets a venv with the checkout in it."""
    monkeypatch.delenv("PYTHONPATH", raising=False)
    status, summary = run_action({"command": f"{sys.executable} {SERVERS / 'mini.py'}",
                                  "scenarios": "close"}, tmp_path, python="python3")
    assert status == 0, summary
    assert (tmp_path / "mcp-tether-venv" / "bin" / "mcp-tether").exists()
