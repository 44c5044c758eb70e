"""`mcp-tether run -- docker run -i ...`: the container dies with the guard's client.

Real daemon, real containers (the offline busybox image of tests/containers): the
server speaks JSON-RPC from busybox sh, in one of three modes (eof-exit, ignore-eof,
stubborn). Each test is the client: it talks to the guard over a pipe, then goes away.
Before the container follow, the ladder's SIGKILL reached only the `docker` client and
the container, which runs under the engine's shim, kept running.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from containers import dockertest
from containers.dockertest import DEADLINE, box_cmd, session_containers
from mcp_tether.container.engine import Engine
from polling import until

# The shared fixtures, bound here so pytest finds them (tests/conftest.py is not ours).
docker_engine = dockertest.docker_engine
docker_image = dockertest.docker_image
no_container_left = dockertest.no_container_left

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux guard"),
]

FAST = ["--grace", "1", "--term-grace", "1"]
INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        b'"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n')


class Client:
    """The test as the guard's client: a pipe to its stdin, its stdout in a file."""

    def __init__(self, argv: list[str], tmp: Path, env: dict[str, str] | None = None) -> None:
        self.out_path = tmp / "out"
        self.err_path = tmp / "err"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out, stderr=err,
                                         env=env)

    def ready(self) -> None:
        """Send initialize and wait for the answer: the container is up and talking."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(INIT)
        self.proc.stdin.flush()
        until(lambda: b'"id":1' in self.out_path.read_bytes(), "the initialize answer", DEADLINE)

    def close(self) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return time.monotonic()

    def finish(self) -> tuple[int, str]:
        rc = self.proc.wait(DEADLINE)
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        return rc, self.err_path.read_text()


def guard(server: list[str], opts: list[str] = FAST) -> list[str]:
    return [sys.executable, "-m", "mcp_tether", "run", *opts, "--", *server]


def test_a_container_server_that_ignores_eof_is_ended_by_sigterm(
    docker_engine: Engine, docker_image: str, tmp_path: Path
) -> None:
    """1. guard a container that ignores EOF; 2. the client closes stdin; 3. the
    container got SIGTERM (relayed by the docker client), the guard exits 143 (the
    container's status), none is left."""
    c = Client(guard(box_cmd(docker_image, "ignore-eof")), tmp_path)
    c.ready()
    assert len(session_containers(docker_engine, running_only=True)) == 1
    c.close()
    rc, err = c.finish()
    assert rc == 143, err
    assert "SIGTERM" in err
    assert not session_containers(docker_engine, running_only=True)


def test_without_sig_proxy_sigterm_reaches_the_container_through_the_engine(
    docker_engine: Engine, docker_image: str, tmp_path: Path
) -> None:
    """`--sig-proxy=false`: the docker client relays nothing, so before the follow the
    SIGTERM rung never reached the container; now it is sent through the engine."""
    box = box_cmd(docker_image, "ignore-eof", extra=("--sig-proxy=false",))
    c = Client(guard(box), tmp_path)
    c.ready()
    c.close()
    rc, err = c.finish()
    assert rc == 143, err
    assert "SIGTERM" in err
    assert not session_containers(docker_engine, running_only=True)


def test_a_container_that_ignores_sigterm_is_sigkilled_through_the_engine(
    docker_engine: Engine, docker_image: str, tmp_path: Path
) -> None:
    """1. guard a container deaf to EOF and SIGTERM; 2. the client closes stdin; 3. the
    SIGKILL rung reached the container itself (not only the docker client): exit 137,
    and no container of ours runs once the guard has exited."""
    c = Client(guard(box_cmd(docker_image, "stubborn")), tmp_path)
    c.ready()
    c.close()
    rc, err = c.finish()
    assert rc == 137, err
    assert "SIGKILL" in err
    assert not session_containers(docker_engine, running_only=True)


def test_a_container_that_exits_on_eof_leaves_by_itself_with_status_zero(
    docker_engine: Engine, docker_image: str, tmp_path: Path
) -> None:
    """A well-behaved container server leaves on EOF within the grace; status 0."""
    c = Client(guard(box_cmd(docker_image, "eof-exit"), ["--grace", "20"]), tmp_path)
    c.ready()
    c.close()
    rc, err = c.finish()
    assert rc == 0, err
    assert "exited by itself" in err
    assert not session_containers(docker_engine)


def test_a_container_without_rm_is_removed_when_the_ladder_had_to_end_it(
    docker_engine: Engine, docker_image: str, tmp_path: Path
) -> None:
    """Started without --rm and ended by the ladder: nothing of it is left, stopped or
    running (a leaked container is one the user never asked to keep)."""
    c = Client(guard(box_cmd(docker_image, "stubborn", rm=False)), tmp_path)
    c.ready()
    c.close()
    rc, err = c.finish()
    assert rc == 137, err
    assert not session_containers(docker_engine)


@contextlib.contextmanager
def _a_client_then_sigkilled(server: list[str], tmp_path: Path) -> Iterator[None]:
    """A client process starts the guard on `server` and gets the initialize answer; the
    block runs while both live; then the client is SIGKILLed, and the block's end waits
    until the guard has exited."""
    report = tmp_path / "guard.pid"
    client_src = (
        "import subprocess, sys, time\n"
        f"g = subprocess.Popen({guard(server)!r}, stdin=subprocess.PIPE,"
        " stdout=subprocess.PIPE)\n"
        f"g.stdin.write({INIT!r}); g.stdin.flush(); g.stdout.readline()\n"
        f"open({str(report)!r}, 'w').write(str(g.pid))\n"
        "time.sleep(600)\n"
    )
    client = subprocess.Popen([sys.executable, "-c", client_src])
    try:
        guard_pid = int(until(lambda: report.exists() and report.read_text(), "the guard",
                              DEADLINE))
        from mcp_tether.proc import identify

        guard_ident = identify(guard_pid)
        assert guard_ident is not None
        yield
    finally:
        client.kill()  # our own child, not reaped: its pid is its own
        client.wait()
    from mcp_tether.proc import SAME, compare

    until(lambda: compare(guard_ident) != SAME, "the guard to exit", DEADLINE)


def test_a_guard_whose_client_is_sigkilled_ends_its_container(
    docker_engine: Engine, docker_image: str, tmp_path: Path
) -> None:
    """1. a client process starts the guard and is SIGKILLed; 2. the guard sees its
    client go and climbs the ladder into the container: none of ours runs after."""
    with _a_client_then_sigkilled(box_cmd(docker_image, "stubborn"), tmp_path):
        assert session_containers(docker_engine, running_only=True)
    assert not session_containers(docker_engine, running_only=True)


def test_with_the_daemon_down_the_guard_says_container_support_is_off_in_one_line(
    tmp_path: Path,
) -> None:
    """DOCKER_HOST at a dead socket: one 'container support is off' line, no traceback;
    the guard still runs the command and mirrors its status."""
    env = dict(os.environ, DOCKER_HOST=f"unix://{tmp_path}/no-daemon.sock")
    c = Client(guard(["docker", "run", "-i", "--rm", "img"]), tmp_path, env=env)
    c.close()
    rc, err = c.finish()
    lines = [ln for ln in err.splitlines() if "container support is off" in ln]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert rc != 0


def test_without_an_engine_on_path_the_guard_says_so_and_exits_127(tmp_path: Path) -> None:
    """PATH without docker: the off line, then the usual 'command not found' (127)."""
    env = dict(os.environ, PATH=str(tmp_path))
    c = Client(guard(["docker", "run", "-i", "--rm", "img"]), tmp_path, env=env)
    c.close()
    rc, err = c.finish()
    assert rc == 127, err
    assert "container support is off: docker not found on PATH" in err
    assert "Traceback" not in err


# -- shapes the follow must see through: `sh -c` around `docker run`, `docker exec` ------
def _sigkilled_client(server: list[str], tmp_path: Path) -> None:
    """A client process starts the guard, gets the initialize answer, and is SIGKILLed
    while the guard runs; returns once the guard has exited."""
    with _a_client_then_sigkilled(server, tmp_path):
        pass


def _cat_then_sleep(docker_image: str) -> list[str]:
    """`sh -c "docker run -i --rm ... --entrypoint sh IMG -c 'cat; sleep 61'"`: one
    simple command whose `;` is quoted. The container answers (cat echoes the request)
    and outlives EOF (its sh, pid 1, is deaf to SIGTERM: the SIGKILL rung ends it)."""
    box = box_cmd(docker_image, "unused")[:-2]  # without the image and its mode
    return ["sh", "-c", f"{shlex.join(box)} --entrypoint sh {docker_image} -c 'cat; sleep 61'"]


@pytest.mark.parametrize("end", ["close", "sigkill"])
def test_a_container_run_behind_sh_c_with_a_quoted_semicolon_is_followed(
    docker_engine: Engine, docker_image: str, tmp_path: Path, end: str
) -> None:
    """1. `sh -c` around one `docker run` whose inner command quotes a `;`; 2. the
    client closes stdin, or is SIGKILLed; 3. no container of ours runs after the guard.
    A quoted `;` read as a list separator would leave the command unfollowed, silently."""
    server = _cat_then_sleep(docker_image)
    if end == "close":
        c = Client(guard(server), tmp_path)
        c.ready()
        assert session_containers(docker_engine, running_only=True)
        c.close()
        rc, err = c.finish()
        assert "not following" not in err, err
    else:
        _sigkilled_client(server, tmp_path)
    assert not session_containers(docker_engine, running_only=True)


@pytest.fixture
def running_box(docker_engine: Engine, docker_image: str) -> Iterator[str]:
    """A running container of ours to exec into (its own server ignores its closed
    stdin); removed after the test."""
    code, out, err = docker_engine.call(
        ["run", "-d", *box_cmd(docker_image, "ignore-eof")[2:]])
    assert code == 0, err
    cid = out.strip()
    try:
        yield cid
    finally:
        docker_engine.call(["rm", "-f", cid])


def _in_box(engine: Engine, cid: str) -> list[str]:
    code, out, _err = engine.call(["top", cid, "-o", "pid,args"])
    assert code == 0
    return out.splitlines()[1:]


@pytest.mark.parametrize("end", ["close", "sigkill"])
def test_a_process_started_by_docker_exec_ends_with_its_client(
    docker_engine: Engine, running_box: str, tmp_path: Path, end: str
) -> None:
    """1. guard `docker exec -i BOX sh -c 'cat; sleep 62'`; 2. the client closes stdin
    (cat ends, sleep goes on) or is SIGKILLed; 3. nothing the exec started runs in the
    container after the guard, which is left running: the engine does not end an exec'd
    process when its client goes, so each session would leave one."""
    server = ["docker", "exec", "-i", running_box, "sh", "-c", "cat; sleep 62"]
    if end == "close":
        c = Client(guard(server), tmp_path)
        c.ready()
        assert any("sleep 62" in p or "cat" in p for p in _in_box(docker_engine, running_box))
        c.close()
        rc, err = c.finish()
        assert "SIGTERM" in err, err
    else:
        _sigkilled_client(server, tmp_path)
    left = [p for p in _in_box(docker_engine, running_box) if "sleep 62" in p or "cat" in p]
    assert not left, left
    code, out, _err = docker_engine.call(["inspect", "-f", "{{.State.Running}}", running_box])
    assert out.strip() == "true"  # the container was never ours to end


def test_a_container_command_that_cannot_be_followed_is_named_in_one_warning_line(
    tmp_path: Path,
) -> None:
    """A `-c` string with a real pipeline around `docker run`: not followed, and said so
    once on stderr (the command still runs: here docker is a stand-in that exits)."""
    fake = tmp_path / "docker"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}")
    c = Client(guard(["sh", "-c", "docker run -i --rm img | cat"]), tmp_path, env=env)
    c.close()
    rc, err = c.finish()
    lines = [ln for ln in err.splitlines() if "not following the container" in ln]
    assert len(lines) == 1 and "one simple command" in lines[0], err
    assert rc == 0, err
