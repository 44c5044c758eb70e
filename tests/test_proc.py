"""The process core: identity, trees, exit waits, identity-checked signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from mcp_tether import platform
from mcp_tether.proc import (
    DIFFERENT,
    SAME,
    ExitWaiter,
    ProcessId,
    compare,
    descendants,
    identify,
    signal_group,
    signal_process,
    wait_gone,
)

SLEEPER = [sys.executable, "-c", "import time\nwhile True: time.sleep(1)"]


def test_identity_is_pid_and_start_time_and_a_reused_pid_is_different() -> None:
    """1. identify a live child; 2. a fake start time makes it a different process."""
    p = subprocess.Popen(SLEEPER)
    try:
        ident = identify(p.pid)
        assert ident is not None and ident.pid == p.pid
        assert compare(ident) == SAME
        assert compare(ProcessId(p.pid, ident.start + 1)) == DIFFERENT
    finally:
        p.kill()
        p.wait()
    assert compare(ident) == DIFFERENT


def test_a_zombie_counts_as_exited_although_kill_0_says_alive() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    ident = identify(p.pid) or ProcessId(p.pid, 0)
    assert wait_gone(ident, 10) is not None
    os.kill(p.pid, 0)  # the zombie still "exists" for kill(2)
    assert compare(ident) == DIFFERENT
    assert identify(p.pid) is None
    p.wait()


def test_signal_process_never_signals_a_reused_pid() -> None:
    p = subprocess.Popen(SLEEPER)
    try:
        real = identify(p.pid)
        assert real is not None
        impostor = ProcessId(p.pid, real.start - 1)  # "the pid was reused since the scan"
        assert signal_process(impostor, signal.SIGKILL) == "gone"
        assert p.poll() is None
        assert signal_process(real, signal.SIGKILL) == "sent"
        assert wait_gone(real, 10) is not None
    finally:
        p.kill()
        p.wait()


def test_signal_group_needs_a_known_live_member() -> None:
    p = subprocess.Popen(SLEEPER, start_new_session=True)
    try:
        ident = identify(p.pid)
        assert ident is not None
        assert signal_group(p.pid, signal.SIGTERM, []) == "gone"
        assert p.poll() is None
        assert signal_group(p.pid, signal.SIGTERM, [ident]) == "sent"
        assert p.wait(10) == -signal.SIGTERM
    finally:
        p.kill()
        p.wait()


def test_descendants_include_grandchildren() -> None:
    code = (
        "import subprocess,sys,time\np=subprocess.Popen(sys.argv[1:])\n"
        "print(p.pid,flush=True)\np.wait()"
    )
    p = subprocess.Popen([sys.executable, "-c", code, *SLEEPER], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        grandchild = int(p.stdout.readline())
        pids = {d.pid for d in descendants(p.pid)}
        assert grandchild in pids
        assert {d.pid for d in descendants(os.getpid())} >= {p.pid, grandchild}
    finally:
        gi = identify(grandchild)
        if gi:
            signal_process(gi, signal.SIGKILL)
        p.wait(10)
        p.stdout.close() if p.stdout else None


def test_exit_waiter_reports_the_exit_instant_without_sleeping() -> None:
    p = subprocess.Popen(SLEEPER)
    ident = identify(p.pid)
    assert ident is not None
    with ExitWaiter([ident]) as w:
        assert w.wait(0) == []
        t0 = time.monotonic()
        p.kill()
        done = []
        deadline = time.monotonic() + 10
        while not done and time.monotonic() < deadline:
            done = w.wait(deadline - time.monotonic())
        assert done == [ident]
        assert w.exited[ident] >= t0
    p.wait()


def test_capabilities_are_probed_once_and_consistent() -> None:
    if platform.IS_LINUX:
        assert platform.has_proc()
    assert platform.has_pidfd() in (True, False)
