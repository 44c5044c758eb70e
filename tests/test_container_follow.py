"""The follower API (for the probe's keeper) and the machine view (for `ps`/`reap`),
against real containers of the offline test image."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from containers import dockertest
from containers.dockertest import DEADLINE, ENGINE_STEP, box_cmd, session_containers
from mcp_tether.container.engine import Engine
from mcp_tether.container.follow import ContainerFollow, follow_for, owner_label
from mcp_tether.container.leaked import LEAKED, LIVE, end_container, stdio_containers
from polling import until

docker_engine = dockertest.docker_engine
docker_image = dockertest.docker_image
no_container_left = dockertest.no_container_left

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc"),
]
INIT = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'


def start(follow: ContainerFollow) -> subprocess.Popen[bytes]:
    """Run the follower's argv as a client would, and wait for the container's answer."""
    proc = subprocess.Popen(follow.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INIT)
    proc.stdin.flush()
    assert b'"id":1' in proc.stdout.readline()
    return proc


def stop_client(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the docker client (our own child, not reaped: its pid is its own)."""
    proc.kill()
    proc.wait()
    for fh in (proc.stdin, proc.stdout):
        if fh is not None:
            fh.close()


@contextlib.contextmanager
def _leaked_and_live(
    docker_image: str, dead_owner: str
) -> Iterator[tuple[ContainerFollow, subprocess.Popen[bytes], ContainerFollow]]:
    """Two followed containers, each with its docker client started: one labelled with
    `dead_owner` (a process that has exited), one owned by this test (alive). Yields the
    first, its client, and the second; at the end the live one is SIGKILLed and both are
    removed."""
    leaked = follow_for(box_cmd(docker_image, "ignore-eof"), owner=dead_owner)
    live = follow_for(box_cmd(docker_image, "ignore-eof"), owner=owner_label(os.getpid()))
    assert leaked is not None and live is not None
    leaked_client, live_client = start(leaked), start(live)
    try:
        yield leaked, leaked_client, live
    finally:
        stop_client(live_client)
        live.signal(signal.SIGKILL)
        live.wait_gone(30)
        live.end()
        leaked.end()


def test_a_followed_container_is_found_listed_signalled_and_removed(
    docker_engine: Engine, docker_image: str
) -> None:
    """1. follow_for rewrites the command; 2. with its docker client SIGKILLed the
    container still runs and is listed as a survivor; 3. SIGTERM through the follower
    ends it (143); 4. end() removes it and is idempotent."""
    follow = follow_for(box_cmd(docker_image, "ignore-eof"))
    assert follow is not None
    assert "--cidfile" in follow.argv
    proc = start(follow)
    try:
        stop_client(proc)
        assert follow.find() is not None
        survivors = follow.survivors()
        assert survivors and survivors[0]["container"] == follow.short_id
        assert any("server.sh ignore-eof" in s["cmdline"] for s in survivors)
        assert follow.wait_gone(0) is None
        assert follow.signal(signal.SIGTERM) == "sent"
        assert follow.wait_gone(30) is not None
        assert follow.exit_code == 143
        assert follow.survivors() == []
    finally:
        follow.end()
        follow.end()
    assert not session_containers(docker_engine)
    assert follow.signal(signal.SIGKILL) == "gone"


def test_follow_for_is_none_for_other_commands_and_one_line_when_the_daemon_is_dead(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object, capfd: pytest.CaptureFixture[str]
) -> None:
    from mcp_tether.container.engine import clear_cache

    assert follow_for([sys.executable, "-c", "pass"]) is None
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/dead.sock")
    clear_cache()
    try:
        assert follow_for(["docker", "run", "-i", "img"]) is None
    finally:
        clear_cache()
    err = capfd.readouterr().err
    assert err.count("container support is off") == 1
    assert "Traceback" not in err


