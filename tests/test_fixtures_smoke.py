"""Smoke test of the Python lab fixtures: each answers the handshake and lists its tools,
and on stdin EOF either exits 0 by itself or, as designed, stays alive.

Every wait is a poll against a deadline; every process started here is SIGKILLed and
reaped before the test ends (the daemonizer's escaped helper included).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from polling import until

FIXTURES = Path(__file__).resolve().parent.parent / "src" / "mcp_tether" / "lab" / "python"
STARTUP_DEADLINE = 30.0  # importing the SDK is slow on a loaded machine
EXIT_DEADLINE = 10.0
STAY_ALIVE_FOR = 1.0  # how long a fixture that ignores EOF must visibly outlive it

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "smoke", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


class Fixture:
    """One fixture process with pipes, read without blocking past a deadline."""

    def __init__(self, name: str, err_path: Path) -> None:
        self.err_path = err_path
        self._err = err_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(FIXTURES / f"{name}.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            start_new_session=True,
        )
        self._buf = b""

    def send(self, message: dict[str, object]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def reply(self, request_id: int, deadline: float) -> dict[str, object]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                message = json.loads(line)  # anything but JSON on stdout fails here
                if message.get("id") == request_id:
                    return message  # type: ignore[no-any-return]
            left = deadline - time.monotonic()
            assert left > 0, f"no reply to request {request_id} in time"
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                assert chunk, "stdout closed before the reply"
                self._buf += chunk

    def events(self) -> list[str]:
        return [
            line.split("event=")[1].split()[0]
            for line in self.err_path.read_text().splitlines()
            if "event=" in line
        ]

    def wait_for_event(self, event: str, timeout: float) -> None:
        def seen() -> bool:
            if event in self.events():
                return True
            assert self.proc.poll() is None, f"exited {self.proc.returncode} early"
            return False

        try:
            until(seen, f"event={event}", timeout)
        except AssertionError as e:  # a timeout, or an early exit: say what it did log
            raise AssertionError(f"{e}; got {self.events()}") from None

    def close(self) -> None:
        for line in self.err_path.read_text().splitlines():
            if "daemon_pid=" in line:
                _kill(int(line.split("daemon_pid=")[1].split()[0]))
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None and not stream.closed:
                stream.close()
        self._err.close()


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def start(tmp_path: Path) -> Iterator[object]:
    started: list[Fixture] = []

    def _start(name: str) -> Fixture:
        fixture = Fixture(name, tmp_path / f"{name}.err")
        started.append(fixture)
        return fixture

    yield _start
    for fixture in started:
        fixture.close()


def _handshake(fixture: Fixture) -> None:
    deadline = time.monotonic() + STARTUP_DEADLINE
    fixture.send(INITIALIZE)
    init = fixture.reply(1, deadline)
    assert "result" in init, init
    fixture.send(INITIALIZED)
    fixture.send(TOOLS_LIST)
    tools = fixture.reply(2, deadline)
    names = {tool["name"] for tool in tools["result"]["tools"]}  # type: ignore[index]
    assert {"echo", "sleep"} <= names
    assert "ready" in fixture.events()


@pytest.mark.parametrize("name", ["plain", "daemon_thread", "fixed", "stdout_writer", "daemonizer"])
def test_a_fixture_with_nothing_keeping_it_alive_exits_0_on_stdin_eof(start, name):  # type: ignore[no-untyped-def]
    """1. handshake; 2. close stdin; 3. the process exits 0 by itself."""
    fixture = start(name)
    _handshake(fixture)
    assert fixture.proc.stdin is not None
    fixture.proc.stdin.close()
    assert fixture.proc.wait(timeout=EXIT_DEADLINE) == 0
    if name == "fixed":
        assert fixture.events()[-1] == "shutdown"


@pytest.mark.parametrize(
    ("name", "after_eof"),
    [
        ("thread", "run_returned"),
        ("executor", "run_returned"),
        ("stubborn", "run_returned"),
        ("anyio_group", "lifespan_exit"),
    ],
)
def test_a_fixture_built_to_ignore_eof_outlives_it(start, name, after_eof):  # type: ignore[no-untyped-def]
    """1. handshake; 2. close stdin; 3. the SDK sees EOF; 4. the process is still alive."""
    fixture = start(name)
    _handshake(fixture)
    assert fixture.proc.stdin is not None
    fixture.proc.stdin.close()
    fixture.wait_for_event(after_eof, EXIT_DEADLINE)
    with pytest.raises(subprocess.TimeoutExpired):
        fixture.proc.wait(timeout=STAY_ALIVE_FOR)


def test_fixed_exits_128_plus_signum_on_sigterm(start):  # type: ignore[no-untyped-def]
    """1. handshake; 2. SIGTERM; 3. exit status 143 after an event=shutdown line."""
    fixture = start("fixed")
    _handshake(fixture)
    fixture.proc.send_signal(signal.SIGTERM)
    assert fixture.proc.wait(timeout=EXIT_DEADLINE) == 128 + signal.SIGTERM
    assert fixture.events()[-1] == "shutdown"
