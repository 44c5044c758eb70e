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
CHANNELS = "fd modes, pipe peers and sock_diag are unknown without /proc"


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


@pytest.mark.requires_linux_backend(CHANNELS)
def test_pipe_peer_sees_a_missing_writer_and_reader_without_touching_the_pipe() -> None:
    r, w = os.pipe()
    me = os.getpid()
    ino = os.fstat(r).st_ino
    os.write(w, b"data")
    try:
        assert table.pipe_peer(me, r, ino, "r") == "yes"
        assert table.pipe_peer(me, w, ino, "w") == "yes"
        os.close(w)
        assert table.pipe_peer(me, r, ino, "r") == "no"
        assert os.read(r, 10) == b"data"  # nothing was consumed by the check
    finally:
        os.close(r)
    r2, w2 = os.pipe()
    os.close(r2)
    try:
        assert table.pipe_peer(me, w2, os.fstat(w2).st_ino, "w") == "no"
    finally:
        os.close(w2)


@pytest.mark.requires_linux_backend(CHANNELS)
def test_unix_diag_reports_a_closed_peer() -> None:
    a, b = socket.socketpair()
    diag = table.UnixDiag()
    try:
        ino = os.fstat(a.fileno()).st_ino
        peer = diag.peer(ino)
        assert peer is not None and peer[0] == os.fstat(b.fileno()).st_ino
        b.close()
        peer = diag.peer(ino)
        assert peer is not None and peer[0] == 0
    finally:
        a.close()
        diag.close()


@pytest.mark.requires_linux_backend(CHANNELS)
def test_unix_diag_reports_each_direction_a_peer_shut_down() -> None:
    """A stream peer's shutdown(2) shows in this socket's own mask, per direction: its
    SHUT_WR (Node's stdin.end()) ends what this side reads, its SHUT_RD what it sends."""
    from mcp_tether.scan.evidence import RCV_SHUTDOWN, SEND_SHUTDOWN

    a, b = socket.socketpair()
    diag = table.UnixDiag()
    try:
        ino = os.fstat(a.fileno()).st_ino
        assert diag.peer(ino) == (os.fstat(b.fileno()).st_ino, 0)
        b.shutdown(socket.SHUT_WR)
        assert diag.peer(ino) == (os.fstat(b.fileno()).st_ino, RCV_SHUTDOWN)
        b.shutdown(socket.SHUT_RD)
        assert diag.peer(ino) == (os.fstat(b.fileno()).st_ino, RCV_SHUTDOWN | SEND_SHUTDOWN)
    finally:
        a.close()
        b.close()
        diag.close()


@pytest.mark.requires_linux_backend(CHANNELS)
def test_fd_modes_tell_the_read_end_from_the_write_end() -> None:
    r, w = os.pipe()
    try:
        assert table.fd_mode(os.getpid(), r) == "r"
        assert table.fd_mode(os.getpid(), w) == "w"
        assert table.fd_links(os.getpid())[r] == f"pipe:[{os.fstat(r).st_ino}]"  # type: ignore[index]
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.requires_linux_backend(CHANNELS)
def test_fd_mode_reads_a_read_write_descriptor_and_says_none_for_a_closed_one() -> None:
    a, b = socket.socketpair()
    try:
        assert table.fd_mode(os.getpid(), a.fileno()) == "rw"
    finally:
        a.close()
        b.close()
    assert table.fd_mode(os.getpid(), 100_000) is None


def test_a_scan_asks_about_each_pipe_once_and_never_remembers_an_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pipe's writer is a property of the pipe: two processes holding one pipe cost one
    check. An "unknown" (the fd replaced under us) is asked again through the next."""
    from mcp_tether.scan import evidence

    asked: list[tuple[int, int]] = []
    answers = iter(["unknown", "no"])

    def fake(pid: int, fd: int, ino: int, side: str) -> str:
        asked.append((pid, fd))
        return next(answers)

    monkeypatch.setattr(table, "pipe_peer", fake)
    peers = evidence.Peers()
    try:
        assert peers.pipe(10, 0, 77, "r") == "unknown"
        assert peers.pipe(11, 0, 77, "r") == "no"
        assert peers.pipe(12, 0, 77, "r") == "no"
    finally:
        peers.close()
    assert asked == [(10, 0), (11, 0)]


def test_a_pipes_holders_are_listed_once_per_scan_and_filtered_per_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcp_tether.scan import evidence

    passes: list[int] = []

    def fake(link: str, skip: set[int], mode: str | None = "w") -> list[int]:
        passes.append(int(link[link.index("[") + 1:-1]))
        return [5, 6, 7]

    monkeypatch.setattr(table, "link_holders", fake)
    peers = evidence.Peers()
    try:
        assert peers.holders(9, {6}) == [5, 7]
        assert peers.holders(9, {5, 7}) == [6]
    finally:
        peers.close()
    assert passes == [9]


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


@pytest.mark.requires_linux_backend("another process's sockets are unknown without /proc")
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
