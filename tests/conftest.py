"""Suite-wide guarantees: every test leaves no process behind.

The autouse `no_leftovers` fixture snapshots the process table before each test and,
after it, polls (with a deadline, never a fixed sleep) until every process the test
started is gone. Anything still alive fails the test and is then SIGKILLed, identity
checked. "Started by this session" = a descendant of pytest, or any process carrying
the session's cookie in its environment (orphans reparented to init keep their env).
"""

from __future__ import annotations

import json
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
    starts (issue 22 item 5: at load 9-30 on 2 cores, 120 s fixture set-ups timed out).
    A test's own `@pytest.mark.timeout` or `--timeout` on the command line is kept."""
    base = item.config.getini("timeout")
    explicit = item.config.getoption("timeout", None) is not None
    if base and not explicit and item.get_closest_marker("timeout") is None:
        item.add_marker(pytest.mark.timeout(float(base) * load_factor()))
    yield


DURATIONS = os.path.join(os.path.dirname(__file__), "durations.json")


def _shard(config: pytest.Config, items: list[pytest.Item]) -> None:
    """MCP_TETHER_SHARD=K/N keeps the K-th of N halves of the suite (tests/run runs them at
    once, each in a pid namespace of its own): whole files, dealt heaviest first to the
    lightest shard by their seconds in tests/durations.json (a file not listed there
    weighs the median), so each file's shared fixtures stay in one pass."""
    shard = os.environ.get("MCP_TETHER_SHARD")
    if not shard:
        return
    try:
        k, n = (int(x) for x in shard.split("/"))
    except ValueError:
        raise pytest.UsageError(f"MCP_TETHER_SHARD={shard!r}: expected K/N, e.g. 1/2") from None
    if not 1 <= k <= n:
        raise pytest.UsageError(f"MCP_TETHER_SHARD={shard!r}: K must be 1..N")
    try:
        with open(DURATIONS) as fh:
            weights: dict[str, float] = json.load(fh)
    except (OSError, ValueError):
        weights = {}
    files = sorted({item.path.name for item in items})
    known = sorted(weights.values()) or [1.0]
    median = known[len(known) // 2]
    load = [0.0] * n
    owner: dict[str, int] = {}
    for name in sorted(files, key=lambda f: (-weights.get(f, median), f)):
        i = load.index(min(load))
        owner[name] = i
        load[i] += weights.get(name, median)
    keep = [item for item in items if owner[item.path.name] == k - 1]
    dropped = [item for item in items if owner[item.path.name] != k - 1]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


# -- the portable backend (issue 23): `MCP_TETHER_BACKEND=portable tests/run -m portable`
# runs these files on psutil + POSIX only. A test whose promise is the Linux backend's
# alone says so with `@pytest.mark.requires_linux_backend("why")`: skipped, with that
# reason, under the portable backend only; a test beside it asserts the weaker promise.
PORTABLE_FILES = ("test_proc.py", "test_guard.py", "test_guard_argv.py", "test_client.py",
                  "test_probe.py", "test_probe_levels.py", "test_portable.py")
PORTABLE_PREFIXES = ("test_tether", "test_scan")

# The machine view's promises that rest on other processes' fds (pipe far ends, sock_diag):
# the portable backend answers "unknown" there, so `ps` calls nothing leaked and `reap`
# ends nothing (what test_portable.py asserts instead).
FAR_ENDS = "far ends unknown: nothing is called leaked, reap ends nothing"
CHANNELS = "fd modes, pipe peers and sock_diag are unknown without /proc"
PATCHES_LINUX_PARSER = "patches the Linux backend's /proc parser"
LINUX_BACKEND_ONLY: dict[str, dict[str, str]] = {
    "test_scan.py": {
        "test_a_live_server_whose_client_is_alive_is_not_leaked": FAR_ENDS,
        "test_a_pid_reused_between_scan_and_signal_is_not_signalled": FAR_ENDS,
        "test_a_pid_reused_within_the_same_clock_tick_is_not_signalled": FAR_ENDS,
        "test_a_socket_stdin_whose_peer_died_has_no_writer": FAR_ENDS,
        "test_a_wrapper_and_the_server_it_runs_are_one_entry": FAR_ENDS,
        "test_openmetrics_output_is_well_formed_and_ends_with_eof": FAR_ENDS,
        "test_permission_denied_processes_are_skipped_quietly": PATCHES_LINUX_PARSER,
        "test_plain_ps_lists_leaks_first_with_totals": FAR_ENDS,
        "test_ps_reports_a_leak_with_parent_gone_and_stdin_without_writer": FAR_ENDS,
        "test_ps_shows_the_inner_command_of_a_guarded_server": FAR_ENDS,
        "test_reap_dry_run_shows_the_plan_and_ends_nothing": FAR_ENDS,
        "test_reap_ends_a_config_matched_leaked_tree_by_default": FAR_ENDS,
        "test_reap_yes_ends_the_leak_and_touches_nothing_else": FAR_ENDS,
    },
    "test_scan_evidence.py": {
        "test_a_child_in_a_pid_namespace_whose_output_is_read_from_outside_is_unknown": FAR_ENDS,
        "test_a_live_host_under_init_is_a_host_and_its_live_servers_are_listed_apart": FAR_ENDS,
        "test_a_server_whose_output_a_container_engine_shim_reads_is_unknown": FAR_ENDS,
        "test_bare_reap_on_a_terminal_lists_the_leak_and_asks_stating_the_minimum_age": FAR_ENDS,
    },
    "test_scan_leaks.py": {
        "test_a_leaked_non_mcp_stdio_process_is_listed_but_ended_only_with_include_stdio": FAR_ENDS,
        "test_a_live_host_with_dev_null_stdin_under_pid_1_is_never_proposed": FAR_ENDS,
        "test_a_nameless_node_sdk_server_is_found_identified_and_ended_by_plain_reap": FAR_ENDS,
        "test_a_nameless_python_sdk_server_is_found_identified_and_ended_by_plain_reap": FAR_ENDS,
        "test_an_mcp2_server_with_a_leaked_writer_is_found_past_fd_0_and_not_ended": FAR_ENDS,
        "test_an_npx_launched_server_is_matched_to_its_config_entry": FAR_ENDS,
    },
    "test_scan_table.py": {
        "test_fd_mode_reads_a_read_write_descriptor_and_says_none_for_a_closed_one": CHANNELS,
        "test_fd_modes_tell_the_read_end_from_the_write_end": CHANNELS,
        "test_pipe_peer_sees_a_missing_writer_and_reader_without_touching_the_pipe": CHANNELS,
        "test_unix_diag_reports_a_closed_peer": CHANNELS,
        "test_unix_diag_reports_each_direction_a_peer_shut_down": CHANNELS,
    },
    "test_scan_watch.py": {
        "test_watch_ends_a_leak_that_appears_after_it_started_and_leaves_young_and_allowed_ones":
            FAR_ENDS,
    },
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "portable: in the subset CI runs a second time "
                            "with MCP_TETHER_BACKEND=portable")
    config.addinivalue_line("markers", "requires_linux_backend(reason): a promise only the "
                            "Linux backend keeps; skipped under the portable one")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from mcp_tether import platform

    for item in items:
        name = item.path.name
        if name in PORTABLE_FILES or name.startswith(PORTABLE_PREFIXES):
            item.add_marker(pytest.mark.portable)
        mark = item.get_closest_marker("requires_linux_backend")
        why = LINUX_BACKEND_ONLY.get(name, {}).get(getattr(item, "originalname", ""))
        if mark is not None:
            why = mark.args[0] if mark.args else "a Linux backend promise"
        if why is not None and platform.BACKEND != "linux":
            item.add_marker(pytest.mark.skip(reason=f"portable backend: {why}"))
    _shard(config, items)


@pytest.fixture
def backend() -> str:
    """The platform backend this run uses: "linux" or "portable"."""
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