def test_ps_finds_a_container_whose_owner_died_and_reap_ends_it_leaving_a_live_one(
    docker_engine: Engine, docker_image: str
) -> None:
    """1. two containers; one's owner is a process that has exited, the other's is
    this test (alive); both docker clients hold nothing any more / still attached;
    2. the listing calls the first leaked, the second live; 3. end_container ends
    the leaked one by SIGTERM and leaves the live one running."""
    owner = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    dead_owner = owner_label(owner.pid)
    assert owner.stdin is not None
    owner.stdin.close()
    owner.wait()
    with _leaked_and_live(docker_image, dead_owner) as (leaked, leaked_client, live):
        stop_client(leaked_client)
        ids = {leaked.find(): leaked, live.find(): live}
        found = {c.id: c for c in stdio_containers() if c.id in ids}
        assert set(found) == set(ids)
        bad, good = found[leaked.container_id or ""], found[live.container_id or ""]
        assert bad.state == LEAKED and "owner" in bad.evidence and "gone" in bad.evidence
        assert good.state == LIVE
        assert bad.image == docker_image and bad.age is not None and bad.ours
        assert end_container(bad, grace=10) == "sigterm"
        until(lambda: leaked.container_id not in session_containers(docker_engine),
              "the reaped container to be removed", DEADLINE, max_step=ENGINE_STEP)
        assert live.state() == "running"


def test_end_container_leaves_alone_a_container_that_is_not_the_one_listed(
    docker_engine: Engine, docker_image: str
) -> None:
    """A listed container that stopped meanwhile is 'gone': nothing is sent."""
    follow = follow_for(box_cmd(docker_image, "ignore-eof"), owner="1:0:0")
    assert follow is not None
    client = start(follow)
    try:
        stop_client(client)
        follow.find()
        # The listing asks for `created` containers too: the daemon's list shows a
        # container that already answered as `created` for a moment (leaked._STATUSES).
        # Polled all the same: a listing is a snapshot.
        listed = until(lambda: [c for c in stdio_containers() if c.id == follow.container_id],
                       "the container in the listing", DEADLINE, max_step=ENGINE_STEP)
        assert len(listed) == 1
        follow.signal(signal.SIGKILL)
        follow.wait_gone(30)
        assert end_container(listed[0]) == "gone"
    finally:
        follow.end()


def test_ps_lists_a_leaked_container_and_reap_ends_it_but_not_one_with_a_live_client(
    docker_engine: Engine, docker_image: str
) -> None:
    """The CLI: 1. `ps --json` shows both containers, leaked and live; 2. `reap --dry-run`
    names the leaked one; 3. `reap --yes` ends it (SIGTERM) and leaves the live one
    running."""
    import json

    owner = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_owner = owner_label(owner.pid)
    owner.wait()
    cli = [sys.executable, "-m", "mcp_tether"]
    with _leaked_and_live(docker_image, dead_owner) as (leaked, leaked_client, live):
        stop_client(leaked_client)
        ids = {leaked.find(): "leaked", live.find(): "live"}
        ps = json.loads(subprocess.run([*cli, "ps", "--json"], capture_output=True,
                                       check=True, timeout=120).stdout)
        states = {c["id"]: c["state"] for c in ps["containers"] if c["id"] in ids}
        assert states == ids
        dry = subprocess.run([*cli, "reap", "--dry-run"], capture_output=True, text=True,
                             timeout=120, check=False)
        assert f"would end container {leaked.short_id}" in dry.stdout, dry.stdout
        assert "nothing to reap" not in dry.stdout, dry.stdout
        done = subprocess.run([*cli, "reap", "--yes", "--json", "--grace", "10"],
                              capture_output=True, timeout=120, check=False)
        reaped = {c["id"]: c["outcome"] for c in json.loads(done.stdout)["containers"]}
        assert reaped.get(leaked.container_id) == "sigterm", done.stderr
        assert live.container_id not in reaped
        assert live.state() == "running"
