"""`mcp-tether run`: real guards, real servers, real clients that die; nothing survives.

The servers are small stdlib scripts written into tmp_path (one file, a mode each):
  eof        echo stdin to stdout until EOF, then exit with the given code
  ignore-eof read to EOF, then stay alive on a non-daemon thread (python-sdk issue 2231)
  stubborn   like ignore-eof, and SIGTERM is ignored
  daemonize  double-fork a daemon (setsid: out of the group), then behave like `eof`
  report     on SIGTERM/SIGINT/SIGHUP write the signal's name to a file and exit 0
  deaf       ignore EOF, SIGTERM and SIGINT; append each SIGINT to a file
  hopper     start a pid-hopper (forks and exits in a loop, stdio on /dev/null), then
             behave like `eof`; `hopper-setsid`: each hop also calls setsid
  launcher   fork the real server (setsid, keeps stdio, writes <pidfile>.daemon, behaves
             like `eof`) and exit 0 at once; `launcher-ignore`: the real one ignores EOF
Every process writes its pid to a file first, so the test can check identities later.
Clients: the test itself (pipes like Python hosts, a socketpair like Node hosts), or
`client.py`, which can die (exit, SIGKILL) or close stdin at a chosen moment.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_tether import platform
from mcp_tether.proc import (
    SAME,
    ProcessId,
    cmdline,
    compare,
    identify,
    read_info,
    snapshot,
    wait_gone,
)
from mcp_tether.proc.signals import signal_process
from polling import until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux guard")

FAST = ["--grace", "0.3", "--term-grace", "0.3"]
# For a server expected to exit by itself at EOF: a grace that is never waited when it
# does, so that "it exited by itself" does not also mean "within 0.3 s" on a loaded machine.
ROOMY = ["--grace", "60", "--term-grace", "0.3"]
DEADLINE = 10.0
# How long a guard may take to end its tree before the test calls it hung: only against a
# hang. Eight guards chasing pid-hopping trees at once, beside the suite's other passes on
# 2 cores (load 20), took longer than DEADLINE once; the guard was slower, not wrong.
HANG = 120.0
# The guard reaps what it guards: with a subreaper (Linux, unless switched off for tests).
SUBREAPER = platform.backend.HAS_SUBREAPER and not os.environ.get(platform.NO_SUBREAPER)

SERVER = r'''
import os, signal, sys, threading, time

mode, pidfile = sys.argv[1], sys.argv[2]
code = int(sys.argv[3]) if len(sys.argv) > 3 else 0

def note(path, text):
    with open(path + ".tmp", "w") as fh:
        fh.write(text)
    os.rename(path + ".tmp", path)

def read_to_eof(echo):
    while True:
        data = os.read(0, 65536)
        if not data:
            return
        while echo and data:
            data = data[os.write(1, data):]

def forever():
    while True:
        time.sleep(3600)

if mode == "daemonize":
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            note(pidfile + ".daemon", str(os.getpid()))
            os.write(w, b"x")
            forever()
        os._exit(0)
    os.read(r, 1)
    os.wait()
if mode in ("stubborn", "deaf"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if mode == "deaf":
    def on_int(signum, frame):
        with open(pidfile + ".signals", "a") as fh:
            fh.write("SIGINT\n")
    signal.signal(signal.SIGINT, on_int)
if mode == "report":
    def on_stop(signum, frame):
        note(pidfile + ".signal", signal.Signals(signum).name)
        os._exit(0)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_stop)
note(pidfile, str(os.getpid()))
if mode in ("hopper", "hopper-setsid") and os.fork() == 0:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    while True:  # the pid changes every hop: no snapshot of the tree can pin it down
        if os.fork():
            os._exit(0)
        if mode == "hopper-setsid":
            os.setsid()
if mode in ("launcher", "launcher-ignore"):
    if os.fork():
        os._exit(0)  # the launcher leaves at once; the real server keeps its stdio
    os.setsid()
    note(pidfile + ".daemon", str(os.getpid()))
    if mode == "launcher-ignore":
        threading.Thread(target=forever).start()
if mode == "zombie-leader":
    # A helper in a session of its own that keeps the client's stdio (Node's
    # spawn(..., {detached: true, stdio: "inherit"})), and a main thread that leaves
    # alone: the thread-group leader reads as a zombie (as a multi-threaded runtime's
    # often does first on its way out) while a worker keeps the process alive until
    # SIGTERM. The helper's parent reads as this zombie all along.
    if os.fork() == 0:
        os.setsid()
        note(pidfile + ".daemon", str(os.getpid()))
        forever()
    import ctypes
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])  # the worker's mask too
    def worker():
        signal.sigwait([signal.SIGTERM])
        time.sleep(0.1)
        os._exit(0)
    threading.Thread(target=worker).start()
    sys_exit = {"x86_64": 60, "aarch64": 93}[os.uname().machine]
    ctypes.CDLL(None).syscall(sys_exit, 0)  # this thread only; ctypes drops the GIL
if mode in ("ignore-eof", "stubborn", "deaf", "report"):
    threading.Thread(target=forever).start()  # non-daemon: EOF cannot end the process
read_to_eof(echo=mode in ("eof", "daemonize", "hopper", "hopper-setsid", "launcher",
                          "launcher-ignore"))
sys.exit(code)
'''

CLIENT = r'''
import json, os, signal, socket, subprocess, sys, time

kind, holder, report, action, delay = sys.argv[1:6]
guard_argv = sys.argv[7:]  # after "--"
if kind == "socket":
    mine, theirs = socket.socketpair()
    child_stdin, keep = theirs.fileno(), mine
else:
    child_stdin, w = os.pipe()
    keep = None
guard = subprocess.Popen(guard_argv, stdin=child_stdin)
os.close(child_stdin) if keep is None else theirs.close()
writer = keep.fileno() if keep is not None else w
info = {"guard": guard.pid}
if holder == "1":  # a process that inherited the write end: EOF can never come
    h = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                         pass_fds=(writer,), stdin=subprocess.DEVNULL)
    info["holder"] = h.pid
with open(report + ".tmp", "w") as fh:
    json.dump(info, fh)
os.rename(report + ".tmp", report)
time.sleep(float(delay))
if action == "exit":
    os._exit(0)
if action == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if action == "close":
    if keep is not None:
        keep.close()
    else:
        os.close(w)
    sys.exit(guard.wait())
if action == "kill-guard":  # a host giving up on its child: SIGKILL, stdin still open
    guard.kill()
    guard.wait()
    time.sleep(1.0)  # our end of stdin stays open a while: no EOF comes
    os._exit(0)
while True:  # "wait": until the test kills us
    time.sleep(3600)
'''


# -- helpers -------------------------------------------------------------------------
class Lab:
    """Paths of the fixture scripts and pid files of one test."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.server = tmp / "server.py"
        self.server.write_text(SERVER)
        self.client = tmp / "client.py"
        self.client.write_text(CLIENT)
        self._n = 0

    def pidfile(self) -> str:
        self._n += 1
        return str(self.tmp / f"pid{self._n}")

    def server_cmd(self, mode: str, pidfile: str, code: int = 0) -> list[str]:
        return [sys.executable, str(self.server), mode, pidfile, str(code)]

    def guard_cmd(self, server: list[str], opts: list[str] = FAST) -> list[str]:
        return [sys.executable, "-m", "mcp_tether", "run", *opts, "--", *server]


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return Lab(tmp_path)


