"""What the tree kill leaves for the user, and what it still ends, on real processes.

The server (tests/servers/leave_server.py) starts, for its user, a tmux session (a
private socket in the test's folder), a `setsid -f` daemon on a unix socket and a child
kept out with `outside_tether()`; for its own work, a plain child, a `nohup`ed one, a
setsid helper, a daemonized grandchild, shells on pseudo-terminals (`script`, `pty.fork`)
and `setsid -f script` (pseudo-terminal masters, nowhere to attach). Behind the guard
(`mcp-tether run`), under the helper (`mcp_tether.tethered`) and through the host client
(`mcp_tether.client.spawn`): the user's are left and named (stderr, the guard's report),
the rest ends. The Node package's twin (node/test/leave.test.mjs: tether(), the preload,
mcp-tether/client behind each supervisor) runs from here too. What a test leaves is
killed at its end, by identity.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import node_tap
from mcp_tether.guard.report import REPORT_ENV, ReportPipe
from mcp_tether.proc import (
    SAME,
    ProcessId,
    compare,
    descendants,
    identify,
    mark,
    signal_process,
    snapshot,
)
from mcp_tether.proc.tree import carrying
from polling import until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="Linux: /proc, tmux")
TOOLS = ("tmux", "script", "setsid", "ss")  # ss: the Node package's unix socket peers
REPO = Path(__file__).resolve().parents[1]
SERVER = str(REPO / "tests" / "servers" / "leave_server.py")
FAST = ["--grace", "0.3", "--term-grace", "0.3"]
DEADLINE = 30.0
OWN_WORK = ["child", "nohup", "setsid", "double", "script", "ptyfork", "detached-script"]


class Folder:
    """A short folder for the sockets (a unix socket path holds 107 bytes), and whatever
    a test leaves running, killed by identity at its end."""

    def __init__(self) -> None:
        self.path = tempfile.mkdtemp(prefix="mt-leave-", dir="/tmp")
        self.keep: set[ProcessId] = set()

    def __str__(self) -> str:
        return self.path

    def pid(self, name: str) -> ProcessId:
        ident = identify(int(Path(self.path, f"{name}.pid").read_text()))
        assert ident is not None, f"{name} is not running"
        return ident

    def tmux_server(self) -> ProcessId | None:
        out = subprocess.run(["tmux", "-S", f"{self.path}/tmux.sock", "display-message", "-p",
                              "#{pid}"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        return identify(int(out.stdout)) if out.returncode == 0 and out.stdout.strip() else None

    def end(self) -> None:
        tmux = self.tmux_server()
        doomed = self.keep | ({tmux} if tmux else set())
        doomed |= {i for d in list(doomed) for i in (p.ident for p in descendants(d.pid))}
        for ident in doomed:
            signal_process(ident, signal.SIGKILL)
        until(lambda: all(compare(i) != SAME for i in doomed), "the leftovers gone", DEADLINE)
        shutil.rmtree(self.path, ignore_errors=True)


@pytest.fixture(autouse=True)
def _tools() -> None:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing and os.environ.get("CI") == "true":
        pytest.fail(f"{', '.join(missing)} missing (CI installs them: .ci/run)")
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")


@pytest.fixture
def folder() -> Iterator[Folder]:
    f = Folder()
    try:
        yield f
    finally:
        f.end()


def tree_of(pid: int) -> set[ProcessId]:
    """`pid`'s descendants, and (without a subreaper: darwin-sim) the processes that carry
    its tree's mark (MCP_TETHER_TREE) wherever they were reparented."""
    snap = snapshot()
    kids = descendants(pid, snap)
    tokens = {mark.token(p.pid, p.start) for p in (*kids, snap[pid])}
    return {p.ident for p in kids} | {p.ident for p in carrying(tokens, snap)}


