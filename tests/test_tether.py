"""The library helper (`mcp_tether.run`, `tethered`, `on_shutdown`) on real processes.

Each test writes a small server into tmp_path, starts it with pipes (or a socketpair, as
Node hosts do), speaks the MCP handshake to it, then ends the client one way or another
and checks how the server went: exit status, the one stderr line, and a hook log proving
each cleanup hook ran exactly once. Waits are pidfd/poll waits with deadlines, never
sleeps. The in-process tests at the end drive a `ShutdownCoordinator` with a recording `exit`.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import tether_venvs
from mcp_tether import platform
from mcp_tether import tether as helper
from mcp_tether.tether import hooks as hook_registry
from polling import until

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX process semantics")


@pytest.fixture(scope="session")
def interpreters() -> dict[str, str | None]:
    return tether_venvs.interpreters_by_sdk()

SRC = Path(__file__).resolve().parents[1] / "src"
PROTOCOL = "2025-11-25"
EXIT_DEADLINE = 30.0  # a ceiling for "exits at all" (a held server never would); how fast is
# bench/bench_helper.py's, and "its own way" is `assert_ended_its_own_way`
# A ceiling for "starts, imports its SDK and exits": importing mcp took over 20 s of wall
# time (0.8 s of CPU) at a load average of 120 on this project's 2-core machine.
STARTUP_CEILING = 120.0

# What a test gives the helper, where the guarantee under test is not its deadline:
# time enough that no step of a shutdown is cut on a loaded machine (the deadline and
# the host window a drain must fit in, both generous; a test that passes waits none of
# it). A test of a cut-off or a clamp sets its own.
ROOMY = {"DEADLINE": "20", "HOST_WINDOW": "60"}

# One server script for every SDK line; argv: SDK HOOK_LOG [options].
SERVER = textwrap.dedent(
    '''
    import asyncio, concurrent.futures, os, sys, threading, time
    from contextlib import asynccontextmanager
    import anyio
    import mcp_tether

    sdk, hook_log, *opts = sys.argv[1:]
    opts = set(opts)
    if sdk == "mcp2":
        from mcp.server.mcpserver import MCPServer as Server
    elif sdk == "mcp1":
        from mcp.server.fastmcp import FastMCP as Server
    else:
        from fastmcp import FastMCP as Server

    def note(what):
        with open(hook_log, "a") as fh:
            fh.write(what + "\\n")

    async def forever():
        while True:
            await anyio.sleep(3600)

    @asynccontextmanager
    async def lifespan(_server):
        if sdk == "fastmcp":  # it exits the lifespan in another task: no task group there
            yield {}
            return
        async with anyio.create_task_group() as tg:
            tg.start_soon(forever)
            yield {}
            if "stuck-lifespan" not in opts:  # a well-behaved lifespan cancels its group
                tg.cancel_scope.cancel()

    mcp = Server("helper-test", lifespan=lifespan)

    @mcp.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    @mcp.tool()
    async def nap(seconds: float) -> str:
        """Sleep, then answer."""
        note("nap-start")
        await anyio.sleep(seconds)
        note("nap-end")
        return "rested"

    @mcp_tether.on_shutdown
    def first_registered():
        note("first")

    if "raise-hook" in opts:
        @mcp_tether.on_shutdown
        def broken():
            note("broken")
            raise RuntimeError("hook failure on purpose")

    if "hang-hook" in opts:
        @mcp_tether.on_shutdown
        def hung():
            note("hung")
            threading.Event().wait()

    @mcp_tether.on_shutdown
    async def last_registered():
        await asyncio.sleep(0)
        note("last")

    # Everything that normally holds a process after run() returns:
    threading.Thread(target=threading.Event().wait, name="flusher", daemon=False).start()
    concurrent.futures.ThreadPoolExecutor(1).submit(threading.Event().wait)

    deadline = float(os.environ.get("DEADLINE", "1.0"))
    drain = os.environ.get("DRAIN")
    if os.environ.get("HOST_WINDOW"):  # the test's room: no host's 2 s ladder here
        import mcp_tether.tether.coordinator
        mcp_tether.tether.coordinator.HOST_WINDOW = float(os.environ["HOST_WINDOW"])
    note("ready")
    mcp_tether.run(mcp, deadline=deadline, drain=None if drain is None else float(drain))
    '''
)

# A low-level program (mcp 2.x `Server` + `stdio_server`) inside `tethered()`.
LOWLEVEL = textwrap.dedent(
    """
    import contextlib, sys, threading
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    import mcp_tether

    hook_log, *opts = sys.argv[1:]

    def note(what):
        with open(hook_log, "a") as fh:
            fh.write(what + "\\n")

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[])

    @contextlib.asynccontextmanager
    async def lifespan(_server):
        try:
            yield {}
        finally:
            await anyio.sleep(0.01)  # an await that a cancelled unwind would cut
            note("lifespan-finally")

    server = Server("lowlevel", on_list_tools=list_tools, lifespan=lifespan)

    async def main():
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    with mcp_tether.tethered(deadline=1.0) as t:
        t.add_cleanup(lambda: note("cleanup"))
        if "bind" in opts:
            t.bind(server)
        threading.Thread(target=threading.Event().wait, daemon=False).start()
        note("ready")
        anyio.run(main)
    note("after-with")  # never: leaving the block exits the process
    """
)


# -- interpreters for each SDK line ----------------------------------------------------------

def assert_ended_its_own_way(err: str) -> None:
    """What "exits promptly" stands for, as outcomes rather than milliseconds: the
    tether's one line names no deadline that ran out (the server's own shutdown cut off
    or cancelled, a hook cut off or skipped). How fast: bench/bench_helper.py."""
    said = [ln for ln in err.splitlines() if ln.startswith("mcp-tether: ")]
    assert said, err
    last = said[-1]
    if platform.backend.NAME == "portable":
        # No POSIX way to reopen a pipe's write end (`backend.reopen` is None there), so
        # the SDK's reader thread blocked on a pipe stdin cannot be woken: its session
        # ends and the transport is left waiting, by design (docs/platforms.md). That
        # is its own way on that backend, not a deadline that ran out.
        last = last.replace("server's own shutdown session ended; its stdio transport "
                            "still waits on stdin", "")
    assert not any(w in last for w in ("server's own shutdown", "cut off", "skipped")), err


def _python_for(interpreters: dict[str, str | None], sdk: str) -> str:
    py = interpreters[sdk]
    if py is None:
        requirement, _, var = tether_venvs.SIDE_VENVS[sdk]
        pytest.skip(f"{sdk}: could not install {requirement!r}; set {var} to an interpreter")
    return py


# -- a tiny MCP client -----------------------------------------------------------------------


@dataclass
class Served:
    """A server process we spawned, with our ends of its stdin and stdout."""

    proc: subprocess.Popen[bytes]
    stdin: Any  # a file or a socket: whatever `close_stdin` closes
    stdout_fd: int
    stderr_path: Path
    hook_log: Path
    buffered: bytes = b""
    closed: list[Any] = field(default_factory=list)

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        if isinstance(self.stdin, socket.socket):
            self.stdin.sendall(data)
        else:
            self.stdin.write(data)
            self.stdin.flush()

    def receive(self, timeout: float = 60.0) -> dict[str, Any]:
        """The next line; given up once the server's tree has been idle for `timeout` s
        (a server still importing on a loaded machine is slow, not hung), or after
        6 x `timeout` however busy (the probe's rule, `proc.progress`)."""
        from mcp_tether.proc.progress import look, moved

        start = time.monotonic()
        deadline, seen = start + timeout, look(os.getpid())
        while b"\n" not in self.buffered:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([self.stdout_fd], [], [], max(0.0, min(remaining, 1.0)))
            if not ready:
                now, looked = time.monotonic(), look(os.getpid())
                if moved(seen, looked):
                    deadline = min(start + 6 * timeout, now + timeout)
                seen = looked
                if now < deadline:
                    continue
                raise AssertionError(f"no answer within {timeout} s of idleness; "
                                     f"stderr: {self.stderr()}")
            chunk = os.read(self.stdout_fd, 65536)
            if not chunk:
                raise AssertionError(f"server closed stdout; stderr: {self.stderr()}")
            self.buffered += chunk
        line, _, self.buffered = self.buffered.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    def request(self, rid: int, method: str, params: dict[str, Any] | None = None) -> Any:
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        answer = self.receive()
        assert answer.get("id") == rid, answer
        assert "result" in answer, answer
        return answer["result"]

    def handshake(self) -> None:
        init = {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "mcp-tether-tests", "version": "0"},
        }
        assert "serverInfo" in self.request(1, "initialize", init)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.request(2, "tools/list")

    def close_stdin(self) -> None:
        if isinstance(self.stdin, socket.socket):
            self.stdin.shutdown(socket.SHUT_WR)  # Node's end(): a half-close
        self.stdin.close()

    def wait(self, timeout: float = EXIT_DEADLINE) -> tuple[int, float]:
        """(exit status, seconds waited); the instant of exit comes from a pidfd."""
        t0 = time.monotonic()
        if hasattr(os, "pidfd_open"):
            fd = os.pidfd_open(self.proc.pid)
            try:
                select.select([fd], [], [], timeout)
            finally:
                os.close(fd)
            elapsed = time.monotonic() - t0
            status = self.proc.wait(timeout=0.5)
        else:  # pragma: no cover - Linux is first class here
            status = self.proc.wait(timeout=timeout)
            elapsed = time.monotonic() - t0
        return status, elapsed

    def still_running_after(self, seconds: float) -> bool:
        """True if the process is still alive after `seconds` (a bounded wait, not a sleep)."""
        try:
            self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return True
        return False

    def hooks(self) -> list[str]:
        return self.hook_log.read_text().split() if self.hook_log.exists() else []

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def finish(self) -> None:
        """Never leave it running: SIGKILL (it is our own child) and reap."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in [self.stdin, *self.closed]:
            with contextlib.suppress(OSError):
                f.close()
        with contextlib.suppress(OSError):
            os.close(self.stdout_fd)


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Any]:
    started: list[Served] = []

    def _spawn(argv: list[str], *, wire: str = "pipe", env: dict[str, str] | None = None) -> Served:
        n = len(started)
        stderr_path = tmp_path / f"stderr-{n}.txt"
        hook_log = tmp_path / f"hooks-{n}.txt"
        full_env = {**os.environ, "PYTHONPATH": str(SRC), **ROOMY, **(env or {})}
        full_env.pop("MCP_TETHER_LOG", None)
        argv = [a.replace("{hooks}", str(hook_log)) for a in argv]
        with open(stderr_path, "wb") as err:
            if wire == "socketpair":  # what libuv gives a Node host's children
                ours_in, theirs_in = socket.socketpair()
                ours_out, theirs_out = socket.socketpair()
                proc = subprocess.Popen(
                    argv, stdin=theirs_in, stdout=theirs_out, stderr=err, env=full_env
                )
                theirs_in.close()
                theirs_out.close()
                served = Served(proc, ours_in, ours_out.detach(), stderr_path, hook_log)
            else:
                proc = subprocess.Popen(
                    argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=full_env
                )
                assert proc.stdin is not None and proc.stdout is not None
                served = Served(
                    proc,
                    proc.stdin,
                    os.dup(proc.stdout.fileno()),
                    stderr_path,
                    hook_log,
                    closed=[proc.stdout],
                )
        started.append(served)
        return served

    yield _spawn
    for served in started:
        served.finish()


@pytest.fixture
def server_script(tmp_path: Path) -> Path:
    path = tmp_path / "server.py"
    path.write_text(SERVER)
    return path


def _wait_for_file_line(path: Path, line: str, timeout: float = 60.0) -> None:
    """Poll a file for a line with a deadline (the server's own 'ready' note)."""
    until(lambda: path.exists() and line in path.read_text().split(),
          f"{line!r} in {path.name}", timeout)


# -- the transport ending ----------------------------------------------------------------------


@pytest.mark.parametrize("wire", ["pipe", "socketpair"])
def test_closing_stdin_ends_a_server_held_by_thread_executor_and_task_group(
    spawn: Any, server_script: Path, wire: str
) -> None:
    """Closing stdin ends the server promptly with status 0; each hook ran exactly once."""
    # 1. Start the server (non-daemon thread, executor worker, lifespan task group).
    s = spawn([sys.executable, str(server_script), "mcp2", "{hooks}"], wire=wire)
    # 2. Handshake and list tools: it is really serving.
    s.handshake()
    # 3. Close stdin: the client is gone.
    s.close_stdin()
    status, _ = s.wait()
    # 4. It exited cleanly, its own way (nothing cut off), every hook once, newest first.
    assert status == 0, s.stderr()
    assert_ended_its_own_way(s.stderr())
    assert s.hooks() == ["ready", "last", "first"]
    if wire == "pipe" or platform.backend.SOCKET_HANGUP:
        # The portable backend cannot see a socket's half-close (no POLLRDHUP): there the
        # SDK reads the EOF itself and the server stops all the same, as asserted above.
        assert "mcp-tether: client gone (stdin closed), cleanup" in s.stderr()


@pytest.mark.parametrize("sdk", ["mcp1", "fastmcp"])
def test_closing_stdin_ends_servers_on_the_other_sdk_lines(
    spawn: Any, server_script: Path, interpreters: dict[str, str | None], sdk: str
) -> None:
    """mcp 1.x FastMCP and the standalone fastmcp exit on EOF like MCPServer does."""
    py = _python_for(interpreters, sdk)
    s = spawn([py, str(server_script), sdk, "{hooks}"], env={"FASTMCP_SHOW_SERVER_BANNER": "0"})
    s.handshake()
    s.close_stdin()
    status, _ = s.wait()
    assert status == 0, s.stderr()
    assert_ended_its_own_way(s.stderr())
    assert s.hooks() == ["ready", "last", "first"]


@pytest.mark.parametrize("sdk", ["mcp2", "mcp1", "fastmcp"])
def test_sigterm_exits_143_after_running_the_hooks_once(
    spawn: Any, server_script: Path, interpreters: dict[str, str | None], sdk: str
) -> None:
    """SIGTERM while connected: status 128+15, hooks once, the signal named on stderr."""
    py = _python_for(interpreters, sdk)
    s = spawn([py, str(server_script), sdk, "{hooks}"], env={"FASTMCP_SHOW_SERVER_BANNER": "0"})
    s.handshake()
    s.proc.send_signal(signal.SIGTERM)
    status, _ = s.wait()
    assert status == 128 + signal.SIGTERM, s.stderr()
    assert_ended_its_own_way(s.stderr())
    assert s.hooks() == ["ready", "last", "first"]
    assert "mcp-tether: exiting (SIGTERM), cleanup" in s.stderr()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP])