def ident_from(path: str, timeout: float = DEADLINE) -> ProcessId:
    """The identity of the process that wrote its pid into `path`."""
    pid = int(until(lambda: os.path.exists(path) and Path(path).read_text(), path, timeout))
    ident = identify(pid)
    assert ident is not None, f"{path}: process {pid} already gone"
    return ident


def ident_if_any(path: str) -> ProcessId | None:
    """Identity of a pid file's writer if the file exists, else None (never started)."""
    if not os.path.exists(path):
        return None
    pid = int(Path(path).read_text())
    # It may be gone already (a zombie read_info still sees): a dead pid is fine.
    from mcp_tether.proc import read_info

    info = read_info(pid)
    return None if info is None else info.ident


def assert_gone(*idents: ProcessId | None) -> None:
    alive = [i for i in idents if i is not None and compare(i) == SAME]
    assert not alive, f"still running: {alive}"


class Guarded:
    """A guard started by the test acting as the client, stdin a pipe or a socketpair."""

    def __init__(self, argv: list[str], tmp: Path, kind: str = "pipe") -> None:
        n = len(list(tmp.glob("guard*.out")))  # several guards in one test: a file each
        self.out = open(tmp / f"guard{n}.out", "w+b")  # noqa: SIM115  # closed in finish()
        self.err = open(tmp / f"guard{n}.err", "w+b")  # noqa: SIM115
        self.sock: socket.socket | None = None
        if kind == "socket":
            self.sock, theirs = socket.socketpair()
            self.proc = subprocess.Popen(argv, stdin=theirs, stdout=self.out, stderr=self.err)
            theirs.close()
        else:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL if kind == "devnull" else subprocess.PIPE,
                stdout=self.out, stderr=self.err
            )
        self.ident = identify(self.proc.pid)

    def close_stdin(self) -> float:
        if self.sock is not None:
            self.sock.close()
        else:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        return time.monotonic()

    def wait(self, timeout: float = DEADLINE) -> int:
        return self.proc.wait(timeout)

    def finish(self) -> tuple[int, bytes, str]:
        """Exit status, stdout bytes, stderr text (after the guard exited)."""
        rc = self.proc.wait(HANG)
        if self.sock is not None:
            self.sock.close()
        elif self.proc.stdin is not None:
            self.proc.stdin.close()
        self.out.seek(0)
        self.err.seek(0)
        out, err = self.out.read(), self.err.read().decode()
        self.out.close()
        self.err.close()
        return rc, out, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def guards() -> Iterator[list[Guarded]]:
    """Guards a test started; SIGKILLed (own children, pid known) if a test failed."""
    started: list[Guarded] = []
    yield started
    for g in started:
        g.kill()
        if g.proc.stdin is not None and not g.proc.stdin.closed:
            g.proc.stdin.close()  # what a guard left behind sees EOF
        for fh in (g.out, g.err):
            if not fh.closed:
                fh.close()


def start(guards: list[Guarded], lab: Lab, server: list[str], kind: str = "pipe",
          opts: list[str] = FAST) -> Guarded:
    g = Guarded(lab.guard_cmd(server, opts), lab.tmp, kind)
    guards.append(g)
    return g