class Run:
    """One server run: the process started, its tree when the server was ready, its end."""

    def __init__(self, proc: subprocess.Popen[bytes], folder: Folder, log: Path) -> None:
        self.proc = proc
        self.folder = folder
        self.log = log  # a file, not a pipe: what is left may hold the server's stderr
        until(lambda: Path(folder.path, "ready").exists() or proc.poll() is not None,
              "the server ready", DEADLINE)
        assert proc.poll() is None, log.read_text(errors="replace")
        self.tree = tree_of(proc.pid)
        self.stderr = ""

    def close(self) -> str:
        """Close the server's stdin (the client goes); its stderr once everything ended."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=DEADLINE)
        self.stderr = self.log.read_text(errors="replace")
        return self.stderr

    def left(self) -> dict[int, str]:
        """pid -> the rest of each `left PID (...)` line on stderr."""
        return {int(m[1]): m[2] for m in re.finditer(r"left (\d+) (\(.*)", self.stderr)}

    def alive(self) -> set[ProcessId]:
        return {i for i in self.tree if compare(i) == SAME}


def _start(folder: Folder, argv: list[str], report: ReportPipe | None = None) -> Run:
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    if report is not None:  # the guard's end of the pipe, named as `offer` names it
        env[REPORT_ENV] = str(report.write_fd)
    Path(folder.path, "ready").unlink(missing_ok=True)  # a run before this one's
    log = Path(folder.path, f"stderr.{len(list(Path(folder.path).glob('stderr.*')))}")
    with log.open("wb") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=err, env=env,
                                pass_fds=() if report is None else (report.write_fd,))
    if report is not None:
        report.close_writer()
    return Run(proc, folder, log)


def guarded(folder: Folder, *whats: str, report: ReportPipe | None = None) -> Run:
    return _start(folder, [sys.executable, "-m", "mcp_tether", "run", *FAST, "--",
                           sys.executable, SERVER, str(folder), *whats], report)


def helped(folder: Folder, *whats: str) -> Run:
    return _start(folder, [sys.executable, SERVER, str(folder), "helper", *whats])


class Outsider:
    """A second, still-running server outside the first one's tree, connected to its
    daemon: a live user of it (up once the daemon accepted it: its first byte read)."""

    def __init__(self, folder: Folder, tcp: bool = False) -> None:
        code = ("import socket, sys; a = sys.argv[1]; s = socket.socket(*(() if a.isdigit() else"
                " (socket.AF_UNIX,))); s.connect(('127.0.0.1', int(a)) if a.isdigit() else a);"
                " s.recv(1); print('up', flush=True); sys.stdin.read()")
        where = Path(folder.path, "tcp.port").read_text() if tcp else f"{folder}/daemon.sock"
        self.proc = subprocess.Popen([sys.executable, "-c", code, where],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None and self.proc.stdout.readline() == b"up\n"

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=DEADLINE)


# -- the guard ----------------------------------------------------------------------------


def test_the_guard_leaves_a_tmux_session_and_names_it_on_stderr_and_in_its_report(
        folder: Folder) -> None:
    """1. The server runs `tmux new -d` (its server daemonizes and reparents to the guard);
    2. the client goes; 3. the guard exits at once: tmux is not a child it waits for;
    4. the session still answers, and stderr and the report name its server, a terminal."""
    report = ReportPipe()
    run = guarded(folder, "tmux", "child", report=report)
    err = run.close()
    tmux = folder.tmux_server()
    assert tmux is not None, err
    folder.keep.add(tmux)
    left = run.left()
    assert "a terminal session a user can attach to" in left[tmux.pid], err
    assert f"listening at {folder}/tmux.sock" in left[tmux.pid], err
    got = report.read()
    assert got is not None, report.error
    assert {(x.pid, x.why) for x in got.left} >= {(tmux.pid, "terminal")}, got.left
    assert got.counts["left"] == len(got.left) == len(left), (got.left, err)
    assert "left running for the user" in err and got.survivors == [], err
    # The session's pane went with its server; the server's own child ended.
    assert run.alive() == {i for i in run.tree if i.pid in left}, err


def test_the_guard_leaves_a_daemon_a_second_live_server_uses(folder: Folder) -> None:
    """1. The server starts a `setsid -f` daemon on a unix socket; 2. a second server,
    outside the first one's tree, connects and stays; 3. the client of the first goes:
    the daemon is left, "in use by" the second, which still talks to it."""
    run = guarded(folder, "daemon")
    daemon = folder.pid("daemon")
    outsider = Outsider(folder)
    try:
        err = run.close()
        folder.keep.add(daemon)
        assert compare(daemon) == SAME, err
        assert f"in use by {outsider.proc.pid} (python" in run.left()[daemon.pid], err
        assert "over a unix socket" in err
    finally:
        outsider.close()


def test_the_guard_leaves_a_daemon_a_second_server_uses_over_loopback_tcp(folder: Folder) -> None:
    """The same over TCP on 127.0.0.1: the connection the daemon accepted has its far end in
    the second server, found through this machine's TCP table."""
    run = guarded(folder, "tcp-daemon")
    daemon = folder.pid("tcp-daemon")
    outsider = Outsider(folder, tcp=True)
    try:
        err = run.close()
        folder.keep.add(daemon)
        assert compare(daemon) == SAME, err
        assert f"in use by {outsider.proc.pid} (python" in run.left()[daemon.pid], err
        assert "over a TCP connection" in err
    finally:
        outsider.close()


def test_the_guard_leaves_an_opted_out_child_in_its_group_and_still_ends_the_rest(
        folder: Folder) -> None:
    """An `outside_tether()` child left in the server's process group: the guard sends no
    kill(-group) that would reach it, and still ends the server's own child one by one."""
    run = guarded(folder, "outside-group", "child", "setsid")
    kept = folder.pid("outside-group")
    err = run.close()
    folder.keep.add(kept)
    assert compare(kept) == SAME, err
    assert "kept out of the tether on purpose" in run.left()[kept.pid], err
    assert run.alive() == {kept}, err


def test_the_guard_still_ends_everything_the_server_started_for_its_own_work(
        folder: Folder) -> None:
    """Children, a nohup'ed one, a setsid helper, a daemonized grandchild, shells on
    pseudo-terminals (held by `script`, by the server) and a `setsid -f script` (masters,
    nowhere to attach), and a daemon nobody uses: all end; nothing is named left."""
    report = ReportPipe()
    run = guarded(folder, *OWN_WORK, "daemon", report=report)
    assert len(run.tree) >= 10, run.tree
    err = run.close()
    assert run.alive() == set(), err
    assert run.left() == {}, err
    got = report.read()
    assert got is not None and got.left == [] and got.survivors == [], (report.error, got)