def test_sigint_and_sighup_exit_with_128_plus_n(
    spawn: Any, server_script: Path, sig: signal.Signals
) -> None:
    """SIGINT and SIGHUP go through the same shutdown: status 128+N."""
    s = spawn([sys.executable, str(server_script), "mcp2", "{hooks}"])
    s.handshake()
    s.proc.send_signal(sig)
    status, _ = s.wait()
    assert status == 128 + sig, s.stderr()
    assert s.hooks() == ["ready", "last", "first"]
    assert f"({sig.name})" in s.stderr()


def test_eof_and_sigterm_racing_run_the_hooks_exactly_once(spawn: Any, server_script: Path) -> None:
    """Close stdin and send SIGTERM at the same instant: one shutdown, whichever won."""
    for _round in range(3):
        s = spawn([sys.executable, str(server_script), "mcp2", "{hooks}"])
        s.handshake()
        s.close_stdin()
        s.proc.send_signal(signal.SIGTERM)
        status, _ = s.wait()
        assert status in (0, 128 + signal.SIGTERM), s.stderr()
        assert s.hooks() == ["ready", "last", "first"], s.stderr()
        assert s.stderr().count("mcp-tether: ") == 1, s.stderr()


def test_a_lifespan_that_never_ends_is_cancelled_at_its_share_and_the_hooks_still_run(
    spawn: Any, server_script: Path
) -> None:
    """The lifespan's task group is never cancelled: after its share it is, hooks follow."""
    s = spawn([sys.executable, str(server_script), "mcp2", "{hooks}", "stuck-lifespan"],
              env={"DEADLINE": "3"})
    s.handshake()
    s.close_stdin()
    status, took = s.wait()
    assert status == 0, s.stderr()
    # Its share of the 3 s deadline is a third (two hooks follow, a second each), then
    # the cancel: the share was waited (load only adds); the cancel is said below.
    assert took >= 1.0, f"took {took:.3f} s"
    assert s.hooks() == ["ready", "last", "first"]
    assert "client gone (stdin closed)" in s.stderr()
    assert "server's own shutdown cancelled after its 1.00 s share" in s.stderr()


