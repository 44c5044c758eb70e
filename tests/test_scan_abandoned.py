"""Servers a live host abandoned: real hosts that reconnect and either keep
reading the old copy or keep its handles and stop reading it. `abandoned` is a hint in
`ps` only: `reap` ends nothing for it, in any form (tests/test_scan_superseded.py has
what it ends instead).

Hosts (tests/hostcheck_hosts): the TypeScript SDK 1.x's StdioClientTransport, the
Python SDK's stdio_client, and a stdlib host that reads each server with a thread
blocked in read(). Each starts copy A, then copy B of one config entry.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_tether.proc import ProcessId, identify, is_running
from mcp_tether.proc.table import End
from mcp_tether.scan import abandoned
from mcp_tether.scan.abandoned import Waits, listens
from scan_lab import (
    HOSTS,
    MINI,
    NODE_MODULES,
    Lab,
    assert_ps_and_reap_agree,
    entry,
    host_line,
    mini_config,
    needs_node,
    needs_proc,
    run_cli,
    ts_reconnect_host,
)

pytestmark = [pytest.mark.linux, needs_proc]

WAITS = "how another process waits (epoll items, thread syscalls) is unknown without /proc"


class Host:
    """A host process that started copies A and B of the `mini` config entry."""

    def __init__(self, lab: Lab, argv: list[str], cwd: Path | None = None) -> None:
        self.proc = lab.popen([*argv, sys.executable, str(MINI)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, cwd=cwd)
        self.lab = lab
        self.a, self.b = self._ready()
        lab.started += [self.a, self.b]

    def _ready(self) -> tuple[ProcessId, ProcessId]:
        words = host_line(self.proc, "the host to start both copies").split()
        assert words and words[0] == b"ready", words
        a, b = identify(int(words[1])), identify(int(words[2]))
        assert a is not None and b is not None
        return a, b


def _reap(capsys: pytest.CaptureFixture[str], cfg: str, *extra: str) -> dict:  # type: ignore[type-arg]
    rc, out, err = run_cli(capsys, "reap", "--yes", "--json", "--config", cfg, *extra)
    assert rc == 0, (out, err)
    doc = json.loads(out)
    # What was ended: the results of a `reap` document; a `reap-plan` one ended nothing.
    doc["reaped"] = doc["results"] if doc["schema"] == "mcp-tether/reap" else []
    return doc  # type: ignore[no-any-return]


def _node_host(lab: Lab, mode: str) -> Host:
    return Host(lab, *ts_reconnect_host(mode))


def _abandoned_by(doc: dict, h: Host) -> None:  # type: ignore[type-arg]
    """A is abandoned with its evidence lines; B, the newer copy, is live and listened to."""
    a, b = entry(doc, h.a.pid), entry(doc, h.b.pid)
    assert a is not None and b is not None, doc["results"]
    assert a["state"] == "abandoned", a
    assert {"host-not-listening", "newer-copy-listened"} <= set(a["evidence"]), a
    assert a["listening"]["answer"] == "no" and a["listening"]["host"] == h.proc.pid
    assert a["listening"]["newer_copy"] == h.b.pid
    assert any("reads it nowhere" in line for line in a["listening"]["lines"])
    assert b["state"] == "live" and b["listening"]["answer"] == "yes", b
    assert doc["totals"]["abandoned"] >= 1


def _reap_ends_neither(capsys: pytest.CaptureFixture[str], cfg: str, h: Host) -> None:
    """Neither plain reap nor --include abandoned (accepted, with one line saying it ends
    nothing any more), even with --min-age 0, ends A or B; the plan says why."""
    plain = _reap(capsys, cfg, "--min-age", "0")
    assert not {r["pid"] for r in plain["reaped"]} & {h.a.pid, h.b.pid}
    rc, out, err = run_cli(capsys, "reap", "--yes", "--json", "--config", cfg,
                           "--include", "abandoned", "--min-age", "0")
    assert rc == 0 and err.count("--include abandoned ends nothing any more") == 1, err
    got = json.loads(out)
    assert got["schema"] == "mcp-tether/reap-plan" or not (
        {r["pid"] for r in got["results"]} & {h.a.pid, h.b.pid}), got
    why = {s["pid"]: s["reason"] for s in got["not_selected"]}
    assert why[h.a.pid].startswith("abandoned is a hint only"), why
    assert is_running(h.a) and is_running(h.b) and h.proc.poll() is None


@pytest.mark.requires_linux_backend(WAITS)
def test_a_threaded_host_that_stops_reading_its_old_copy_abandons_it(
        lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """1. A stdlib host reads A and B with threads blocked in read(); A's thread quits,
    its pipes stay held. 2. ps: A abandoned (text and JSON), B live. 3. No reap ends A."""
    cfg = mini_config(lab)
    h = Host(lab, [sys.executable, str(HOSTS / "threaded_host.py"), "abandon"])
    _abandoned_by(assert_ps_and_reap_agree(capsys, h.a.pid, "abandoned", config=cfg), h)
    rc, out, _ = run_cli(capsys, "ps", "--config", cfg)
    assert rc == 0 and f"abandoned pid {h.a.pid} (a hint, never reaped; confidence " in out, out
    _reap_ends_neither(capsys, cfg, h)


@needs_node
@pytest.mark.requires_linux_backend(WAITS)
def test_a_typescript_sdk_host_that_abandons_its_old_transport(
        lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """StdioClientTransport A kept (child and sockets) but no longer read; B connected."""
    cfg = mini_config(lab)
    h = _node_host(lab, "abandon")
    _abandoned_by(assert_ps_and_reap_agree(capsys, h.a.pid, "abandoned", config=cfg), h)
    _reap_ends_neither(capsys, cfg, h)


@pytest.mark.requires_linux_backend(WAITS)
def test_a_python_sdk_host_that_abandons_its_old_stdio_client(
        lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """stdio_client block A never left (process, pipes held), its reading paused."""
    cfg = mini_config(lab)
    h = Host(lab, [sys.executable, str(HOSTS / "py_sdk_reconnect_host.py"), "abandon"])
    _abandoned_by(assert_ps_and_reap_agree(capsys, h.a.pid, "abandoned", config=cfg), h)
    _reap_ends_neither(capsys, cfg, h)


@pytest.mark.requires_linux_backend(WAITS)
def test_idle_hosts_that_still_listen_keep_every_copy_live(
        lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """The same hosts, both copies still read (epoll, or a thread blocked in read; a TS
    SDK Client dropped without close() is still read): every copy is live, and
    `reap --include abandoned --min-age 0` ends none."""
    cfg = mini_config(lab)
    hosts = [Host(lab, [sys.executable, str(HOSTS / "threaded_host.py"), "listen"]),
             Host(lab, [sys.executable, str(HOSTS / "py_sdk_reconnect_host.py"), "listen"])]
    if shutil.which("node") is not None and NODE_MODULES is not None:
        # forget: A's Client dropped without close(); its transport still reads A
        hosts += [_node_host(lab, "listen"), _node_host(lab, "forget")]
    doc = assert_ps_and_reap_agree(capsys, hosts[0].a.pid, "abandoned", config=cfg)
    for h in hosts:
        for ident in (h.a, h.b):
            s = entry(doc, ident.pid)
            assert s is not None and s["state"] == "live", s
            assert s["listening"]["answer"] == "yes", s
    got = _reap(capsys, cfg, "--include", "abandoned", "--min-age", "0")
    ours = {i.pid for h in hosts for i in (h.a, h.b)}
    assert not {r["pid"] for r in got["reaped"]} & ours


@pytest.mark.requires_linux_backend(WAITS)
def test_a_host_waiting_in_select_is_unknown_and_never_reaped(
        lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """select(): what it watches is in its memory, not in /proc: the answer is unknown."""
    cfg = mini_config(lab)
    h = Host(lab, [sys.executable, str(HOSTS / "threaded_host.py"), "select"])
    doc = assert_ps_and_reap_agree(capsys, h.a.pid, "abandoned", config=cfg)
    for ident in (h.a, h.b):
        s = entry(doc, ident.pid)
        assert s is not None and s["state"] == "live", s
        assert s["listening"]["answer"] == "unknown", s
        assert "poll or select" in s["listening"]["reason"]
    got = _reap(capsys, cfg, "--include", "abandoned", "--min-age", "0")
    assert not {r["pid"] for r in got["reaped"]} & {h.a.pid, h.b.pid}


@pytest.mark.requires_linux_backend(WAITS)
def test_abandonment_is_timed_across_scans_by_a_tracker(lab: Lab) -> None:
    """`reap --watch`'s tracker: the second scan counts from the first one's look."""
    from mcp_tether.scan.find import scan

    cfg = mini_config(lab)
    h = Host(lab, [sys.executable, str(HOSTS / "threaded_host.py"), "abandon"])
    tracker = abandoned.Tracker()
    first = next(s for s in scan(config=cfg, tracker=tracker).servers if s.pid == h.a.pid)
    second = next(s for s in scan(config=cfg, tracker=tracker).servers if s.pid == h.a.pid)
    t1, t2 = (s.listening["abandoned_seconds"] for s in (first, second))
    assert second.abandoned and t2 >= t1 + abandoned.SAMPLE, (t1, t2)
    tracker.keep(set())  # a scan that no longer finds it abandoned: the clock restarts
    third = next(s for s in scan(config=cfg, tracker=tracker).servers if s.pid == h.a.pid)
    assert third.listening["abandoned_seconds"] < t2


def test_where_the_backend_cannot_see_how_a_host_waits_nothing_is_abandoned(
        lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """The weaker promise (the portable backend too): a host that stopped reading its old
    copy is never called abandoned where its waiting cannot be read; reap ends nothing."""
    from mcp_tether.proc import table

    cfg = mini_config(lab)
    h = Host(lab, [sys.executable, str(HOSTS / "threaded_host.py"), "abandon"])
    doc = assert_ps_and_reap_agree(capsys, h.a.pid, "abandoned", config=cfg)
    a = entry(doc, h.a.pid)
    if table.CHANNEL_DETAIL:  # the Linux backend: seen, and abandoned
        assert a is not None and a["state"] == "abandoned", a
        return
    assert a is None or (a["state"] != "abandoned"
                         and a["listening"]["answer"] in ("unknown", "n/a")), a
    got = _reap(capsys, cfg, "--include", "abandoned", "--min-age", "0")
    assert not {r["pid"] for r in got["reaped"]} & {h.a.pid, h.b.pid}
    assert is_running(h.a) and is_running(h.b)


READ_END = End("pipe", "pipe:[100]:r", "pipe:[100]", "pipe:[100]", "r", 100)
FAR = {5: (READ_END, (15, 100))}


def test_an_epoll_item_added_under_a_since_closed_fd_still_counts_by_its_open_file() -> None:
    """The item's tfd 9 is closed (a dup, fd 5, keeps the pipe): matched by (dev, ino)."""
    w = Waits({5: READ_END}, [(9, 0x19, (15, 100))], False, [(1, "epoll", None)])
    assert listens(w, FAR)[0] == "yes"


def test_an_epoll_item_that_waits_for_output_only_is_not_listening() -> None:
    w = Waits({5: READ_END}, [(5, 0x4, (15, 100))], False, [(1, "epoll", None)])
    assert listens(w, FAR)[0] == "no"


def test_waits_that_cannot_be_read_are_unknown_never_no() -> None:
    """poll/select, an io_uring, unreadable threads or fds (the portable backend)."""
    links = {5: READ_END}
    for w in (Waits(links, [], False, [(1, "poll", None)]),
              Waits(links, [], True, [(1, "other", None)]),
              Waits(links, [], False, None),
              Waits(None, None, False, None)):
        assert listens(w, FAR)[0] == "unknown", w
    assert listens(Waits(links, [], False, [(1, "read", 5)]), FAR)[0] == "yes"
    assert listens(Waits(links, [], False, [(1, "read", 6)]), FAR)[0] == "no"
