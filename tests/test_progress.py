"""Long commands show progress on stderr: a live line on a terminal, one line per finished
item off it, nothing with --quiet; stdout is never touched."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import subprocess
import sys
import time

import pytest

from mcp_tether.cli import main
from mcp_tether.cliprogress import Progress
from probe_helpers import MINI, PY

pytestmark = [pytest.mark.linux]
# The probe runs here show progress, not a verdict: their server is tests/servers/mini.py
# (stdlib, milliseconds), not an SDK server (1 s of CPU each start).


def test_off_a_terminal_each_finished_item_is_one_line_with_its_count_and_time() -> None:
    """1. Two items expected; 2. each done() is one line `K/N after S s: ITEM: OUTCOME`."""
    now = [100.0]
    err = io.StringIO()
    with Progress("lab", stream=err, clock=lambda: now[0]) as p:
        p.expect(2)
        now[0] += 3.2
        p.done("E node timer exit", "orphaned")
        now[0] += 60
        p.done("F node timer crash", "orphaned")
        p.per_index(["E node timer exit"], expected=True)(0, {"verdict": "exited",
                                                              "rerun": {"alone": True}})
    assert err.getvalue().splitlines() == [
        "mcp-tether lab: 1/2 after 3 s: E node timer exit: orphaned",
        "mcp-tether lab: 2/2 after 63 s: F node timer crash: orphaned",
        "mcp-tether lab: run again alone after 63 s: E node timer exit: exited",
    ]


def test_quiet_progress_writes_nothing_and_never_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    """--quiet: nothing at all; without it, stderr only (the default stream)."""
    with Progress("survey", total=1, quiet=True) as p:
        p.done("npm:x", "ok")
    assert capsys.readouterr() == ("", "")
    with Progress("survey", total=1) as p:
        p.done("npm:x", "ok")
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("mcp-tether survey: 1/1 after ")


def test_probe_says_each_scenario_on_stderr_and_its_json_stays_one_document(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """1. `probe --json` of two scenarios: stdout is one JSON document, stderr has 1/2 and
    2/2; 2. with --quiet, stderr has no such line."""
    argv = ["probe", "--json", "-s", "sigterm,sigint", "--", *PY, MINI]
    main(argv)
    out, err = capsys.readouterr()
    assert {r["scenario"] for r in json.loads(out)["results"]} == {"sigterm", "sigint"}
    lines = [ln for ln in err.splitlines() if ln.startswith("mcp-tether probe: ")]
    assert [ln.split()[2] for ln in lines] == ["1/2", "2/2"], err
    main(["probe", "--quiet", "--json", "-s", "sigterm", "--", *PY, MINI])
    out, err = capsys.readouterr()
    assert json.loads(out)["results"] and " after " not in err, err


def _read_until_exit(fd: int, proc: subprocess.Popen[bytes], deadline: float) -> bytes:
    """Everything the pty shows until the process ends (or the deadline passes)."""
    got = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the last writer closed the pty
                break
            if not chunk:
                break
            got += chunk
        elif proc.poll() is not None:
            break
    return got


def test_on_a_terminal_the_probe_shows_a_live_line_and_stdout_keeps_the_table() -> None:
    """stderr on a pty: the line is redrawn in place (carriage returns, erase-line) and
    ends at 1/1; stdout (a pipe) holds the table and no progress."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_tether", "probe", "-s", "sigterm", "--",
         *PY, MINI],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave,
        env={k: v for k, v in os.environ.items() if k != "TERM"})
    os.close(slave)
    try:
        shown = _read_until_exit(master, proc, time.monotonic() + 120)
        out, _ = proc.communicate(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = shown.decode(errors="replace")
    assert "\r\x1b[2K" in text and "mcp-tether probe" in text, text[-400:]
    assert "1/1" in text and "sigterm: " in text, text[-400:]
    # No progress line on stdout (`K/N after S s:`); the word alone may be in a path.
    assert b"sigterm" in out and b"1/1 after" not in out and b"\x1b[2K" not in out