def test_a_server_started_on_dev_null_exits_even_if_run_never_returns(
    tmp_path: Path, server_script: Path
) -> None:
    """stdin at /dev/null (nohup, a daemon): nobody can ever ask anything; it exits 0."""
    hook_log = tmp_path / "hooks.txt"
    env = {**os.environ, "PYTHONPATH": str(SRC), "DEADLINE": "3"}  # a second per step
    proc = subprocess.Popen(
        [sys.executable, str(server_script), "mcp2", str(hook_log), "stuck-lifespan"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        _, err = proc.communicate(timeout=STARTUP_CEILING)
        assert proc.returncode == 0, err
        assert hook_log.read_text().split() == ["ready", "last", "first"]
        assert b"client gone (stdin closed)" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- parent death --------------------------------------------------------------------------

# Reaper (a subreaper, so the orphaned server's status comes back to it) -> client -> server.
# The client forks a helper that keeps a copy of the server's stdin write end, so EOF never
# comes; then the test SIGKILLs the client.
DOOMED = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from mcp_tether.platform import set_subreaper

    server_argv = sys.argv[1:]
    assert set_subreaper()
    report_r, report_w = os.pipe()
    release_r, release_w = os.pipe()  # the helper lives until the reaper closes release_w
    client = os.fork()
    if client == 0:
        os.close(report_r); os.close(release_w)
        p = subprocess.Popen(server_argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        def send(m):
            p.stdin.write((json.dumps(m) + "\\n").encode()); p.stdin.flush()
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "doomed", "version": "0"}}})
        p.stdout.readline()
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        p.stdout.readline()
        helper = os.fork()
        if helper == 0:  # holds p.stdin (inherited by fork) until released
            os.read(release_r, 1)
            os._exit(0)
        os.write(report_w, f"{p.pid} {helper}\\n".encode())
        os.read(release_r, 1)  # block until SIGKILLed
        os._exit(0)
    os.close(report_w); os.close(release_r)
    server_pid, helper_pid = map(int, os.read(report_r, 100).split())
    print(f"ready {client} {server_pid} {helper_pid}", flush=True)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        print(f"exit {pid} {os.waitstatus_to_exitcode(status)}", flush=True)
        if pid == server_pid:
            os.close(release_w)
    """
)


@pytest.mark.requires_linux_backend(
    "the test's harness holds the leaked write end as a child subreaper")
def test_a_server_whose_client_is_killed_exits_although_eof_never_comes(
    tmp_path: Path, server_script: Path
) -> None:
    """Client SIGKILLed, a leaked stdin write end alive elsewhere: the parent watch ends it."""
    doomed = tmp_path / "doomed.py"
    doomed.write_text(DOOMED)
    hook_log = tmp_path / "hooks.txt"
    stderr_path = tmp_path / "stderr.txt"
    env = {**os.environ, "PYTHONPATH": str(SRC), **ROOMY}
    with open(stderr_path, "wb") as err:
        reaper = subprocess.Popen(
            [
                sys.executable,
                str(doomed),
                sys.executable,
                str(server_script),
                "mcp2",
                str(hook_log),
            ],
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            text=True,
        )
    try:
        assert reaper.stdout is not None
        # 1. The client has a connected server and a helper holding the stdin write end.
        ready = reaper.stdout.readline().split()
        assert ready and ready[0] == "ready", stderr_path.read_text()
        client, server_pid, helper_pid = map(int, ready[1:])
        # 2. Kill the client outright: no stdin close, no signal to the server.
        os.kill(client, signal.SIGKILL)
        # 3. The server exits by itself (status 0); the reaper reports each exit.
        exits: dict[int, int] = {}
        while server_pid not in exits:
            line = reaper.stdout.readline()
            assert line, f"reaper ended early: {exits}; {stderr_path.read_text()}"
            _, pid, status = line.split()
            exits[int(pid)] = int(status)
        assert exits[server_pid] == 0, stderr_path.read_text()
        assert_ended_its_own_way(stderr_path.read_text())
        assert hook_log.read_text().split() == ["ready", "last", "first"]
        assert "mcp-tether: client gone (parent died)" in stderr_path.read_text()
        assert reaper.wait(timeout=EXIT_DEADLINE) == 0
        assert helper_pid in [int(line.split()[1]) for line in reaper.stdout if line.strip()]
    finally:
        if reaper.poll() is None:
            reaper.kill()
            reaper.wait()


LATE = textwrap.dedent(
    """
    import os, sys, time
    import mcp_tether                      # notes the parent we were started under
    first_parent = os.getppid()
    open(sys.argv[2], "w").close()         # tell the parent it may die now
    deadline = time.monotonic() + 10
    while os.getppid() == first_parent and time.monotonic() < deadline:
        time.sleep(0.01)                   # the parent dies while we 'import the SDK'
    from mcp.server.mcpserver import MCPServer
    mcp = MCPServer("late")
    mcp_tether.on_shutdown(lambda: open(sys.argv[1], "a").write("hook\\n"))
    mcp_tether.run(mcp)
    """
)


def test_a_parent_that_died_before_run_is_noticed(tmp_path: Path) -> None:
    """The parent exits while the server is still importing: run() ends it at once."""
    script = tmp_path / "late.py"
    script.write_text(LATE)
    hook_log = tmp_path / "hooks.txt"
    stderr_path = tmp_path / "stderr.txt"
    r, w = os.pipe()  # stdin whose write end we keep: EOF never comes
    marker = tmp_path / "imported"
    # The middle process starts the server, waits until it has imported mcp_tether, exits.
    middle_code = (
        "import os, subprocess, sys, time; "
        "p = subprocess.Popen(sys.argv[1:]); print(p.pid, flush=True); "
        "end = time.monotonic() + 10\n"
        "while not os.path.exists(sys.argv[-1]) and time.monotonic() < end: time.sleep(0.005)"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    with open(stderr_path, "wb") as err:
        middle = subprocess.Popen(
            [
                sys.executable,
                "-c",
                middle_code,
                sys.executable,
                str(script),
                str(hook_log),
                str(marker),
            ],
            stdin=r,
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            text=True,
        )
    os.close(r)
    try:
        assert middle.stdout is not None
        server_pid = int(middle.stdout.readline())
        pidfd = os.pidfd_open(server_pid)
        assert middle.wait(timeout=EXIT_DEADLINE) == 0
        try:
            ready, _, _ = select.select([pidfd], [], [], STARTUP_CEILING)
        finally:
            os.close(pidfd)
        assert ready, "the orphaned server did not exit"
        assert hook_log.read_text().split() == ["hook"]
        assert "mcp-tether: client gone (parent died)" in stderr_path.read_text()
    finally:
        os.close(w)
        if middle.poll() is None:
            middle.kill()
            middle.wait()


# -- hooks that misbehave --------------------------------------------------------------------


@pytest.mark.parametrize("sdk", ["mcp2", "mcp1", "fastmcp"])
def test_a_hung_hook_is_cut_off_at_its_share_and_the_next_hook_still_runs(
    spawn: Any, server_script: Path, interpreters: dict[str, str | None], sdk: str
) -> None:
    """A hook that never returns is cut at its share of `deadline`; the one after it runs."""
    py = _python_for(interpreters, sdk)
    s = spawn(
        [py, str(server_script), sdk, "{hooks}", "hang-hook"],
        env={"DEADLINE": "6", "FASTMCP_SHOW_SERVER_BANNER": "0"},
    )
    s.handshake()
    s.close_stdin()
    status, _ = s.wait()  # it exited, within EXIT_DEADLINE, though a hook never returns
    assert status == 0, s.stderr()
    # Newest first: `last` ran, `hung` hung and was cut off, `first` still ran.
    assert s.hooks() == ["ready", "last", "hung", "first"]
    err = s.stderr()
    assert "cut off: hung (still running after its" in err, err
    assert "first_registered" not in err.split("cut off:")[1], err


def test_a_raising_hook_is_logged_and_the_rest_still_run(spawn: Any, server_script: Path) -> None:
    """A hook that raises: its traceback on stderr, the other hooks run, exit status 0."""
    s = spawn([sys.executable, str(server_script), "mcp2", "{hooks}", "raise-hook"])
    s.handshake()
    s.close_stdin()
    status, _ = s.wait()
    assert status == 0, s.stderr()
    assert s.hooks() == ["ready", "last", "broken", "first"]
    err = s.stderr()
    assert "RuntimeError: hook failure on purpose" in err
    assert "failed: broken" in err


# -- tethered() and the no-early-exit promise --------------------------------------------------


def test_tethered_ends_a_low_level_program_on_eof_and_skips_code_after_the_block(
    spawn: Any, tmp_path: Path
) -> None:
    """`with tethered()` around anyio.run of a low-level Server: EOF ends it, status 0."""
    script = tmp_path / "lowlevel.py"
    script.write_text(LOWLEVEL)
    s = spawn([sys.executable, str(script), "{hooks}"])
    s.handshake()
    s.close_stdin()
    status, _ = s.wait()
    assert status == 0, s.stderr()
    assert_ended_its_own_way(s.stderr())
    # At EOF the SDK's own loop may also end and unwind its lifespan before the watcher
    # acts (a race that the server's own cleanup should win); code after the block never runs.
    hooks = s.hooks()
    assert hooks[0] == "ready" and "cleanup" in hooks and "after-with" not in hooks, hooks
    # Which of the two ends last is that race too: on Linux the cleanup hook usually
    # does, but beside 4 CPU burners the SDK's unwinding finished after it
    # (['ready', 'cleanup', 'lifespan-finally']), as on the portable backend.
    assert set(hooks) <= {"ready", "lifespan-finally", "cleanup"}, hooks


def test_tethered_low_level_program_exits_143_on_sigterm(spawn: Any, tmp_path: Path) -> None:
    """SIGTERM while the main thread is inside anyio.run: the watcher thread ends it.

    Unbound, the program's own serving cannot be ended: its lifespan never unwinds.
    """
    script = tmp_path / "lowlevel.py"
    script.write_text(LOWLEVEL)
    s = spawn([sys.executable, str(script), "{hooks}"])
    s.handshake()
    s.proc.send_signal(signal.SIGTERM)
    status, _ = s.wait()
    assert status == 128 + signal.SIGTERM, s.stderr()
    assert s.hooks() == ["ready", "cleanup"]


@pytest.mark.parametrize("trigger", ["sigterm", "eof"])
def test_a_bound_low_level_server_unwinds_its_lifespan_before_the_hooks(
    spawn: Any, tmp_path: Path, trigger: str
) -> None:
    """`t.bind(server)`: SIGTERM or EOF ends the server its own way, lifespan first."""
    script = tmp_path / "lowlevel.py"
    script.write_text(LOWLEVEL)
    s = spawn([sys.executable, str(script), "{hooks}", "bind"])
    s.handshake()
    if trigger == "sigterm":
        s.proc.send_signal(signal.SIGTERM)
    else:
        s.close_stdin()
    status, _ = s.wait()
    assert status == (128 + signal.SIGTERM if trigger == "sigterm" else 0), s.stderr()
    assert_ended_its_own_way(s.stderr())
    assert s.hooks() == ["ready", "lifespan-finally", "cleanup"], s.stderr()


def test_a_connected_idle_server_stays_alive(spawn: Any, server_script: Path) -> None:
    """Connected and idle: nothing fires; it serves on, then exits on EOF."""
    s = spawn([sys.executable, str(server_script), "mcp2", "{hooks}"])
    s.handshake()
    assert s.still_running_after(1.5), s.stderr()
    assert s.request(3, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    s.close_stdin()
    assert s.wait()[0] == 0
    assert s.hooks() == ["ready", "last", "first"]


def test_a_tty_on_stdin_triggers_nothing(tmp_path: Path, server_script: Path) -> None:
    """A terminal on stdin never looks like a hang-up: the server waits, SIGTERM ends it."""
    hook_log = tmp_path / "hooks.txt"
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, str(server_script), "mcp2", str(hook_log)],
        stdin=slave,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    os.close(slave)
    try:
        _wait_for_file_line(hook_log, "ready")
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=EXIT_DEADLINE) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


NAP = {"name": "nap", "arguments": {"seconds": 0.3}}


@pytest.mark.parametrize("sdk", ["mcp2", "mcp1", "fastmcp"])
@pytest.mark.parametrize("trigger", ["sigterm", "eof"])
def test_drain_lets_a_call_in_flight_answer(
    spawn: Any, server_script: Path, interpreters: dict[str, str | None], sdk: str, trigger: str
) -> None:
    """drain=20: a 0.3 s call in flight at SIGTERM or at stdin EOF is answered, then hooks
    run; the stderr line says the drain ended with the call answered.

    Without the drain both mcp lines cancel it the moment the read stream ends (mcp 2.x
    answers "Connection closed"). The drain's time is roomy: what is tested is that the
    end waits for the answer, not how soon the answer comes.
    """
    py = _python_for(interpreters, sdk)
    s = spawn(
        [py, str(server_script), sdk, "{hooks}"],
        env={"DRAIN": "20", "FASTMCP_SHOW_SERVER_BANNER": "0"},
    )
    s.handshake()
    s.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": NAP})
    _wait_for_file_line(s.hook_log, "nap-start")
    if trigger == "sigterm":
        s.proc.send_signal(signal.SIGTERM)
    else:  # stdin closed, stdout still read: the answer can still come back
        s.stdin.close()
    answer = s.receive()
    assert answer["id"] == 9 and "result" in answer, answer
    assert not answer["result"].get("isError"), answer
    status, _ = s.wait()
    assert status == (128 + signal.SIGTERM if trigger == "sigterm" else 0), s.stderr()
    assert s.hooks() == ["ready", "nap-start", "nap-end", "last", "first"], s.stderr()
    assert "drain: 1 call(s) in flight, 1 answered" in s.stderr(), s.stderr()


@pytest.mark.parametrize("sdk", ["mcp2", "mcp1", "fastmcp"])
def test_drain_ends_at_once_when_nothing_is_in_flight(
    spawn: Any, server_script: Path, interpreters: dict[str, str | None], sdk: str
) -> None:
    """drain=20 with nothing in flight: SIGTERM ends the server without waiting the drain.

    Read from the helper's own account, not a clock: the stderr line says the drain ended
    because nothing was in flight (the read stream ended before the drain's time, with
    no call held); a drain that waited its time out would say so instead."""
    py = _python_for(interpreters, sdk)
    s = spawn([py, str(server_script), sdk, "{hooks}"],
              env={"DRAIN": "20", "FASTMCP_SHOW_SERVER_BANNER": "0"})
    s.handshake()
    s.proc.send_signal(signal.SIGTERM)
    status, _ = s.wait()
    assert status == 128 + signal.SIGTERM, s.stderr()
    assert "drain clamped" not in s.stderr()
    assert "; drain: nothing in flight" in s.stderr(), s.stderr()
    assert s.hooks() == ["ready", "last", "first"]


def test_a_drain_longer_than_the_host_allows_is_clamped_and_said(
    spawn: Any, server_script: Path
) -> None:
    """drain=5 with deadline 1: clamped to the 2 s host window minus the deadline, said once."""
    s = spawn([sys.executable, str(server_script), "mcp2", "{hooks}"],
              env={"DRAIN": "5", "DEADLINE": "1", "HOST_WINDOW": ""})
    s.handshake()
    s.close_stdin()
    assert s.wait()[0] == 0
    assert "drain clamped to 1 s" in s.stderr(), s.stderr()


# -- in process: the shutdown itself, with a recording exit -------------------------------------


@pytest.fixture
def recorded() -> Iterator[tuple[helper.ShutdownCoordinator, list[int]]]:
    codes: list[int] = []
    saved = list(hook_registry._global)
    hook_registry._global.clear()  # this test's hooks only
    # Roomy: these tests are of the order and the outcomes, not of the deadline.
    tether = helper.ShutdownCoordinator(deadline=30.0, stdio=False, exit=codes.append)
    tether.start()
    try:
        yield tether, codes
    finally:
        tether.close()
        hook_registry._global[:] = saved


def test_hooks_run_newest_first_sync_and_async(recorded: Any) -> None:
    """on_shutdown and add_cleanup hooks interleave by registration, newest first."""
    tether, codes = recorded
    ran: list[str] = []
    helper.on_shutdown(lambda: ran.append("a"))
    tether.add_cleanup(lambda: ran.append("b"))

    async def c() -> None:
        ran.append("c")

    helper.on_shutdown(c)
    tether.shutdown("test", 7)
    assert ran == ["c", "b", "a"]
    assert codes == [7]
    assert tether.reason == "test"
    assert [o.outcome for o in tether.outcomes] == ["ok", "ok", "ok"]


def test_hooks_left_without_time_or_from_another_process_are_skipped_and_say_why(
    recorded: Any,
) -> None:
    """1. A hook of another process (a fork's parent) is skipped, never run here.
    2. Past the deadline, the rest are skipped, not silently dropped.
    3. The one stderr line names each skipped hook and why."""
    tether, _ = recorded
    ran: list[str] = []

    def mine() -> None:
        ran.append("mine")

    def parents() -> None:
        ran.append("parents")

    hooks = [hook_registry.Hook(parents, 1, os.getppid()), hook_registry.Hook(mine, 2, os.getpid())]
    out = hook_registry.run_hooks(hooks, time.monotonic() + 5.0, None)
    assert [(o.outcome, o.why) for o in out] == [
        ("skipped", "registered in another process"), ("ok", "")]
    out = hook_registry.run_hooks(hooks[1:], time.monotonic() - 0.001, None)
    assert [(o.outcome, o.why) for o in out] == [("skipped", "no time left before the deadline")]
    assert ran == ["mine"]
    tether.outcomes, tether.reason, tether.cleanup_ms = out, "test", 0.0  # as after a shutdown
    assert "; skipped: " in tether._line() and "mine (no time left" in tether._line()


def test_a_second_shutdown_does_nothing(recorded: Any) -> None:
    """Shutdown is run-once: the second caller neither runs hooks nor exits."""
    tether, codes = recorded
    ran: list[int] = []
    tether.add_cleanup(lambda: ran.append(1))
    tether.shutdown("first", 0)
    tether.shutdown("second", 143)
    assert ran == [1] and codes == [0] and tether.reason == "first"


def test_signal_in_process_reaches_the_watcher(recorded: Any) -> None:
    """A real SIGTERM to ourselves is turned into a shutdown by the watcher thread."""
    tether, codes = recorded
    os.kill(os.getpid(), signal.SIGTERM)
    assert tether._exited.wait(5.0)
    assert codes == [128 + signal.SIGTERM]
    assert tether.reason == "exiting (SIGTERM)"


def test_only_one_tether_at_a_time(recorded: Any) -> None:
    """Signal handlers are per process: a second active tether is refused."""
    with pytest.raises(RuntimeError):
        helper.ShutdownCoordinator(stdio=False).start()


def test_run_refuses_a_low_level_server() -> None:
    """A server whose run() is async needs tethered(), and says so."""

    class LowLevel:
        async def run(self, *_a: object) -> None: ...

    with pytest.raises(TypeError, match="tethered"):
        helper.run(LowLevel())


def test_importing_mcp_tether_stays_cheap() -> None:
    """`import mcp_tether` loads no psutil, rich, mcp, nor even the helper itself."""
    code = (
        "import sys, mcp_tether; "
        "print(sorted(m for m in ('psutil', 'rich', 'mcp', 'typing', 'mcp_tether.tether')"
        " if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert out.stdout.strip() == "[]"