# -- the guarantees -------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["pipe", "socket"])
def test_a_server_that_exits_on_eof_exits_by_itself_and_its_status_is_mirrored(
    lab: Lab, guards: list[Guarded], kind: str
) -> None:
    """1. start an EOF-respecting server that exits 3; 2. close stdin; 3. status is 3."""
    pf = lab.pidfile()
    g = start(guards, lab, lab.server_cmd("eof", pf, 3), kind, ROOMY)
    server = ident_from(pf)
    g.close_stdin()
    rc, out, err = g.finish()
    assert rc == 3
    assert out == b""
    assert "client gone (stdin hang-up); server exited by itself after" in err
    assert len(err.splitlines()) == 1
    assert_gone(server)


@pytest.mark.parametrize("kind", ["pipe", "socket"])
def test_a_server_that_ignores_eof_is_sigtermed_after_the_grace(
    lab: Lab, guards: list[Guarded], kind: str
) -> None:
    """1. a server kept alive by a thread; 2. close stdin; 3. SIGTERM after 0.3 s: 143."""
    pf = lab.pidfile()
    g = start(guards, lab, lab.server_cmd("ignore-eof", pf), kind)
    server = ident_from(pf)
    closed = g.close_stdin()
    rc, out, err = g.finish()
    assert rc == 128 + signal.SIGTERM
    assert time.monotonic() - closed >= 0.3  # the grace was waited (load only adds)
    assert "SIGTERM after" in err and out == b""
    assert_gone(server)


def test_a_server_that_ignores_sigterm_is_sigkilled_after_both_graces(
    lab: Lab, guards: list[Guarded]
) -> None:
    """1. a server ignoring EOF and SIGTERM; 2. close stdin; 3. SIGKILL after 0.6 s: 137."""
    pf = lab.pidfile()
    g = start(guards, lab, lab.server_cmd("stubborn", pf))
    server = ident_from(pf)
    closed = g.close_stdin()
    rc, _, err = g.finish()
    assert rc == 128 + signal.SIGKILL
    assert time.monotonic() - closed >= 0.6
    assert "SIGKILL after" in err
    assert_gone(server)


@pytest.mark.requires_linux_backend(
    "a socket's half-close shows only as POLLRDHUP (Linux); a full close is seen")
def test_a_half_close_of_a_socket_stdin_counts_as_a_hang_up(
    lab: Lab, guards: list[Guarded]
) -> None:
    """1. socket stdin; 2. shutdown(SHUT_WR), socket kept open; 3. the guard acts."""
    pf = lab.pidfile()
    g = start(guards, lab, lab.server_cmd("ignore-eof", pf), "socket")
    server = ident_from(pf)
    assert g.sock is not None
    g.sock.shutdown(socket.SHUT_WR)
    rc, _, err = g.finish()
    assert rc == 128 + signal.SIGTERM
    assert "stdin hang-up" in err
    assert_gone(server)


def test_a_stdin_at_dev_null_is_eof_from_the_start_and_gets_the_ladder(
    lab: Lab, guards: list[Guarded]
) -> None:
    """1. a server that ignores EOF, its stdin /dev/null, its client (us) alive; 2. no
    byte can ever come, so the guard runs its ladder at once: SIGTERM after the grace."""
    pf = lab.pidfile()
    g = start(guards, lab, lab.server_cmd("ignore-eof", pf), "devnull")
    server = ident_from(pf)
    rc, out, err = g.finish()
    assert rc == 128 + signal.SIGTERM
    assert "client gone (stdin hang-up); SIGTERM after" in err and out == b""
    assert_gone(server)


def test_a_server_behind_sh_c_is_ended_with_its_wrapper(lab: Lab, guards: list[Guarded]) -> None:
    """1. sh -c 'server; true' keeps sh as a parent; 2. close stdin; 3. both gone."""
    pf = lab.pidfile()
    inner = " ".join(lab.server_cmd("ignore-eof", pf))
    g = start(guards, lab, ["sh", "-c", f"{inner}; true"])
    server = ident_from(pf)
    g.close_stdin()
    rc, _, err = g.finish()
    assert rc == 128 + signal.SIGTERM
    assert "SIGTERM after" in err
    assert_gone(server)


@pytest.mark.requires_tree(
    "no subreaper and no environment: a daemon that left the tree is out of sight "
    "(test_proc's escapee test)")
def test_a_daemonized_escapee_is_ended_too(lab: Lab, guards: list[Guarded]) -> None:
    """1. the server double-forks a daemon out of its group; 2. close stdin; 3. both gone."""
    pf = lab.pidfile()
    # The daemon left behind is ended once the grace is up, so the grace is waited: the
    # host's 2 s, roomy enough for the server's own exit at EOF before it.
    g = start(guards, lab, lab.server_cmd("daemonize", pf), opts=["--grace", "2"])
    server = ident_from(pf)
    daemon = ident_from(pf + ".daemon")
    g.close_stdin()
    rc, _, err = g.finish()
    assert rc == 0
    assert "server exited by itself" in err
    assert "outside its group" in err and "SIGTERM" in err
    assert_gone(server, daemon)


