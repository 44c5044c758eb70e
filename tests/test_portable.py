"""What the portable backend (psutil + POSIX, macOS's lot) promises where Linux promises
more: `ps` and `reap` without a look at other processes' fds (docs/platforms.md).

These run under `MCP_TETHER_BACKEND=portable` (CI's second pass); under the Linux
backend the stronger promises are tested in test_scan*.py instead.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_tether import platform
from mcp_tether.proc import SAME, compare
from scan_lab import Lab, entry, lab_fixture, ps_json, run_cli

pytestmark = pytest.mark.skipif(platform.BACKEND == "linux",
                                reason="asserts the portable backend's weaker promises")


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Lab]:
    yield from lab_fixture(tmp_path, monkeypatch)


def test_a_leak_whose_stdin_cannot_be_seen_is_unknown_and_reap_ends_nothing(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. a client starts a server and is SIGKILLed (on Linux: leaked, and reaped);
    2. ps --json lists the orphan, never "leaked" nor "stdin without a writer";
    3. reap --yes --include guess ends nothing: the orphan and a bystander live on."""
    orphan = lab.pair().orphan()
    bystander = lab.popen([sys.executable, "-c", "import signal; signal.pause()"])
    doc = ps_json(capsys)
    e = entry(doc, orphan.pid)
    assert e is not None, doc
    assert e["state"] == "unknown" and "stdin-no-writer" not in e["evidence"], e
    assert e["stdin"]["writer"] != "no", e  # today "n/a": not seen, so not "no writer"
    rc, out, _ = run_cli(capsys, "reap", "--yes", "--include", "guess", "--json",
                         "--grace", "1")
    assert rc == 0, out
    assert json.loads(out)["results"] == []
    assert compare(orphan) == SAME and bystander.poll() is None
