"""`reap --watch` ends leaks as they appear and leaves the young and the allowed alone;
`reap --print-unit` prints a ready user service."""

from __future__ import annotations

import os
import plistlib
import shlex
import signal
import subprocess
import sys
import threading

import pytest

from mcp_tether.proc import SAME, compare, table, wait_gone
from polling import until
from scan_lab import DEADLINE, FAR_ENDS, Lab, needs_proc, run_cli

pytestmark = [pytest.mark.linux, needs_proc]

MIN_AGE = 4.0


class Lines:
    """The watcher's stdout, line by line, read on a thread (never blocks the test)."""

    def __init__(self, stream: object) -> None:
        self.lines: list[str] = []
        self._t = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._t.start()

    def _read(self, stream: object) -> None:
        for raw in stream:  # type: ignore[attr-defined]
            self.lines.append(raw.decode(errors="replace").rstrip("\n"))

    def has(self, *words: str) -> str | None:
        return next((ln for ln in list(self.lines) if all(w in ln for w in words)), None)


@pytest.mark.requires_linux_backend(FAR_ENDS)
def test_watch_ends_a_leak_that_appears_after_it_started_and_leaves_young_and_allowed_ones(
    lab: Lab,
) -> None:
    """1. a live SDK-identified server A, old enough; 2. the watcher starts;
    3. A leaks, and so do a brand-new B and an allowed C; 4. A is ended with one line
    (what, evidence, memory); B (younger than --min-age) and C (--allow) are left alone,
    each with a line saying why; 5. SIGTERM stops the watcher cleanly."""
    a_script = lab.fake_server("a/server.py", sdk_import=True)
    a = lab.pair([sys.executable, str(a_script)])
    watcher = lab.popen(
        [sys.executable, "-m", "mcp_tether", "reap", "--watch", "--yes", "--interval", "0.2",
         "--min-age", str(MIN_AGE), "--allow", "*keep-me*", "--grace", "5"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = Lines(watcher.stdout)
    rec = table.record(a.server.pid)
    assert rec is not None
    until(lambda: table.age_seconds(rec) >= MIN_AGE, "A to be older than --min-age", DEADLINE)
    b = lab.pair([sys.executable, str(lab.fake_server("b/server.py", sdk_import=True))])
    c = lab.pair([sys.executable, str(lab.fake_server("keep-me/server.py", sdk_import=True))])
    for p in (a, b, c):
        p.orphan()
    ended = until(lambda: out.has("ended", f"pid {a.server.pid} "), "the watcher to end A",
                  DEADLINE)
    assert "parent-gone" in ended and "reclaimed" in ended and "sdk mcp" in ended
    assert wait_gone(a.server, DEADLINE) is not None
    young = until(lambda: out.has(f"left: pid {b.server.pid} ", "younger"), "B left alone",
                  DEADLINE)
    allowed = until(lambda: out.has(f"left: pid {c.server.pid} ", "allowed"), "C left alone",
                    DEADLINE)
    assert young and allowed
    watcher.send_signal(signal.SIGTERM)
    assert watcher.wait(DEADLINE) == 128 + signal.SIGTERM
    assert watcher.stderr is not None
    assert watcher.stderr.read().decode().splitlines()[1:] == [
        "mcp-tether reap --watch: stopped by SIGTERM"]  # after its "scanning every" line
    assert compare(b.server) == SAME and compare(c.server) == SAME
    assert not out.has("ended", f"pid {b.server.pid} ") and not out.has(
        "ended", f"pid {c.server.pid} ")


def test_watch_needs_yes(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(capsys, "reap", "--watch")
    assert rc == 2 and "--yes" in err


def test_print_unit_systemd_runs_the_watcher_with_the_given_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, _ = run_cli(capsys, "reap", "--print-unit", "systemd", "--allow", "shared-*",
                         "--min-age", "120")
    assert rc == 0
    lines = out.splitlines()
    for section in ("[Unit]", "[Service]", "[Install]"):
        assert section in lines
    [exec_start] = [ln for ln in lines if ln.startswith("ExecStart=")]
    argv = shlex.split(exec_start.removeprefix("ExecStart="))  # systemd quotes alike
    assert argv[argv.index("reap"):] == ["reap", "--watch", "--yes", "--min-age", "120",
                                         "--allow", "shared-*"]
    assert os.path.isabs(argv[0])
    assert "WantedBy=default.target" in lines


def test_print_unit_launchd_is_a_valid_plist_running_the_watcher(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, _ = run_cli(capsys, "reap", "--print-unit", "launchd", "--interval", "15")
    assert rc == 0
    doc = plistlib.loads(out.encode())
    args = doc["ProgramArguments"]
    assert args[args.index("reap"):] == ["reap", "--watch", "--yes", "--interval", "15"]
    assert doc["KeepAlive"] is True and doc["RunAtLoad"] is True