@pytest.mark.requires_linux_backend("the test switch is read by the seam on Linux")
@pytest.mark.parametrize("mode", ["daemonize", "launcher-ignore"])
def test_with_the_subreaper_switched_off_the_trees_mark_still_finds_what_left_it(
    lab: Lab, guards: list[Guarded], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """MCP_TETHER_NO_SUBREAPER (a test switch): the guard is no subreaper, as on macOS.
    1. a server double-forks a daemon out of its group and session, or a launcher's real
    server setsid's and the launcher exits; 2. the daemon is reparented to init, out of
    the guard's descendants; 3. close stdin: found by the mark in its environment, it is
    ended (SIGTERM), and the guard says it was outside the group."""
    monkeypatch.setenv(platform.NO_SUBREAPER, "1")
    pf = lab.pidfile()
    g = start(guards, lab, lab.server_cmd(mode, pf), opts=["--grace", "2"])
    daemon = ident_from(pf + ".daemon")
    if mode == "launcher-ignore":
        launcher_gone(pf)
    until(lambda: (info := platform.backend.read(daemon.pid)) is not None
          and info.ppid != g.proc.pid, "the daemon reparented away", DEADLINE)
    g.close_stdin()
    rc, _, err = g.finish()
    assert "SIGTERM" in err and ("outside its group" in err or "on its stdio" in err), err
    assert_gone(daemon)


@pytest.mark.parametrize("kind", ["pipe", "socket"])
def test_parent_death_ends_the_server_even_when_another_process_holds_stdin(
    lab: Lab, kind: str
) -> None:
    """1. client starts the guard, a holder inherits stdin's write end; 2. client is
    SIGKILLed; 3. no EOF comes, yet the guard SIGTERMs the server at once: its graces
    are 600 s, so a guard that waited one would outlast the deadline by far."""
    pf, report = lab.pidfile(), str(lab.tmp / "client.json")
    err_path = lab.tmp / "guard.err"
    with open(err_path, "wb") as err_fh:
        client = subprocess.Popen(
            [sys.executable, str(lab.client), kind, "1", report, "wait", "0", "--",
             *lab.guard_cmd(lab.server_cmd("eof", pf),
                            ["--grace", "600", "--term-grace", "600"])],
            stdout=subprocess.DEVNULL, stderr=err_fh,
        )
    holder = None
    try:
        info = json.loads(until(lambda: os.path.exists(report) and Path(report).read_text(),
                                "client report", DEADLINE))
        guard = identify(info["guard"])
        holder = identify(info["holder"])
        assert guard is not None and holder is not None
        server = ident_from(pf)
        client.kill()
        client.wait()
        assert wait_gone(guard, HANG) is not None  # no 600 s grace: straight to SIGTERM
        assert_gone(server)
        err = err_path.read_text()
        assert "parent died, stdin still open" in err and "SIGTERM after" in err
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        if holder is not None:
            signal_process(holder, signal.SIGKILL)


def test_parent_death_ends_a_helper_whose_parent_was_exiting_when_the_tree_was_read(
    lab: Lab,
) -> None:
    """1. a server with a detached helper on its stdio whose main thread has left (the
    leader reads as a zombie, a worker lives on), a holder keeps stdin's write end;
    2. the client is SIGKILLed; 3. the helper is ended too. It was read with a zombie
    for a parent, dropped, and never looked at again: the guard left it running (the
    probe's inherited-writer with a Node server and a detached helper: `orphaned`)."""
    pf, report = lab.pidfile(), str(lab.tmp / "client.json")
    err_path = lab.tmp / "guard.err"
    with open(err_path, "wb") as err_fh:
        client = subprocess.Popen(
            [sys.executable, str(lab.client), "socket", "1", report, "wait", "0", "--",
             *lab.guard_cmd(lab.server_cmd("zombie-leader", pf))],
            stdout=subprocess.DEVNULL, stderr=err_fh,
        )
    holder = helper = None
    try:
        info = json.loads(until(lambda: os.path.exists(report) and Path(report).read_text(),
                                "client report", DEADLINE))
        guard, holder = identify(info["guard"]), identify(info["holder"])
        assert guard is not None and holder is not None
        helper = ident_from(pf + ".daemon")
        pid = int(until(lambda: os.path.exists(pf) and Path(pf).read_text(), pf, DEADLINE))
        leader = until(lambda: (i := read_info(pid)) is not None and i.state == "Z" and i,
                       "the server's leader thread gone, the process alive", DEADLINE)
        server = leader.ident
        client.kill()
        client.wait()
        assert wait_gone(guard, HANG) is not None
        assert_gone(server, helper)
        assert "1 more process of its tree" in err_path.read_text()
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        for ident in (holder, helper):
            if ident is not None:
                signal_process(ident, signal.SIGKILL)


def _supervisor(front: int) -> ProcessId:
    """The guard's supervisor: the front's one child."""
    def find() -> ProcessId | None:
        kids = [p.ident for p in snapshot().values() if p.ppid == front and not p.exited]
        return kids[0] if kids else None

    return until(find, "the guard's supervisor", DEADLINE)  # type: ignore[no-any-return]


@pytest.mark.requires_linux_backend(
    "no front: the supervisor is the guard's pid itself")
@pytest.mark.parametrize("sig", [signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM,
                                 signal.SIGQUIT], ids=lambda s: s.name)
def test_a_stray_signal_to_the_supervisor_ends_the_whole_tree_first(
    lab: Lab, guards: list[Guarded], sig: signal.Signals
) -> None:
    """1. a server that ignores EOF with a daemon outside its group; 2. a signal whose
    default action ends a process reaches the supervisor (not the front); 3. the server
    and the daemon are gone and the front exits: the ladder ran first (PDEATHSIG alone
    would have spared the daemon)."""
    pf = lab.pidfile()
    g = start(guards, lab, ["sh", "-c", " ".join(lab.server_cmd("daemonize", pf)) + "; true"])
    server, daemon = ident_from(pf), ident_from(pf + ".daemon")
    supervisor = _supervisor(g.proc.pid)
    assert signal_process(supervisor, sig) == "sent"
    rc, _out, err = g.finish()
    assert_gone(server, daemon)
    assert wait_gone(supervisor, HANG) is not None
    assert f"{sig.name}" in err, err
    assert rc == 128 + signal.SIGTERM, err


def test_a_sigkilled_guard_takes_its_server_along(lab: Lab, guards: list[Guarded]) -> None:
    """1. a stubborn server; 2. SIGKILL the guard; 3. PDEATHSIG kills the server (Linux),
    or the watcher the guard left where there is none (`proc.watcher`: darwin, portable)."""
    pf = lab.pidfile()
    g = start(guards, lab, lab.server_cmd("stubborn", pf))
    server = ident_from(pf)
    g.proc.kill()
    g.proc.wait()
    assert wait_gone(server, HANG) is not None


def test_a_guard_sigkilled_between_the_spawn_and_naming_its_server_leaves_nothing(
    lab: Lab, guards: list[Guarded]
) -> None:
    """Issue 55 item 3 (seed 453141828 round 17, portable): 1. a stubborn server; the
    guard's test-only pause (`session.PAUSE_ENV`) holds it right after the spawn, before
    it names the server to its watcher; 2. SIGKILL the guard there (the supervisor, not a
    front), stdin still open; 3. the spawned child is gone and no server of that tree is
    running: the child waits for the guard's go-ahead before exec, so it never ran
    (watcher: darwin, portable), or PDEATHSIG ended it (Linux). Before the gate, the
    portable backend's watcher knew nothing (no name, no environment to read) and the
    stubborn server outlived its guard."""
    from mcp_tether.guard.session import PAUSE_ENV

    pf, paused = lab.pidfile(), str(lab.tmp / "paused")
    os.environ[PAUSE_ENV] = paused  # the guard's environment: it inherits ours
    try:
        g = start(guards, lab, lab.server_cmd("stubborn", pf))
    finally:
        del os.environ[PAUSE_ENV]
    words = until(lambda: os.path.exists(paused) and Path(paused).read_text().split(),
                  "the guard's pause after the spawn", DEADLINE)
    guard, child = identify(int(words[0])), identify(int(words[1]))
    assert guard is not None and child is not None
    assert signal_process(guard, signal.SIGKILL) == "sent"
    assert wait_gone(guard, HANG) is not None
    assert wait_gone(child, HANG) is not None, "the server outlived its SIGKILLed guard"
    g.proc.wait(HANG)  # the front (Linux) mirrors its supervisor's death
    server = ident_if_any(pf)
    assert server is None or compare(server) != SAME, f"the server ran on: {server}"
    if not platform.has_pdeathsig():  # gated: the program never even started
        assert not os.path.exists(pf), "the server ran before the watcher knew its name"
    # The watcher (a fork of the guard: its argv names pf too) leaves once the guard is
    # gone; nothing else of the tree may be there at all.
    until(lambda: not carrying(pf), "every process of the tree gone", HANG)


def test_a_sigkilled_guards_eof_honouring_server_still_ends_at_the_clients_eof(
    lab: Lab, guards: list[Guarded]
) -> None:
    """What every backend keeps (the portable one's whole promise here): 1. a server
    that honours EOF; 2. SIGKILL the guard; 3. the client closes its end: server gone."""
    pf = lab.pidfile()
    g = start(guards, lab, lab.server_cmd("eof", pf))
    server = ident_from(pf)
    g.proc.kill()
    g.proc.wait()
    g.close_stdin()
    assert wait_gone(server, HANG) is not None


@pytest.mark.parametrize("shape", [
    "sh", pytest.param("daemonize", marks=pytest.mark.requires_tree(
        "no subreaper and no environment: the daemon is out of the watcher's sight"))])
def test_a_sigkilled_guard_pid_still_ends_the_servers_whole_tree(
    lab: Lab, guards: list[Guarded], shape: str
) -> None:
    """1. a server behind `sh -c` that ignores EOF, or one with a daemon outside its group;
    2. the host SIGKILLs the guard's pid while it still holds stdin open (no EOF comes);
    3. every process of the tree is gone: the pid the host knows is a thin front, and the
    supervisor behind it takes the front's death as its parent's death (the ladder,
    Linux); without a front, the watcher the guard left takes the guard's death so
    (darwin: kqueue on the guard; the daemon found by its mark). Before the front, the
    kernel's PDEATHSIG ended the direct child only."""
    pf = lab.pidfile()
    if shape == "sh":
        inner = " ".join(lab.server_cmd("ignore-eof", pf))
        g = start(guards, lab, ["sh", "-c", f"{inner}; true"])
        tree = [ident_from(pf)]
    else:
        g = start(guards, lab, lab.server_cmd("daemonize", pf))
        tree = [ident_from(pf), ident_from(pf + ".daemon")]
    g.proc.kill()  # our own unreaped child: the pid the host knows
    g.proc.wait()
    for ident in tree:
        assert wait_gone(ident, HANG) is not None, f"{ident} outlived the guard's SIGKILL"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stop_signal_to_the_guard_is_forwarded_to_the_server(
    lab: Lab, guards: list[Guarded], sig: signal.Signals
) -> None:
    """1. a server that reports the signal it gets; 2. signal the guard; 3. it got it."""
    pf = lab.pidfile()
    g = start(guards, lab, lab.server_cmd("report", pf))
    server = ident_from(pf)
    assert g.ident is not None
    signal_process(g.ident, sig)
    rc, out, err = g.finish()
    assert rc == 0
    assert Path(pf + ".signal").read_text() == sig.name
    assert f"got {sig.name}, forwarded to the server" in err
    assert out == b""
    assert_gone(server)


def test_a_second_sigint_kills_at_once(lab: Lab, guards: list[Guarded]) -> None:
    """1. a server deaf to EOF, SIGTERM, SIGINT, 600 s graces; 2. SIGINT, seen by the
    server; 3. a second SIGINT: SIGKILL without waiting out the graces (the guard is gone
    within `finish`'s deadline, far below one grace)."""
    pf = lab.pidfile()
    g = start(guards, lab, lab.server_cmd("deaf", pf),
              opts=["--grace", "600", "--term-grace", "600"])
    server = ident_from(pf)
    assert g.ident is not None
    signal_process(g.ident, signal.SIGINT)
    until(lambda: os.path.exists(pf + ".signals"), "the forwarded SIGINT", DEADLINE)
    signal_process(g.ident, signal.SIGINT)
    rc, _, err = g.finish()
    assert rc == 128 + signal.SIGKILL
    assert "second SIGINT" in err
    assert_gone(server)


def carrying(text: str) -> list[ProcessId]:
    """Live processes whose argv mentions `text` (a pid file path is unique to a test,
    and every process of a fixture tree carries it, hops and daemons included)."""
    out = []
    for info in snapshot().values():
        if not info.exited and info.pid != os.getpid() and text in " ".join(cmdline(info.pid)):
            out.append(info.ident)
    return out


def launcher_gone(pf: str) -> None:
    """Wait until the launcher that wrote `pf` has exited and been reaped."""
    pid = int(until(lambda: os.path.exists(pf) and Path(pf).read_text(), pf, DEADLINE))
    until(lambda: identify(pid) is None, "the launcher's exit", DEADLINE)


@pytest.mark.requires_linux_backend(
    "no subreaper: a pid-hopper's hops outrun every scan (each lives less than a look "
    "takes) and nothing says a child is left")
@pytest.mark.skipif(not SUBREAPER, reason="the subreaper is switched off: as on macOS, a "
                    "pid-hopper's hops outrun every scan")
@pytest.mark.parametrize("mode", ["hopper", "hopper-setsid"])
def test_pid_hopping_descendants_are_ended_however_fast_they_fork(
    lab: Lab, guards: list[Guarded], mode: str
) -> None:
    """1. eight guarded servers, each with a descendant that forks and exits in a loop
    (without and with setsid); 2. every client closes stdin; 3. once the guards have
    exited, no process of any of those trees is left anywhere."""
    started = []
    for _ in range(8):
        pf = lab.pidfile()
        started.append((start(guards, lab, lab.server_cmd(mode, pf)), pf))
    for _g, pf in started:
        ident_from(pf)
    for g, _pf in started:
        g.close_stdin()
    for g, _pf in started:
        rc, _out, err = g.finish()
        # 0, or 143 when a loaded machine kept the server from leaving within the grace
        assert rc in (0, 128 + signal.SIGTERM), err
    left = [i for _g, pf in started for i in carrying(pf)]
    assert not left, f"hoppers outlived their guard: {left}"


@pytest.mark.requires_tree(
    "no subreaper and no environment: a launcher's daemonized server is out of sight")
def test_a_daemonizing_launcher_hands_over_and_the_guard_keeps_guarding(
    lab: Lab, guards: list[Guarded], monkeypatch: pytest.MonkeyPatch
) -> None:
    """1. a launcher forks the real server (setsid, same stdio) and exits 0 at once;
    2. the guard stays: the real server still answers through it; 3. on EOF the real
    server exits 3 by itself and the guard mirrors 3 (with a subreaper: it reaps the
    real server; without one, found by its mark, it is not our child and its status is
    not ours to see: the launcher's 0).

    The client closes only once the guard has said it took over: without a subreaper
    the real server is not the guard's child, and one that got its EOF and exited
    before the guard's first look after the launcher's exit (3 ms, on a quiet machine)
    left no trace for the guard to see (4 runs in 120 on darwin-sim, 1 in 100 on Linux
    without the subreaper)."""
    monkeypatch.setenv("MCP_TETHER_LOG", "info")  # the guard's take-over line
    pf = lab.pidfile()
    g = start(guards, lab, lab.server_cmd("launcher", pf, 3), opts=ROOMY)
    daemon = ident_from(pf + ".daemon")
    launcher_gone(pf)
    assert g.proc.stdin is not None
    g.proc.stdin.write(b"ping\n")
    g.proc.stdin.flush()
    until(lambda: Path(g.out.name).read_bytes() == b"ping\n", "the real server's answer", DEADLINE)
    until(lambda: b"still on its stdio" in Path(g.err.name).read_bytes(),
          "the guard's take-over", DEADLINE)
    assert g.proc.poll() is None and compare(daemon) == SAME
    g.close_stdin()
    rc, out, err = g.finish()
    assert rc == (3 if SUBREAPER else 0), err
    assert "leaving 1 process on its stdio" in err
    assert_gone(daemon)


@pytest.mark.requires_tree(
    "no subreaper and no environment: a launcher's daemonized server is out of sight")
def test_a_launchers_server_that_ignores_eof_gets_the_ladder_when_the_client_goes(
    lab: Lab, guards: list[Guarded]
) -> None:
    """1. a launcher whose real server ignores EOF; 2. the launcher exits, the guard
    guards on; 3. the client closes stdin: SIGTERM after the grace, status 143 (without
    a subreaper the real server's status is not seen: the launcher's 0)."""
    pf = lab.pidfile()
    g = start(guards, lab, lab.server_cmd("launcher-ignore", pf))
    daemon = ident_from(pf + ".daemon")
    launcher_gone(pf)
    assert compare(daemon) == SAME and g.proc.poll() is None
    g.close_stdin()
    rc, _out, err = g.finish()
    assert rc == (128 + signal.SIGTERM if SUBREAPER else 0), err
    assert "by SIGTERM" in err
    assert_gone(daemon)


@pytest.mark.parametrize("opts", [["--grace", "nan"], ["--grace", "inf"],
                                  ["--term-grace", "-1"], ["--term-grace=inf"]])
def test_a_non_finite_or_negative_duration_is_a_usage_error_before_anything_runs(
    tmp_path: Path, opts: list[str]
) -> None:
    """exit 2, one line naming the option, no traceback, the command never started."""
    flag = tmp_path / "started"
    p = subprocess.run(
        [sys.executable, "-m", "mcp_tether", "run", *opts, "--", "touch", str(flag)],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=DEADLINE,
    )
    assert p.returncode == 2 and p.stdout == b""
    err = p.stderr.decode()
    assert "Traceback" not in err and opts[0].split("=")[0] in err
    assert not flag.exists()


@pytest.mark.parametrize("opts", [["--grace", "1"], ["--term-grace=1"]])
def test_the_guards_options_after_the_server_command_are_refused_with_a_hint(
    tmp_path: Path, opts: list[str]
) -> None:
    """`run touch F --grace 1` would pass `--grace 1` to the server: exit 2, one line
    naming the option and showing `--`, the command never started."""
    flag = tmp_path / "started"
    p = subprocess.run(
        [sys.executable, "-m", "mcp_tether", "run", "touch", str(flag), *opts],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=DEADLINE,
    )
    assert p.returncode == 2 and p.stdout == b""
    lines = p.stderr.decode().splitlines()
    assert len(lines) == 1 and opts[0].split("=")[0] in lines[0]
    assert f"`mcp-tether run {' '.join(opts)} -- touch {flag}`" in lines[0]  # for the guard
    assert f"`mcp-tether run -- touch {flag} {' '.join(opts)}`" in lines[0]  # for the server
    assert not flag.exists()


@pytest.mark.parametrize(
    ("cmd", "rc", "words"),
    [
        (["/nonexistent/server"], 127, "command not found"),
        (["no-such-server-xyz"], 127, "command not found"),
        (["NOTEXEC"], 126, "cannot execute"),
        (["DIR"], 126, "cannot execute"),
        ([], 2, "no command"),
    ],
)
def test_bad_commands_give_shell_exit_codes_and_one_line(
    tmp_path: Path, cmd: list[str], rc: int, words: str
) -> None:
    """127 missing, 126 not executable, 2 no command: one stderr line, no stdout."""
    notexec = tmp_path / "notexec"
    notexec.write_text("#!/bin/sh\n")
    cmd = [str(notexec) if c == "NOTEXEC" else str(tmp_path) if c == "DIR" else c for c in cmd]
    p = subprocess.run(
        [sys.executable, "-m", "mcp_tether", "run", "--", *cmd],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=DEADLINE,
    )
    assert p.returncode == rc
    assert p.stdout == b""
    lines = p.stderr.decode().splitlines()
    assert len(lines) == 1 and words in lines[0] and lines[0].startswith("mcp-tether run: ")


@pytest.mark.parametrize("kind", ["pipe", "socket"])
def test_fifty_megabytes_pass_through_byte_identical(
    lab: Lab, guards: list[Guarded], kind: str
) -> None:
    """1. an echo server; 2. 50 MB of random bytes in; 3. the same 50 MB out."""
    data = random.Random(7).randbytes(50 * 1024 * 1024)
    pf = lab.pidfile()
    g = start(guards, lab, lab.server_cmd("eof", pf), kind, ROOMY)

    def feed() -> None:
        if g.sock is not None:
            g.sock.sendall(data)
        else:
            assert g.proc.stdin is not None
            g.proc.stdin.write(data)
            g.proc.stdin.flush()
        g.close_stdin()

    t = threading.Thread(target=feed)
    t.start()
    t.join(DEADLINE * 3)
    rc, out, err = g.finish()
    assert rc == 0
    assert len(out) == len(data) and out == data
    assert "exited by itself" in err


@pytest.mark.requires_linux_backend(
    "the portable backend is psutil: `run` loads it")
def test_run_imports_nothing_heavy() -> None:
    """`run` is on every guarded server's launch path: no psutil, rich, MCP SDK, asyncio;
    and a plain `run -- CMD` is read without argparse (nor the re, shutil and gettext it
    pulls in: ~10 ms)."""
    p = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mcp_tether", "run", "--", "true"],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=DEADLINE,
    )
    assert p.returncode == 0 and p.stdout == b""
    modules = {line.rsplit("|", 1)[-1].strip() for line in p.stderr.decode().splitlines()
               if line.startswith("import time:")}
    assert "mcp_tether.watch" in modules  # the guard's path ran (import_module is not timed)
    heavy = {m for m in modules if m.split(".")[0] in ("psutil", "rich", "mcp", "asyncio",
                                                       "subprocess", "logging", "json",
                                                       "argparse", "re", "shutil")}
    assert not heavy


