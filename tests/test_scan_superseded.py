"""Copies a live host superseded, and hosts that must never lose a server.

Real hosts (tests/hostcheck_hosts): the Python SDK's `stdio_client` reconnecting on an
`AsyncExitStack` (the first never closed), the TypeScript SDK's dropped `Client`, a
host whose config entry was edited (`ondemand_host.py start`), and stdlib hosts in each
shape that uses a server on demand and sits idle between requests. Each copy is the
`mini` server; each host answers `call I` on stdin with `ok I` once copy I answered.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import pytest

from mcp_tether.proc import ProcessId, is_running
from mcp_tether.scan import superseded
from mcp_tether.scan.superseded import Samples
from polling import until
from scan_lab import (
    DEADLINE,
    HOSTS,
    MINI,
    Host,
    Lab,
    assert_ps_and_reap_agree,
    entry,
    mini_config,
    needs_node,
    needs_proc,
    ps_json,
    run_cli,
    ts_reconnect_host,
    watch_while,
)

pytestmark = [pytest.mark.linux, needs_proc]
COUNTERS = "read/write counters of another process (/proc/<pid>/io) are unknown without /proc"

SHAPES = ("sync", "sleep", "poll-nb", "queue", "fork", "select")
EVERY_INCLUDE = ("guess", "stdio", "superseded", "abandoned")


def _ondemand(lab: Lab, mode: str, count: int, cfg: str) -> Host:
    return Host(lab, [sys.executable, str(HOSTS / "ondemand_host.py"), mode, str(count), cfg])


def _node_host(lab: Lab, mode: str) -> Host:
    return Host(lab, *ts_reconnect_host(mode, sys.executable, str(MINI)))


def _reaped(capsys: pytest.CaptureFixture[str], cfg: str, *extra: str) -> dict[int, str]:
    """pid -> outcome of what a `reap --yes` ended (none for a plan that ends nothing)."""
    rc, out, err = run_cli(capsys, "reap", "--yes", "--json", "--config", cfg, *extra)
    assert rc == 0, (out, err)
    doc = json.loads(out)
    return {r["pid"]: r["outcome"] for r in doc["results"]} \
        if doc["schema"] == "mcp-tether/reap" else {}


def _state(capsys: pytest.CaptureFixture[str], cfg: str, ident: ProcessId) -> dict[str, Any]:
    e = entry(ps_json(capsys, "--config", cfg), ident.pid)
    assert e is not None
    return e


def _superseded_after(capsys: pytest.CaptureFixture[str], cfg: str, h: Host, old: ProcessId,
                      new: int, seconds: float) -> dict[str, Any]:
    """Use copy `new` between looks (two looks in a row with no use: it is seen quiet
    once, so what it reads after is not its start-up) until `old` is superseded for
    `seconds`."""
    def look() -> dict[str, Any] | None:
        _state(capsys, cfg, old)
        h.use(new)
        e = _state(capsys, cfg, old)
        sup = e["superseded"]
        return e if e["state"] == "superseded" and sup["idle_seconds"] >= seconds else None
    return until(look, f"copy {old.pid} superseded for {seconds}s", DEADLINE * 4,
                 max_step=0.3)


# ----- 1. safety: hosts that use a server on demand keep it under every reap form ---------


@pytest.mark.requires_linux_backend(COUNTERS)
def test_idle_on_demand_hosts_keep_every_server_under_every_reap_form(
        lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """Six host shapes, two copies each (both used once, then idle): not one copy is
    superseded, and no `reap` (one-off with each --include and --min-age 0, and three
    rounds of --watch with them all) ends one; each host's next calls all answer."""
    cfg = mini_config(lab)
    hosts = [_ondemand(lab, mode, 2, cfg) for mode in SHAPES]
    for h in hosts:
        h.use(0)
        h.use(1)
    ours = {i.pid for h in hosts for i in h.copies}
    doc = assert_ps_and_reap_agree(capsys, hosts[0].copies[0].pid, *EVERY_INCLUDE, config=cfg)
    for pid in ours:
        e = entry(doc, pid)
        assert e is not None and e["state"] != "superseded", e
    for inc in ((), *(("--include", x) for x in EVERY_INCLUDE)):
        assert not set(_reaped(capsys, cfg, "--min-age", "0", *inc)) & ours, inc
    assert "ends nothing any more" in run_cli(
        capsys, "reap", "--dry-run", "--include", "abandoned", "--config", cfg)[2]
    from mcp_tether.scan.watch import watch

    lines: list[str] = []
    watch(interval=0.3, min_age=0, superseded_min_age=0, include=set(EVERY_INCLUDE),
          scan_kwargs={"config": cfg}, emit=lines.append, rounds=3)
    assert not [line for line in lines if not line.startswith("left")], lines
    for h in hosts:
        assert all(is_running(i) for i in h.copies), h.proc.args
        h.use(0)
        h.use(1)


