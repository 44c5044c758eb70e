"""The one process table (`proc.table`): the Linux and psutil backends agree, argv is
lazy, the name filter does what it says, and channel checks never disturb a process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from mcp_tether._plat import linux as _linux_table
from mcp_tether._plat import portable as _psutil_table
from mcp_tether.proc import table
from polling import until
from scan_lab import DEADLINE, needs_proc

pytestmark = needs_proc
CHANNELS = "the portable backend sees no fds: every far end is unknown"


def test_linux_and_psutil_backends_agree_on_a_live_child() -> None:
    pytest.importorskip("psutil")
    p = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()", "x y"],
                         stdin=subprocess.PIPE)
    want = [sys.executable, "-c", "import sys; sys.stdin.read()", "x y"]

    def both() -> tuple[object, object] | None:
        a = _linux_table.read_record(p.pid, None)
        b = _psutil_table.read_record(p.pid, None)
        if a is None or b is None or a.argv != want or not (a.rss_bytes and b.rss_bytes):
            return None  # not exec'd yet, or its memory not mapped yet: poll on
        return a, b

    try:
        a, b = until(both, "the child to be readable by both backends", DEADLINE)  # type: ignore[misc]
        assert isinstance(a, table.ProcRecord) and isinstance(b, table.ProcRecord)
        assert (a.pid, a.ppid, a.pgid, a.sid) == (b.pid, b.ppid, b.pgid, b.sid), (a, b)
        assert a.argv == b.argv == want
        assert a.rss_bytes > 0 and b.rss_bytes > 0
    finally:
        assert p.stdin is not None
        p.stdin.close()
        p.wait()


def test_argv_is_read_only_for_names_the_filter_accepts_and_lazily_otherwise() -> None:
    t = table.table(table.name_filter(["nothing-like-this"]))
    me = t[os.getpid()]
    assert not me.argv_read  # skipped by the filter...
    assert me.argv == table.record(os.getpid()).argv  # type: ignore[union-attr]
    assert me.argv_read  # ...and read on first use
    t = table.table(table.name_filter([], prefixes=["python"]))
    assert t[os.getpid()].argv_read


def test_the_name_filter_matches_names_prefixes_and_substrings_case_blind() -> None:
    want = table.name_filter(["npx", "Claude"], prefixes=["python"], contains=["mcp"])
    assert want("npx") and want("claude") and want("python3.12") and want("x-MCP-y")
    assert not want("bash") and not want("pypy")


def _far(fd: int, side: str) -> table.Far:
    me = os.getpid()
    end = (table.fd_ends(me, only=(fd,)) or {})[fd]
    look = table.far_ends()
    try:
        return look.far(me, fd, end, side)
    finally:
        look.close()


@pytest.mark.requires_far_ends(CHANNELS)
def test_a_pipes_far_end_is_open_while_held_and_closed_once_not_and_nothing_is_read() -> None:
    """The far end of a read end is the write end, and the reverse: named while some
    process holds it, closed once none does; the check consumes nothing."""
    r, w = os.pipe()
    os.write(w, b"data")
    try:
        ends = table.fd_ends(os.getpid(), only=(r, w)) or {}
        assert _far(r, "in") == table.Far(table.OPEN, ends[w].id, True, True)
        assert _far(w, "out") == table.Far(table.OPEN, ends[r].id, True, True)
        os.close(w)
        assert _far(r, "in").state == table.CLOSED
        assert os.read(r, 10) == b"data"  # nothing was consumed by the check
    finally:
        os.close(r)
    r2, w2 = os.pipe()
    os.close(r2)
    try:
        assert _far(w2, "out").state == table.CLOSED
    finally:
        os.close(w2)


@pytest.mark.requires_far_ends(CHANNELS)
def test_a_sockets_far_end_is_its_peer_until_the_peer_closes() -> None:
    a, b = socket.socketpair()
    try:
        ends = table.fd_ends(os.getpid(), only=(a.fileno(), b.fileno())) or {}
        assert _far(a.fileno(), "in") == table.Far(table.OPEN, ends[b.fileno()].id, True, True)
        b.close()
        assert _far(a.fileno(), "in").state == table.CLOSED
    finally:
        a.close()
    listener = socket.socket(socket.AF_UNIX)
    try:
        assert _far(listener.fileno(), "in").state == table.UNCONNECTED
    finally:
        listener.close()


@pytest.mark.requires_far_ends(CHANNELS)
def test_a_peers_half_close_ends_what_this_socket_receives_not_what_it_sends() -> None:
    """A stream peer's shutdown(SHUT_WR) (Node's stdin.end()) shows on this end: nothing
    more arrives, what it sends is still read."""
    a, b = socket.socketpair()
    try:
        b.shutdown(socket.SHUT_WR)
        far = _far(a.fileno(), "in")
        assert (far.state, far.recv, far.send) == (table.OPEN, False, True)
    finally:
        a.close()
        b.close()


@pytest.mark.requires_far_ends(CHANNELS)
def test_ends_tell_the_read_end_from_the_write_end_and_share_the_pipe() -> None:
    r, w = os.pipe()
    try:
        ends = table.fd_ends(os.getpid()) or {}
        assert (ends[r].kind, ends[r].mode, ends[w].mode) == ("pipe", "r", "w")
        assert ends[r].id != ends[w].id and ends[r].channel == ends[w].channel
        assert ends[0].kind in ("null", "tty", "file", "pipe", "socket")
        assert table.fd_ends(os.getpid(), only=(100_000,)) == {}
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.requires_linux_backend("a pipe reopened read-write through /proc")
def test_a_pipe_reopened_read_write_holds_both_ends() -> None:
    from mcp_tether import platform

    r, w = os.pipe()
    rw = os.open(f"/proc/self/fd/{r}", os.O_RDWR)
    try:
        ends = table.fd_ends(os.getpid(), only=(r, w, rw)) or {}
        assert ends[rw].mode == "rw" and platform.BACKEND == "linux"
        assert ends[rw].holds(ends[r].id) and ends[rw].holds(ends[w].id)
        assert not ends[r].holds(ends[w].id)
    finally:
        for fd in (r, w, rw):
            os.close(fd)


class _Look:
    """A far-end look that counts what it is asked."""

    def __init__(self, answers: list[table.Far]) -> None:
        self.asked: list[tuple[int, int]] = []
        self.passes: list[str] = []
        self.answers = iter(answers)

    def far(self, pid: int, fd: int, end: table.End, side: str) -> table.Far:
        self.asked.append((pid, fd))
        return next(self.answers)

    def holders(self, end_id: str, skip: set[int]) -> list[int]:
        self.passes.append(end_id)
        return [5, 6, 7]

    def close(self) -> None:
        pass


def test_a_scan_asks_about_each_pipe_end_once_and_never_remembers_an_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pipe's writer is a property of the pipe: two processes holding one end cost one
    check. An "unknown" (the fd replaced under us) is asked again through the next."""
    from mcp_tether.scan import evidence

    look = _Look([table.Far(table.UNKNOWN), table.Far(table.CLOSED)])
    monkeypatch.setattr(table, "far_ends", lambda: look)
    end = table.End("pipe", "e77", "p77", "e77", "r")
    peers = evidence.Peers()
    try:
        assert peers.far(10, 0, end, "in").state == table.UNKNOWN
        assert peers.far(11, 0, end, "in").state == table.CLOSED
        assert peers.far(12, 0, end, "in").state == table.CLOSED
    finally:
        peers.close()
    assert look.asked == [(10, 0), (11, 0)]