# -- randomized: the client dies at a random moment ------------------------------------
FIXTURES = ["eof", "ignore-eof", "stubborn", "daemonize", "sh-ignore-eof", "hopper",
            "hopper-setsid", "launcher", "launcher-ignore"]
ACTIONS = ["exit", "kill", "close", "kill-guard"]
ROUNDS = int(os.environ.get("MCP_TETHER_GUARD_ROUNDS", "30"))
# What the portable backend promises (docs/platforms.md): no escapes (no subreaper, no
# environment to read), no socket half-close (no POLLRDHUP); a SIGKILLed guard's watcher
# ends its group (no PDEATHSIG, no front).
PORTABLE_FIXTURES = ["eof", "ignore-eof", "stubborn", "sh-ignore-eof"]
PORTABLE_ACTIONS = ["exit", "kill", "close", "kill-guard"]
# The darwin backend's (darwin-sim): escapes found by the tree's mark, launchers handed
# over, the watcher; not pid-hoppers, not a socket's half-close (a full close is seen).
TREE_FIXTURES = ["eof", "ignore-eof", "stubborn", "daemonize", "sh-ignore-eof", "launcher",
                 "launcher-ignore"]
TREE = platform.backend.channels().environ(os.getpid()) is not None


@pytest.mark.slow
@pytest.mark.timeout(900)  # 200 rounds in CI; a kill-guard round lasts its client's 1 s
def test_the_client_dying_at_random_moments_leaves_no_survivor(lab: Lab) -> None:
    """Each round: a fixture, a client death (exit, SIGKILL, stdin close) after a random
    delay, pipe or socket; afterwards the guard and every process of the tree are gone.
    Seed with MCP_TETHER_SEED to replay."""
    seed = int(os.environ.get("MCP_TETHER_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    # A bystander outside every scenario: no round may ever signal it.
    catch_all = (
        "import signal\n"
        "for s in (1, 2, 15): signal.signal(s, lambda *a: exit(99))\n"
        "signal.pause()"
    )
    bystander = subprocess.Popen([sys.executable, "-c", catch_all])
    try:
        _random_rounds(lab, rng, seed)
        assert bystander.poll() is None, f"seed {seed}: the bystander got a signal"
    finally:
        bystander.kill()
        bystander.wait()


def _random_rounds(lab: Lab, rng: random.Random, seed: int) -> None:
    for n in range(ROUNDS):
        if platform.BACKEND == "linux" and SUBREAPER:
            fixture, action = rng.choice(FIXTURES), rng.choice(ACTIONS)
            kind, delay = rng.choice(["pipe", "socket"]), rng.uniform(0, 0.4)
        elif TREE:
            fixture, action = rng.choice(TREE_FIXTURES), rng.choice(ACTIONS)
            kind, delay = rng.choice(["pipe", "socket"]), rng.uniform(0, 0.4)
        else:
            fixture, action = rng.choice(PORTABLE_FIXTURES), rng.choice(PORTABLE_ACTIONS)
            kind, delay = "pipe", rng.uniform(0, 0.4)
        where = f"seed {seed} round {n}: {fixture} {action} {kind} after {delay:.3f} s"
        pf, report = lab.pidfile(), str(lab.tmp / f"client{n}.json")
        if fixture == "sh-ignore-eof":
            server = ["sh", "-c", " ".join(lab.server_cmd("ignore-eof", pf)) + "; true"]
        else:
            server = lab.server_cmd(fixture, pf)
        err_path = lab.tmp / f"guard{n}.err"
        with open(err_path, "wb") as err_fh:
            client = subprocess.Popen(
                [sys.executable, str(lab.client), kind, "0", report, action, f"{delay}", "--",
                 *lab.guard_cmd(server, ["--grace", "0.2", "--term-grace", "0.2"])],
                stdout=subprocess.DEVNULL, stderr=err_fh,
            )
        try:
            info = json.loads(until(lambda r=report: os.path.exists(r) and Path(r).read_text(),
                                    f"{where}: client report", HANG))
            guard = identify(info["guard"])
            client.wait(HANG)
            if guard is not None:
                assert wait_gone(guard, HANG) is not None, f"{where}: guard still running"
            if action == "kill-guard":  # the front is gone; its supervisor ends the tree
                def ended(pf: str = pf) -> bool:
                    server = ident_if_any(pf)
                    return not carrying(pf) and (server is None or compare(server) != SAME)

                until(ended, f"{where}: the tree ended after the guard's pid was SIGKILLed",
                      HANG)  # a stubborn server's whole ladder, beside 4 CPU burners
            left = [ident_if_any(pf), ident_if_any(pf + ".daemon")]
            alive = [i for i in left if i is not None and compare(i) == SAME]
            alive += [i for i in carrying(pf) if i not in alive]  # hops, helpers
            assert not alive, f"{where}: survivors {alive}; guard said {err_path.read_text()!r}"
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()


def test_the_guard_leaves_every_process_primitive_to_the_core() -> None:
    """No fork, kill, wait, setsid, wakeup fd or prctl in guard/: proc/ does them."""
    import mcp_tether.guard as pkg

    forbidden = ("os.kill", "os.killpg", "os.waitpid", "os.waitid", "os.fork", "os.setsid",
                 "pidfd_send_signal", "set_wakeup_fd", "prctl", "signal.signal(")
    here = Path(pkg.__file__).parent
    hits = [f"{f.name}: {word}" for f in here.glob("*.py") for word in forbidden
            if word in f.read_text().split('"""', 2)[-1]]  # code, not the module doc
    assert not hits
