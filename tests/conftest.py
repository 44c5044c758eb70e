"""Suite-wide guarantees: every test leaves no process behind.

The autouse `no_leftovers` fixture snapshots the process table before each test and,
after it, polls (with a deadline, never a fixed sleep) until every process the test
started is gone. Anything still alive fails the test and is then SIGKILLed, identity
checked. "Started by this session" = a descendant of pytest, or any process carrying
the session's cookie in its environment (orphans reparented to init keep their env).
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator

import pytest

from mcp_tether.proc import ProcessId, cmdline, descendants, snapshot
from mcp_tether.proc.signals import signal_process

# A suite started from a background shell (`cmd &`, nohup, some CI runners) inherits
# SIGINT ignored, and every Python server a test starts would inherit that too and never
# install its KeyboardInterrupt handler: the sigint verdicts and signal masks would then
# describe the launcher, not the server. Give the suite the interpreter's default back.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

COOKIE_VAR = "MCP_TETHER_TEST_SESSION"
COOKIE = os.environ.setdefault(COOKIE_VAR, uuid.uuid4().hex)
LEFTOVER_DEADLINE = 5.0


def _carries_cookie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return f"{COOKIE_VAR}={COOKIE}".encode() in fh.read().split(b"\0")
    except OSError:
        return False


def _ours_now(before: set[ProcessId]) -> dict[ProcessId, str]:
    snap = snapshot()
    me = os.getpid()
    mine = {p.ident for p in descendants(me, snap)}
    out: dict[ProcessId, str] = {}
    for info in snap.values():
        ident = info.ident
        if info.exited or ident in before or info.pid == me:
            continue
        if ident in mine or _carries_cookie(info.pid):
            out[ident] = " ".join(cmdline(info.pid))[:160] or info.comm
    return out


@pytest.fixture(autouse=True)
def no_leftovers() -> Iterator[None]:
    before = {p.ident for p in snapshot().values()}
    yield
    deadline = time.monotonic() + LEFTOVER_DEADLINE
    delay = 0.005
    left = _ours_now(before)
    while left and time.monotonic() < deadline:
        time.sleep(delay)  # polling for a state with a deadline, not waiting for one
        delay = min(delay * 2, 0.1)
        left = _ours_now(before)
    if left:
        for ident in left:
            signal_process(ident, signal.SIGKILL)
        pytest.fail(
            "test left processes running: "
            + "; ".join(f"pid {i.pid}: {c}" for i, c in left.items()),
            pytrace=False,
        )