@pytest.mark.requires_linux_backend(COUNTERS)
def test_a_host_that_uses_its_older_copy_again_keeps_it(
        lab: Lab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """1. Only the newer copy is used: the older one becomes superseded. 2. The host uses
    the older one again, past the switch's grace: it uses copies side by side (observed),
    so its idle copies are `unknown` from then on, even once the older one is idle again,
    and `reap --include superseded --min-age 0` ends neither copy."""
    monkeypatch.setattr(superseded, "SWITCH_GRACE", 1.0)
    cfg = mini_config(lab)
    h = _ondemand(lab, "sync", 2, cfg)
    old, new = h.copies
    _superseded_after(capsys, cfg, h, old, 1, 0.5)
    until(lambda: _state(capsys, cfg, new)["age_seconds"] > 1.5,
          "the newer copy past the switch's grace", DEADLINE)
    h.use(0)
    for _ in range(3):
        h.use(1)
        e = _state(capsys, cfg, old)
        sup = e["superseded"]
        assert e["state"] != "superseded" and sup["answer"] == "unknown", e
        assert sup["missing"] == "host-habit" and sup["habit"]["source"] == "observed", sup
    assert not set(_reaped(capsys, cfg, "--include", "superseded", "--min-age", "0")) \
        & {old.pid, new.pid}
    h.use(0)
    h.use(1)


@pytest.mark.requires_linux_backend(COUNTERS)
def test_a_call_that_lands_on_the_older_copy_at_the_switch_is_not_side_by_side(
        lab: Lab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A call the host had under way when it started the newer copy lands on the older one
    (Claude Code's /mcp Reconnect during a call): 1. the newer copy settles and is used;
    2. the older copy answers one call within the switch's grace; 3. it is not taken for
    copies used side by side: once idle, the older copy is superseded. 4. The same call
    past the grace would have been (the previous test)."""
    monkeypatch.setattr(superseded, "SWITCH_GRACE", 3600.0)
    cfg = mini_config(lab)
    h = _ondemand(lab, "sync", 2, cfg)
    old, new = h.copies
    _state(capsys, cfg, old)
    h.use(1)
    e = _state(capsys, cfg, old)  # the newer copy settled (waiting on its input) and used
    h.use(0)  # the call under way at the switch
    for _ in range(2):
        h.use(1)
        e = _state(capsys, cfg, old)
        assert e["superseded"].get("habit", {}).get("source") != "observed", e
    e = _superseded_after(capsys, cfg, h, old, 1, 0.5)
    assert e["superseded"]["habit"]["source"] != "observed", e


@pytest.mark.requires_linux_backend(COUNTERS)
def test_a_look_between_the_two_calls_of_one_request_supersedes_nothing(
        lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """A host that uses both copies for each request, seen between its two calls: the
    newer copy read once after the older went quiet, and nothing since: not superseded."""
    cfg = mini_config(lab)
    h = _ondemand(lab, "sync", 2, cfg)
    old = h.copies[0]
    h.use(0)
    ps_json(capsys, "--config", cfg)  # the look between the two calls
    h.use(1)
    for _ in range(3):
        e = _state(capsys, cfg, old)
        assert e["state"] != "superseded", e
    assert not set(_reaped(capsys, cfg, "--include", "superseded", "--min-age", "0")) \
        & {i.pid for i in h.copies}


# ----- 2. superseded copies of real hosts are ended, the current copy answers on ----------


def _ends_old_keeps_new(capsys: pytest.CaptureFixture[str], cfg: str, h: Host,
                        old: ProcessId, new: int) -> None:
    """Plain reap and the default --min-age end nothing; --min-age 1 ends exactly `old`;
    the host's current copy answers a tools/call afterwards."""
    assert not set(_reaped(capsys, cfg, "--min-age", "0")) & {old.pid}
    rc, out, _ = run_cli(capsys, "reap", "--dry-run", "--json", "--include", "superseded",
                         "--config", cfg)
    why = {s["pid"]: s["reason"] for s in json.loads(out)["not_selected"]}
    assert "idle for less than --min-age" in why[old.pid], why
    got = _reaped(capsys, cfg, "--include", "superseded", "--min-age", "1")
    assert {p: o for p, o in got.items() if p in {c.pid for c in h.copies}} == \
        {old.pid: "ended"}, got
    until(lambda: not is_running(old), "the old copy to be gone", DEADLINE)
    h.use(new)
    assert h.proc.poll() is None


@pytest.mark.requires_linux_backend(COUNTERS)
def test_a_python_sdk_exit_stack_reconnect_leaves_a_superseded_copy(
        lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """A second stdio_client on the stack, the first never closed (both still read by the
    SDK): once only B is used, A is superseded with its evidence; reap ends A only."""
    cfg = mini_config(lab)
    h = Host(lab, [sys.executable, str(HOSTS / "py_sdk_exitstack_host.py"), sys.executable,
                   str(MINI)])
    a, b = h.copies
    e = _superseded_after(capsys, cfg, h, a, 1, 1.0)
    sup = e["superseded"]
    assert {"newer-copy-used", "no-traffic"} <= set(e["evidence"]), e
    assert sup["newer_copy"] == {"pid": b.pid, "start": b.start}
    assert sup["host"] == h.proc.pid and sup["entry"]["name"] == "mini"
    assert _state(capsys, cfg, b)["state"] != "superseded"
    rc, out, _ = run_cli(capsys, "ps", "--config", cfg)
    assert f"superseded pid {a.pid} by pid {b.pid}, entry " in out, out
    _ends_old_keeps_new(capsys, cfg, h, a, 1)


CALL_EVERY = 2.0  # seconds between a busy host's calls to its newer copy
INTERVAL = 3.0  # the watch's: no two looks in a row ever see the newer copy quiet
MIN_AGE = 3.0


@pytest.mark.parametrize("shape", [
    "python-sdk-exit-stack",
    pytest.param("typescript-sdk-dropped-client", marks=needs_node)])
@pytest.mark.requires_linux_backend(COUNTERS)
def test_a_busy_sdk_hosts_forgotten_copy_is_ended_within_min_age_and_three_intervals(
        lab: Lab, capsys: pytest.CaptureFixture[str], shape: str) -> None:
    """A host on the Python SDK (a second `stdio_client` on an exit stack, the first never
    closed) or the TypeScript SDK (A's `Client` dropped, its transport still reading A)
    calls its newer copy B every 2 s, more often than `reap --watch` looks (every 3 s):
    B is never quiet across two looks, but waits on its input at them, so it is settled
    at the first. `--include superseded --min-age 3` ends A, and only A, by round
    ceil(min-age / interval) + 3 + 1 (the first look starts A's idle time); B answers on."""
    cfg = mini_config(lab)
    if shape.startswith("python"):
        h = Host(lab, [sys.executable, str(HOSTS / "py_sdk_exitstack_host.py"),
                       sys.executable, str(MINI)])
    else:
        h = _node_host(lab, "forget")
    a = h.copies[0]
    at: list[int] = []
    lines = watch_while(cfg, lambda: h.use(1), 12, interval=INTERVAL, min_age=MIN_AGE,
                        every=CALL_EVERY, ended=at)
    ended = [line for line in lines if line.startswith("ended")]
    assert ended and all(f"pid {a.pid} " in line for line in ended), lines
    until(lambda: not is_running(a), "the forgotten copy to be gone", DEADLINE)
    assert at[0] <= math.ceil(MIN_AGE / INTERVAL) + 3 + 1, (at, lines)
    h.use(1)


def _entry(lab: Lab, *args: str) -> str:
    """The lab's config with one entry, `mini`: this Python running `args`."""
    path = lab.tmp / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"mini": {"command": sys.executable,
                                                        "args": list(args)}}}))
    return str(path)


