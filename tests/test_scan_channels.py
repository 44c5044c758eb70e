"""A channel is lost only when no live process outside the server's own tree holds any
end of it, judged per direction (docs/leaked-servers.md, "The rules"); and `ps` shows
the judgement `reap` acts on.

Each shape is a live host whose server was started through a wrapper that exited
(`sh -c '... & exit 0'`), so the server's parent is the init: its launcher is gone, yet
the host still reads what it writes. The host has half-closed or closed the server's
input, as the SDKs' close ladders do first (Node's `stdin.end()` is `shutdown(SHUT_WR)`
on a socket; the Python SDK closes the pipe), and keeps reading. Nothing may end it:
`ps` must not call it leaked, and `reap --yes`, `reap --include stdio --yes` and a
`reap --watch --min-age 0` round must leave it running, its output still arriving.
Under the portable backend (no far ends visible) it is `unknown`, never leaked.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcp_tether import platform
from mcp_tether.proc import SAME, ProcessId, ProcRecord, compare, identify
from mcp_tether.scan import rules
from mcp_tether.scan.model import Channel, Member, Server
from mcp_tether.scan.watch import watch
from polling import until
from scan_lab import (
    DEADLINE,
    READER_HOST,
    READER_SERVER,
    READER_SHAPES,
    Lab,
    assert_ps_and_reap_agree,
    entry,
    needs_proc,
)

pytestmark = needs_proc


def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _received(count: Path) -> int:
    try:
        return int(count.read_text() or 0)
    except (OSError, ValueError):
        return 0


def start_host(lab: Lab, shape: str) -> tuple[subprocess.Popen[bytes], ProcessId, Path]:
    """The host, its adopted server (tracked for cleanup), and the host's byte count."""
    server = lab.script("notes/mcp-server-notes.py", READER_SERVER)
    host_py = lab.script("reader_host.py", READER_HOST)
    count = lab.tmp / "received"
    host = lab.popen([sys.executable, str(host_py), shape, str(server), str(count)],
                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    assert host.stdout is not None
    line = host.stdout.readline()
    assert line, "the host did not start its server"
    srv = identify(int(line))
    assert srv is not None
    lab.started.append(srv)
    until(lambda: _ppid(srv.pid) == 1, "the server to be adopted by the init", DEADLINE)
    until(lambda: _received(count) > 0, "the host to read the server's output", DEADLINE)
    return host, srv, count


@pytest.mark.parametrize("shape", READER_SHAPES)
def test_a_server_whose_output_a_live_host_reads_is_never_leaked_nor_ended(
    lab: Lab, capsys: pytest.CaptureFixture[str], shape: str
) -> None:
    """1. a live host's server behind a dead wrapper, its input (half-)closed, its
    output read; 2. ps: not leaked (live with the reader named; unknown on the portable
    backend, which sees no far ends), and reap agrees; 3. reap --yes, --include stdio
    --yes and two --watch rounds at --min-age 0 end nothing; 4. the server runs and the
    host still reads it."""
    host, srv, count = start_host(lab, shape)
    doc = assert_ps_and_reap_agree(capsys, srv.pid)
    e = entry(doc, srv.pid)
    assert e is not None, [s["command"] for s in doc["results"]]
    assert e["parent"]["role"] == "adopter" and "parent-gone" in e["evidence"]
    if platform.backend.channels().CHANNEL_DETAIL:  # far ends seen (Linux, darwin)
        assert e["state"] == "live", e
        assert "stdin-no-writer" in e["evidence"] and "stdout-no-reader" not in e["evidence"]
        assert "reader-held" in e["evidence"], e
        assert host.pid in [r["pid"] for r in e["stdout_readers"]], e
    else:
        assert e["state"] == "unknown", e
    assert_ps_and_reap_agree(capsys, srv.pid, "stdio")
    done = watch(rounds=2, interval=0.05, min_age=0.0, include={"stdio", "guess"},
                 emit=lambda line: None)
    assert srv.pid not in [o.server.pid for o in done]
    assert compare(srv) == SAME and host.poll() is None
    before = _received(count)
    until(lambda: _received(count) > before, "the host to keep reading the server", DEADLINE)


# ----- the rule itself, on made-up trees (which pid holds what is given) ---------------


def _tree(pid: int, adopted: bool, channels: list[Channel]) -> Server:
    ident = ProcessId(pid, 1.0)
    return Server(ident=ident, uid=0, user="root", age_seconds=9.0, command=["x"],
                  shown=["x"], found_by=["evidence"], config=[], host=None,
                  parent={"pid": 1, "name": "init",
                          "role": "adopter" if adopted else "launcher"},
                  channels=channels, private_channels=False, stdin_kind="pipe",
                  evidence=[],
                  members=[Member(ProcRecord(pid, 1, pid, pid, "S", 1.0, "x", argv=["x"]), 0.0)])


def _settle(trees: list[Server], holders: dict[int, list[int]]) -> dict[int, str]:
    """`rules.settle` with `judge` over `holders` (a channel's far end -> who holds it):
    each tree's state."""

    def judge(s: Server, leaked: frozenset[int]) -> None:
        skip = {m.ident.pid for m in s.members}
        s.evidence = rules.judge(s.parent["role"] == "adopter", s.channels,
                                 lambda c: [p for p in holders.get(int(c.far or 0), [])
                                            if p not in skip],
                                 lambda pid: "x", leaked_elsewhere=leaked - skip).evidence

    rules.settle(trees, judge)
    return {s.pid: s.state for s in trees}


def _chans(n: int, writer: str, reader: str) -> list[Channel]:
    """fd 0 reads what far end n writes, fd 1 writes what far end n + 1 reads (numbers
    naming ends: `holders` says who holds each)."""
    return [Channel(0, "pipe", "in", f"{n}r", writer, far=str(n)),
            Channel(1, "pipe", "out", f"{n}w", reader, far=str(n + 1))]


def test_a_far_end_held_by_another_leaked_tree_keeps_nothing_and_one_held_live_keeps_its_chain(
) -> None:
    """A and B (one dead client's servers) hold each other's output: both leaked. C's
    output is read by the live tree L; D's by C, E's by D: none of C, D, E is leaked,
    whatever order they are judged in; F, with no far end left, is leaked."""
    trees = [_tree(4, True, _chans(40, "no", "yes")),   # D: read by C
             _tree(1, True, _chans(10, "no", "yes")),   # A: read by B
             _tree(5, True, _chans(50, "no", "yes")),   # E: read by D
             _tree(2, True, _chans(20, "no", "yes")),   # B: read by A
             _tree(3, True, _chans(30, "no", "yes")),   # C: read by L
             _tree(9, False, _chans(90, "yes", "yes")),  # L: a live server, its launcher alive
             _tree(6, True, _chans(60, "no", "no"))]    # F
    got = _settle(trees, {11: [2], 21: [1], 31: [9], 41: [3], 51: [4]})
    assert got == {1: "leaked", 2: "leaked", 3: "live", 4: "live", 5: "live", 9: "live",
                   6: "leaked"}
    [c] = [s for s in trees if s.pid == 3]
    assert "reader-held" in c.evidence and "stdin-no-writer" in c.evidence


def test_a_socket_used_both_ways_is_judged_per_direction() -> None:
    """One socket at fd 0 and fd 1 is two channels: a peer's SHUT_WR ends the input
    only, and the live peer's holder keeps the tree; its SHUT_RDWR ends both."""
    def sock(fd: int, side: str, peer: str) -> Channel:
        return Channel(fd, "socket", side, "6", peer, far="7")

    half = [sock(0, "in", "no"), sock(1, "out", "yes")]
    assert _settle([_tree(1, True, half)], {7: [9]}) == {1: "live"}
    both = [sock(0, "in", "no"), sock(1, "out", "no")]
    assert _settle([_tree(1, True, both)], {7: [9]}) == {1: "leaked"}
    unreadable = [sock(0, "in", "no"), sock(1, "out", "unknown")]
    assert _settle([_tree(1, True, unreadable)], {7: [9]}) == {1: "unknown"}