def test_an_ends_holders_are_listed_once_per_scan_and_filtered_per_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcp_tether.scan import evidence

    look = _Look([])
    monkeypatch.setattr(table, "far_ends", lambda: look)
    peers = evidence.Peers()
    try:
        assert peers.holders("e9", {6}) == [5, 7]
        assert peers.holders("e9", {5, 7}) == [6]
    finally:
        peers.close()
    assert look.passes == ["e9"]


def test_one_command_is_identified_once_per_scan_into_independent_answers(
    tmp_path: object,
) -> None:
    """The same argv, folder and executable are looked into once (a host's thousand
    leaks are one command); each server still gets its own What to keep."""
    from pathlib import Path

    from mcp_tether.scan.identify import Identifier

    root = Path(str(tmp_path))
    (root / "pyproject.toml").write_text('[project]\nname = "Acme_Tool"\nversion = "1.0"\n')
    (root / "server.py").write_text("import mcp\n")
    argv = [sys.executable, str(root / "server.py")]
    ident = Identifier()
    first = ident.identify(argv, str(root), sys.executable)
    (root / "pyproject.toml").unlink()
    second = ident.identify(argv, str(root), sys.executable)
    assert first.package == second.package == "acme-tool"
    assert first == second and first is not second and first.source is not second.source
    assert Identifier().identify(argv, str(root), sys.executable).package is None


@pytest.mark.requires_far_ends("another process's sockets are unknown (portable)")
def test_a_processs_listening_sockets_are_listed_and_nothing_else(tmp_path: object) -> None:
    """TCP (v4 and v6) and UNIX listeners a process holds, a path with a space and an
    abstract name included, read through its own network namespace's tables; a connected
    or unbound socket is not listening; a process with none lists none."""
    import pathlib

    path = pathlib.Path(str(tmp_path)) / "a b.sock"
    code = ("import socket, sys\n"
            "t = socket.socket(); t.bind(('127.0.0.1', 0)); t.listen()\n"
            "u = socket.socket(socket.AF_UNIX); u.bind(sys.argv[1]); u.listen()\n"
            "a = socket.socket(socket.AF_UNIX); a.bind('\\0mcp-tether-test-abstract'); a.listen()\n"
            "x, y = socket.socketpair(); z = socket.socket()\n"
            "try:\n"
            "    s = socket.socket(socket.AF_INET6); s.bind(('::1', 0)); s.listen(); six = s\n"
            "except OSError:\n"
            "    six = None\n"
            "print(t.getsockname()[1], six.getsockname()[1] if six else 0, flush=True)\n"
            "sys.stdin.read()\n")
    p = subprocess.Popen([sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    try:
        assert p.stdout is not None
        port, port6 = map(int, p.stdout.readline().split())
        got = table.listening(p.pid)
        want = [f"tcp 127.0.0.1:{port}", f"unix {path}", "unix @mcp-tether-test-abstract"]
        want += [f"tcp [::1]:{port6}"] if port6 else []
        assert got is not None and sorted(got) == sorted(want), got
        q = subprocess.Popen([sys.executable, "-c", "import socket, sys\n"
                              "x, y = socket.socketpair(); print(1, flush=True)\n"
                              "sys.stdin.read()"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
        try:
            assert q.stdout is not None and q.stdout.readline()
            assert table.listening(q.pid) == []
        finally:
            q.kill()
            q.wait()
        assert table.boot_id() and table.boot_id() == table.boot_id()
    finally:
        p.kill()
        p.wait()
