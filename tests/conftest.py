"""Suite-wide guarantees: every test leaves no process behind.

The autouse `no_leftovers` fixture snapshots the process table before each test and,
after it, polls (with a deadline, never a fixed sleep) until every process the test
started is gone. Anything still alive fails the test and is then SIGKILLed, identity
checked. "Started by this session" = a descendant of pytest, or any process carrying
the session's cookie in its environment (orphans reparented to init keep their env).

Also here: the fixtures many files share (`lab`, the scan tests' clients and servers;
`backend`), the timings of a pass (tests/shards.py deals the passes) and the hang guard
that scales with the machine's load.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import shards
from mcp_tether.proc import ProcessId, cmdline, descendants, snapshot
from mcp_tether.proc.signals import signal_process

if TYPE_CHECKING:
    from scan_lab import Lab

# A suite started from a background shell (`cmd &`, nohup, some CI runners) inherits
# SIGINT ignored, and every Python server a test starts would inherit that too and never
# install its KeyboardInterrupt handler: the sigint verdicts and signal masks would then
# describe the launcher, not the server. Give the suite the interpreter's default back.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

def load_factor() -> float:
    """How many times slower than an idle machine this one is likely to run us now: the
    1-minute load average per CPU, at least 1, at most MAX_LOAD_FACTOR."""
    try:
        with open("/proc/loadavg") as fh:
            load = float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 1.0
    return min(MAX_LOAD_FACTOR, max(1.0, load / (os.cpu_count() or 1)))


MAX_LOAD_FACTOR = 10.0


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """pytest-timeout's limit (pyproject `timeout`, set-up and tear-down included) is a
    hang guard, not a timing target: it scales with the machine's load when each test
    starts (at load 9-30 on 2 cores, a 120 s limit times out fixture set-ups).
    A test's own `@pytest.mark.timeout` or `--timeout` on the command line is kept."""
    base = item.config.getini("timeout")
    explicit = item.config.getoption("timeout", None) is not None
    if base and not explicit and item.get_closest_marker("timeout") is None:
        item.add_marker(pytest.mark.timeout(float(base) * load_factor()))
    yield


# MCP_TETHER_RECORD_DURATIONS=1 tests/run: each pass writes its files' seconds here, and
# tests/run rewrites tests/durations.json from them all (tests/shards.py).
TIMINGS_OUT = os.environ.get("MCP_TETHER_DURATIONS_OUT", "")
_timings = shards.Timings()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if TIMINGS_OUT:
        _timings.add(report.nodeid, report.duration)


def _narrowed(config: pytest.Config) -> str | None:
    """Why this pass did not run every test of its files, if it did not."""
    o = config.option
    for flag, value in (("-k", o.keyword), ("-m", o.markexpr), ("-x/--maxfail", o.maxfail),
                        ("--lf", getattr(o, "lf", False)), ("--deselect", o.deselect)):
        if value:
            return flag
    return None


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not TIMINGS_OUT:
        return
    why = _narrowed(session.config)
    if why is not None:  # a part of its files' tests: their seconds would be too few
        print(f"\nconftest: timings not recorded: the run was narrowed ({why})", file=sys.stderr)
    elif exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        from mcp_tether import platform

        _timings.write(TIMINGS_OUT, platform.BACKEND)  # tests/run notices a pass that wrote none


# -- other backends on this machine: `MCP_TETHER_BACKEND=portable tests/run -m portable`
# runs the files tests/shards.py names (`is_portable`) on psutil + POSIX only;
# `MCP_TETHER_BACKEND=darwin-sim tests/run -m darwin_sim` runs those it names
# (`is_darwin_sim`: the machine view's, the guard's, ...) on the darwin backend, its
# libproc answered from /proc (`_plat/darwin_sim.py`). A test whose promise is the Linux
# backend's alone says so with `@pytest.mark.requires_linux_backend("why")`; one whose
# promise rests on other processes' far ends, with `@pytest.mark.requires_far_ends("why")`
# (the Linux and darwin backends see them, the portable one does not); one whose promise
# rests on the whole tree, escapees included, with `@pytest.mark.requires_tree("why")` (a
# subreaper on Linux, the tree's mark read from environments on darwin; not the portable
# backend). Each is skipped, with its reason, where the backend does not keep it; a test
# beside it asserts the weaker promise.


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "portable: in the subset CI runs a second time "
                            "with MCP_TETHER_BACKEND=portable")
    config.addinivalue_line("markers", "darwin_sim: in the subset CI runs again with "
                            "MCP_TETHER_BACKEND=darwin-sim")
    config.addinivalue_line("markers", "requires_linux_backend(reason): a promise only the "
                            "Linux backend keeps; skipped under any other")
    config.addinivalue_line("markers", "requires_far_ends(reason): a promise resting on "
                            "other processes' far ends; skipped where the backend sees none")
    config.addinivalue_line("markers", "requires_tree(reason): a promise resting on the "
                            "whole tree, escapees included (a subreaper, or the tree's mark "
                            "in environments: the darwin backend); skipped where neither")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from mcp_tether import platform

    detail = platform.backend.channels().CHANNEL_DETAIL
    tree = platform.backend.HAS_SUBREAPER or \
        platform.backend.channels().environ(os.getpid()) is not None
    for item in items:
        if shards.is_portable(item.path.name):
            item.add_marker(pytest.mark.portable)
        if shards.is_darwin_sim(item.path.name):
            item.add_marker(pytest.mark.darwin_sim)
        mark = item.get_closest_marker("requires_linux_backend")
        if mark is not None and platform.BACKEND != "linux":
            why = mark.args[0] if mark.args else "a Linux backend promise"
            item.add_marker(pytest.mark.skip(reason=f"{platform.BACKEND} backend: {why}"))
        mark = item.get_closest_marker("requires_far_ends")
        if mark is not None and not detail:
            why = mark.args[0] if mark.args else "far ends unseen"
            item.add_marker(pytest.mark.skip(reason=f"{platform.BACKEND} backend: {why}"))
        mark = item.get_closest_marker("requires_tree")
        if mark is not None and not tree:
            why = mark.args[0] if mark.args else "escapees out of sight"
            item.add_marker(pytest.mark.skip(reason=f"{platform.BACKEND} backend: {why}"))


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Lab]:
    """The scan tests' lab (tests/scan_lab.py `Lab`): real clients and servers, every one
    killed by identity at the end; an empty HOME, the working directory in tmp_path,
    leaks adopted by init as on a user's machine. A test file with a `lab` of another
    kind (test_guard.py, test_lab.py) defines its own, which pytest uses there instead."""
    from scan_lab import lab_fixture  # here: scan_lab looks for the Node SDK at import

    yield from lab_fixture(tmp_path, monkeypatch)


@pytest.fixture
def backend() -> str:
    """The platform backend this run uses: "linux", "portable" or "darwin-sim"."""
    from mcp_tether import platform

    return platform.BACKEND


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