@pytest.mark.parametrize("edit", ["a flag and an operand", "flags only", "the script"])
@pytest.mark.requires_linux_backend(COUNTERS)
def test_an_edited_entrys_old_copy_is_superseded_by_the_new_one(
        lab: Lab, capsys: pytest.CaptureFixture[str], edit: str) -> None:
    """1. ps sees copy A run the entry exactly. 2. The entry is edited (`--generation 2`
    added; `--v1` -> `--v2`; the script `srv-alpha.py` -> `srv-beta.py`) and the host
    starts B from it. 3. Once only B is used: A is superseded as the same entry, edited;
    an A that nothing else identifies any more (another script: no config match, no
    other copy of its program) stays identified as the entry's (`remembered`), so
    `reap --include superseded` ends it; B answers on."""
    before, after = {
        "a flag and an operand": ([str(MINI)], [str(MINI), "--generation", "2"]),
        "flags only": ([str(MINI), "--v1"], [str(MINI), "--v2"]),
        "the script": (["srv-alpha.py"], ["srv-beta.py"]),
    }[edit]
    for script in ("srv-alpha.py", "srv-beta.py"):
        (lab.tmp / script).write_text(MINI.read_text())
    cfg = _entry(lab, *before)
    h = _ondemand(lab, "sync", 1, cfg)
    a = h.copies[0]
    assert _state(capsys, cfg, a)["config"]
    _entry(lab, *after)
    b = h.start()
    e = _superseded_after(capsys, cfg, h, a, 1, 1.0)
    assert "edited" in e["superseded"]["same"], e
    assert e["superseded"]["newer_copy"]["pid"] == b.pid and e["mcp"], e
    assert bool(e["config"]) == (edit == "flags only"), e  # --v1 still matches it loosely
    assert ("remembered" in e["found_by"]) == (not e["config"]), e
    if edit == "the script":  # nothing but the memory of its entry says what it is
        assert e["found_by"] == ["remembered"], e
    _ends_old_keeps_new(capsys, cfg, h, a, 1)


