"""Every long command stops cleanly on SIGTERM, SIGINT and SIGHUP: one line on stderr,
exit 128+N, nothing left (no process: the autouse fixture counts them; no temporary
folder of ours in TMPDIR).

Real processes: the command runs as a child, is signalled once it is busy (its own
processes up, or its first line said), and is judged by what it leaves.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_tether.proc import descendants, identify, signal_process
from polling import until

MINI = str(Path(__file__).parent / "servers" / "mini.py")
SIGNALS = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP]
NAMES = [signal.Signals(s).name for s in SIGNALS]


def _pythons(pid: int) -> int:
    return len([d for d in descendants(pid) if d.comm.startswith("python")])


def _stop(argv: list[str], busy: Callable[[subprocess.Popen[bytes]], bool], sig: int,
          tmp_path: Path) -> list[str]:
    """Start `argv`, wait until `busy`, send `sig`; its stderr lines. Asserts 128+N and
    no `mcp-tether-*` folder left in its TMPDIR."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    p = subprocess.Popen(
        [sys.executable, "-m", "mcp_tether", *argv], env={**os.environ, "TMPDIR": str(temp)},
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        # A child of a background shell may inherit SIGINT ignored; a user's Ctrl-C reaches
        # a foreground command with the default disposition.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    ident = identify(p.pid)
    assert ident is not None

    def ready() -> bool:
        assert p.poll() is None, f"it exited {p.returncode} before it was busy"
        return busy(p)

    try:
        until(ready, f"`{' '.join(argv[:2])}` to be busy", 60)
    except AssertionError:
        p.kill()  # our own child, not yet reaped: its keepers see it go
        p.communicate()
        raise
    assert signal_process(ident, sig) == "sent"
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + sig, err
    assert [f.name for f in temp.iterdir() if f.name.startswith("mcp-tether")] == []
    return err.decode().splitlines()


@pytest.mark.parametrize("sig", SIGNALS, ids=NAMES)
def test_a_stopped_probe_says_one_line_and_exits_128_plus_n(sig: int, tmp_path: Path) -> None:
    """probe, its keepers, clients and servers up (15 pythons): one line, 128+N."""
    lines = _stop(["probe", "-q", "--", sys.executable, "-S", MINI, "--thread"],
                  lambda p: _pythons(p.pid) >= 15, sig, tmp_path)
    assert lines == [f"mcp-tether probe: stopped by {signal.Signals(sig).name}; nothing left "
                     "running"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stopped_lab_says_one_line_and_exits_128_plus_n(sig: int, tmp_path: Path) -> None:
    """lab --block python, its rows running: one line, 128+N."""
    pytest.importorskip("mcp")
    lines = _stop(["lab", "-q", "--block", "python"], lambda p: _pythons(p.pid) >= 6, sig,
                  tmp_path)
    assert lines[-1:] == [f"mcp-tether lab: stopped by {signal.Signals(sig).name}; nothing "
                          "left running"], lines
    assert len(lines) == 1, lines


@pytest.mark.linux
@pytest.mark.parametrize("sig", SIGNALS, ids=NAMES)
def test_a_stopped_reap_watch_says_one_line_and_exits_128_plus_n(
        sig: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """reap --watch after its first line: one more line, 128+N (a service manager
    counts 129, 130 and 143 as success: the unit says so)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    seen: list[bytes] = []

    def said_scanning(p: subprocess.Popen[bytes]) -> bool:
        assert p.stderr is not None
        if not seen:
            seen.append(p.stderr.readline())  # blocks until its first line
        return b"scanning every" in seen[0]

    lines = _stop(["reap", "--watch", "--yes", "--interval", "0.2"], said_scanning, sig,
                  tmp_path)
    assert lines == [f"mcp-tether reap --watch: stopped by {signal.Signals(sig).name}"]
