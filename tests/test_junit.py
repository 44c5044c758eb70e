"""`probe --junit` is written in every outcome, and every failure's message says why and
what to change: CI dashboards show the diagnosis and the remedy, never an empty line."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from mcp_tether.probe.api import ScenarioResult
from mcp_tether.report.junit import failure_message, write_junit


def _probe(tmp_path: Path, *cmd: str) -> tuple[int, ET.Element]:
    junit = tmp_path / "out.xml"
    md = tmp_path / "out.md"
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_tether", "probe", "--junit", str(junit), "--markdown",
         str(md), "--", *cmd], stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120)
    assert "Traceback" not in proc.stderr
    assert md.exists() and md.read_text().strip()
    return proc.returncode, ET.parse(junit).getroot()


@pytest.mark.parametrize(("make", "code", "words"), [
    (lambda p: str(p / "no-such-server"), 127, "command not found"),
    (lambda p: (p / "plain.txt").write_text("x") and str(p / "plain.txt"), 126, "cannot execute"),
], ids=["missing", "not-executable"])
def test_a_command_that_cannot_start_still_gets_a_junit_file_with_the_reason(
        tmp_path: Path, make: Callable[[Path], str], code: int, words: str) -> None:
    """1. probe a missing / non-executable command; 2. exit 127 / 126 as before; 3. the
    JUnit file holds one errored case whose message says what and what to do."""
    rc, root = _probe(tmp_path, make(tmp_path))
    assert rc == code
    (case,) = root.iter("testcase")
    err = case.find("error")
    assert err is not None
    msg = err.get("message") or ""
    assert words in msg and f"exit {code}" in msg and "Fix: " in msg


def _result(**kw: object) -> ScenarioResult:
    base: dict[str, object] = dict(scenario="close", host_style="node", verdict="terminated",
                                   passed=False, exit_ms=2010.0, rung="sigterm",
                                   exit_status=143)
    base.update(kw)
    return ScenarioResult(**base)  # type: ignore[arg-type]


def test_a_failure_message_carries_the_diagnosis_and_the_remedy(tmp_path: Path) -> None:
    r = _result(diagnosis="Does not exit on stdin EOF: it needed SIGTERM.",
                remedy="In the Node server add `tether(server);`")
    path = tmp_path / "j.xml"
    write_junit(str(path), {"node s.js": [r]}, "spec")
    fail = ET.parse(path).getroot().find(".//failure")
    assert fail is not None
    msg = fail.get("message") or ""
    assert msg.startswith("terminated. Does not exit on stdin EOF")
    assert "Fix: In the Node server add `tether(server);`" in msg
    assert "Remedy: " in (fail.text or "")


def test_a_failure_without_a_diagnosis_still_says_its_verdict_and_detail() -> None:
    """Never `terminated: ` and nothing after it."""
    msg = failure_message(_result(detail="needed SIGTERM"))
    assert msg.rstrip(". :") != "terminated" and "SIGTERM" in msg