@pytest.mark.requires_linux_backend(COUNTERS)
def test_a_copy_used_again_right_before_the_signal_is_left(
        lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """The scan finds A superseded; the host uses A before the ladder: `left`, alive."""
    from mcp_tether.scan.find import scan
    from mcp_tether.scan.reap import reap_servers

    cfg = mini_config(lab)
    h = _ondemand(lab, "sync", 2, cfg)
    a = h.copies[0]
    _superseded_after(capsys, cfg, h, a, 1, 0.1)
    h.use(1)
    found = next(s for s in scan(config=cfg).servers if s.pid == a.pid)
    assert found.state == "superseded"
    h.use(0)
    [out] = reap_servers([found])
    assert out.outcome == "left" and is_running(a)


@pytest.mark.requires_linux_backend(COUNTERS)
def test_a_copy_that_looks_forgotten_says_which_condition_is_missing(
        lab: Lab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Two idle copies, the waits on input not read: 1. a first look has never seen the
    newer copy settled (`settled`); 2. a second has (quiet across two looks), but never
    reading since (`used`); each said in one line under `ps`'s table and in JSON."""
    from mcp_tether.scan import superseded

    monkeypatch.setattr(superseded, "waiting", lambda s: False)
    cfg = mini_config(lab)
    h = _ondemand(lab, "sync", 2, cfg)
    old, new = h.copies
    for missing, words in (("settled", f"newer copy pid {new.pid} was never seen settled"),
                           ("used", f"newer copy pid {new.pid} was seen reading between 0 of "
                                    "the 2 pairs of looks needed")):
        sup = _state(capsys, cfg, old)["superseded"]
        assert sup["answer"] == "no" and sup["missing"] == missing, sup
        assert sup["reason"].startswith(words), sup
    rc, out, _ = run_cli(capsys, "ps", "--config", cfg)
    assert f"not superseded pid {old.pid} (newer copy pid {new.pid}): newer copy" in out, out
    assert f"not superseded pid {new.pid}" not in out, out  # the newest: nothing missing


def test_where_counters_cannot_be_read_nothing_is_superseded(
        lab: Lab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Counters unreadable (another user, the portable backend): `unknown`, never
    superseded, never reaped, however the newer copy is used."""
    from mcp_tether.proc import table

    cfg = mini_config(lab)
    h = _ondemand(lab, "sync", 2, cfg)
    monkeypatch.setattr(table, "io_counters", lambda pid: None)
    for _ in range(3):
        h.use(1)
        e = _state(capsys, cfg, h.copies[0])
        assert e["state"] != "superseded", e
    if e["superseded"]["answer"] != "n/a":  # n/a: this backend sees no launcher's channel
        assert e["superseded"]["answer"] == "unknown", e
    assert not set(_reaped(capsys, cfg, "--include", "superseded", "--min-age", "0")) \
        & {i.pid for i in h.copies}


# ----- 3. the samples: idle time is what was observed -------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_idle_time_counts_from_the_first_sample_of_the_current_counters() -> None:
    """Idle since the first look at its current counters; reads counted between looks
    after a time, and only once it was seen settled (a write alone is not a read)."""
    s = Samples()
    a = ProcessId(10, 5.0)
    s.observe(a, 90.0, (0, 0, 0, 0), {})
    s.observe(a, 95.0, (1, 0, 1, 0), {})  # starting up: read at every look
    assert s.reads_since(a, 0.0) == 0  # never seen settled: its start-up does not count
    s.observe(a, 100.0, (1, 1, 1, 1), {})
    s.observe(a, 110.0, (1, 1, 1, 1), {})  # quiet between 100 s and 110 s: settled
    assert s.idle_since(a, (1, 1, 1, 1)) == 100.0 and s.settled(a) == 100.0
    assert s.reads_since(a, 0.0) == 0
    s.observe(a, 120.0, (2, 1, 2, 1), {})  # it read: idle since this look only
    assert s.idle_since(a, (2, 1, 2, 1)) == 120.0
    assert s.reads_since(a, 0.0) == 1  # between the looks at 110 s and 120 s
    assert s.reads_since(a, 115.0) == 0  # no look at or after 115 s before the read
    s.observe(a, 130.0, (2, 5, 2, 3), {})  # a write alone is traffic, not a read
    assert s.reads_since(a, 110.0) == 1
    s.observe(a, 140.0, (3, 5, 3, 3), {})
    assert s.reads_since(a, 110.0) == 2
    assert s.idle_since(a, (9, 9, 9, 9)) is None
    assert s.moved_after(a, 115.0) == 130.0 and s.moved_after(a, 125.0) == 140.0
    assert s.moved_after(a, 140.0) is None  # no two looks after it


def test_a_copy_seen_waiting_on_its_input_is_settled_at_that_look() -> None:
    """Reading at every look (a call between each two), yet waiting on its input at the
    first: settled there, so every read after it counts."""
    s = Samples()
    b = ProcessId(11, 5.0)
    s.observe(b, 100.0, (1, 1, 1, 1), {}, waiting=True)
    for n, t in enumerate((102.0, 104.0, 106.0), start=2):
        s.observe(b, t, (n, n, n, n), {})
    assert s.settled(b) == 100.0 and s.reads_since(b, 100.0) == 3