def test_a_daemon_only_the_host_uses_is_the_servers_and_ends(folder: Folder) -> None:
    """The process holding the daemon's far end is the guard's own ancestor (the host):
    that is the host's channel, not a user's, and the daemon ends with the tree."""
    run = guarded(folder, "daemon")
    daemon = folder.pid("daemon")
    with socket.socket(socket.AF_UNIX) as host_side:
        host_side.connect(f"{folder}/daemon.sock")
        err = run.close()
        assert compare(daemon) != SAME, err
    assert run.left() == {}, err


def test_a_used_daemon_on_the_protocol_channel_is_taken_for_the_server_and_ends(
        folder: Folder) -> None:
    """The same daemon, used by a second server, but on the server's stdin and stdout:
    whatever holds the protocol channel is the server (behind a launcher), never left."""
    run = guarded(folder, "stdio-daemon")
    daemon = folder.pid("stdio-daemon")
    outsider = Outsider(folder)
    try:
        err = run.close()
        assert compare(daemon) != SAME, err
        assert run.left() == {}, err
    finally:
        outsider.close()


# -- the helper ----------------------------------------------------------------------------


def test_the_helper_leaves_tmux_a_used_daemon_and_an_opted_out_child_and_names_them(
        folder: Folder) -> None:
    """Under `mcp_tether.tethered()` (a subreaper: each is reparented to the server), the
    same three are left, with the tmux pane, and one stderr line names each; the server's
    own child still ends."""
    run = helped(folder, "tmux", "daemon", "outside", "child", "double")
    daemon, kept = folder.pid("daemon"), folder.pid("outside")
    outsider = Outsider(folder)
    try:
        err = run.close()
        tmux = folder.tmux_server()
        assert tmux is not None, err
        folder.keep |= {tmux, daemon, kept}
        left = run.left()
        assert "a terminal session" in left[tmux.pid], err
        assert f"in use by {outsider.proc.pid}" in left[daemon.pid], err
        assert "kept out of the tether" in left[kept.pid], err
        assert run.alive() == {i for i in run.tree if i.pid in left}, err
        assert "left running for the user" in err
    finally:
        outsider.close()


def test_a_tmux_session_opened_before_the_helper_armed_is_left_as_one_opened_after(
        folder: Folder) -> None:
    """Before arming, tmux's server is reparented to init (outside the tree); after, to the
    server (the previous test): left either way, and the server's own child still ends."""
    run = helped(folder, "pre-tmux", "child")
    err = run.close()
    tmux = folder.tmux_server()
    assert tmux is not None, err
    folder.keep.add(tmux)
    assert run.tree and run.alive() == set(), err  # the child: tmux was never in the tree


def test_the_helper_still_ends_everything_the_server_started_for_its_own_work(
        folder: Folder) -> None:
    run = helped(folder, *OWN_WORK, "daemon")
    err = run.close()
    assert run.alive() == set(), err
    assert run.left() == {}, err


# -- the host client -----------------------------------------------------------------------


def test_the_host_client_leaves_the_users_processes_and_ends_the_servers(
        folder: Folder, tmp_path: Path) -> None:
    """`mcp_tether.client.spawn`: the server runs behind the guard; close() returns once
    the server's own tree is gone, with tmux and the opted-out child still running."""
    from mcp_tether.client import spawn

    log = tmp_path / "stderr"
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    with log.open("wb") as fh:
        server = spawn([sys.executable, SERVER, str(folder), "tmux", "outside", "child",
                        "double"], stderr=fh, env=env, grace=0.3, term_grace=0.3)
        until(lambda: Path(folder.path, "ready").exists(), "the server ready", DEADLINE)
        tree = tree_of(server.pid)
        kept = folder.pid("outside")
        status = server.close()
    err = log.read_text(errors="replace")
    tmux = folder.tmux_server()
    assert tmux is not None, err
    folder.keep |= {tmux, kept}
    assert status == 0 and server.settled is not None and server.settled.how == "exited", err
    named = {int(m[1]) for m in re.finditer(r"left (\d+) ", err)}
    assert {tmux.pid, kept.pid} <= named, err
    assert {i for i in tree if compare(i) == SAME} == {i for i in tree if i.pid in named}, err


# -- the Node package ----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_the_node_packages_leave_tests_pass_with_every_supervisor() -> None:
    """`node --test test/leave.test.mjs` (tether(), the preload, mcp-tether/client behind
    the watchdog, the guard and none), with the guard's console script on PATH."""
    bindir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    out = subprocess.run(["node", "--test", "test/leave.test.mjs"], cwd=REPO / "node",
                         capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
                         env=env)
    assert out.returncode == 0, node_tap.report(out)
    assert "# fail 0" in out.stdout and "# skipped 0" in out.stdout, out.stdout[-2000:]
