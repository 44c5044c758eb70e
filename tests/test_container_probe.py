"""`probe` on a container server: the container is part of the server's tree.

The probe's keeper creates `container.follow_for(argv)` and counts the container in its
verdicts, survivors and clean-up.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from containers import dockertest
from containers.dockertest import (
    DEADLINE,
    ENGINE_STEP,
    SESSION_LABEL,
    box_cmd,
    session_containers,
)
from mcp_tether.container.engine import Engine
from polling import until

docker_engine = dockertest.docker_engine
docker_image = dockertest.docker_image
no_container_left = dockertest.no_container_left

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux keeper"),
]


def test_a_container_that_ignores_eof_is_orphaned_on_exit_named_and_never_left_behind(
    docker_engine: Engine, docker_image: str
) -> None:
    """1. probe `docker run -i` of a server that ignores EOF, scenarios exit and crash;
    2. both are `orphaned` with the container among the survivors; 3. no container of
    ours runs after the probe."""
    from mcp_tether.probe import ProbeOptions, probe

    since = int(time.time()) - 1
    try:
        report = probe(box_cmd(docker_image, "ignore-eof"),
                       ProbeOptions(scenarios=("exit", "crash"), jobs=1, window=3.0))
        left = session_containers(docker_engine, running_only=True)
        # The probe removed them (--rm): the daemon's events still name every one.
        _code, out, _err = docker_engine.call(
            ["events", "--since", str(since), "--until", str(int(time.time()) + 1),
             "--filter", f"label={SESSION_LABEL}", "--filter", "event=create",
             "--format", "{{.ID}}"])
        ever = {cid[:12] for cid in out.split()}
    finally:
        for cid in session_containers(docker_engine):  # ours (session label) only
            docker_engine.call(["rm", "-f", cid])
    verdicts = {r.scenario: r for r in report.results}
    for name in ("exit", "crash"):
        r = verdicts[name]
        assert r.verdict == "orphaned", r
        named = [s.cmdline for s in r.survivors if s.cmdline.startswith("container ")]
        # Named by the id of a container this test really started, and what runs in it.
        assert [c.split()[1].rstrip(":") for c in named] != [], r.survivors
        assert all(c.split()[1].rstrip(":") in ever and "server.sh ignore-eof" in c
                   for c in named), (named, ever)
        # The diagnosis names it as a container too, never as a pid.
        said = r.diagnosis.lower()
        assert named[0].split(":")[0] + " (" in said and "pid 0" not in said, r.diagnosis
    assert not left, f"the probe left containers running: {left}"


def test_close_names_the_rung_that_really_ended_the_container(
    docker_engine: Engine, docker_image: str
) -> None:
    """1. probe `close` (node host style: the client's SIGTERM goes to the `docker`
    client, which relays it); 2. the container ignores EOF and ends at SIGTERM, so the
    verdict is `terminated` at the `sigterm` rung, not the docker client's exit; 3. none
    of our containers runs afterwards."""
    from mcp_tether.probe import ProbeOptions, probe

    try:
        report = probe(box_cmd(docker_image, "ignore-eof"),
                       ProbeOptions(scenarios=("close",), jobs=1, window=3.0))
        left = session_containers(docker_engine, running_only=True)
    finally:
        for cid in session_containers(docker_engine):
            docker_engine.call(["rm", "-f", cid])
    (r,) = report.results
    assert (r.verdict, r.rung) == ("terminated", "sigterm"), r
    assert not left, f"the probe left containers running: {left}"


def test_a_sigkilled_probe_leaves_no_container_running(
    docker_engine: Engine, docker_image: str, tmp_path: Path
) -> None:
    """1. `mcp-tether probe -s exit` on a container that ignores EOF; 2. once its
    container runs, SIGKILL the probe itself; 3. its keeper notices and removes the
    container: none of ours is left running."""
    import signal

    from mcp_tether.proc import identify
    from mcp_tether.proc.signals import signal_process

    exe = [sys.executable, "-m", "mcp_tether", "probe", "-s", "exit", "--window", "30",
           "--", *box_cmd(docker_image, "ignore-eof")]
    with open(tmp_path / "probe.log", "wb") as log:
        proc = subprocess.Popen(exe, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        until(lambda: session_containers(docker_engine, running_only=True),
              "the probe's container to run", DEADLINE, max_step=ENGINE_STEP)
        ident = identify(proc.pid)
        assert ident is not None
        signal_process(ident, signal.SIGKILL)
        proc.wait(timeout=DEADLINE)
        until(lambda: not session_containers(docker_engine, running_only=True),
              "no container of ours left running", DEADLINE, max_step=ENGINE_STEP)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for cid in session_containers(docker_engine):
            docker_engine.call(["rm", "-f", cid])


def test_behind_the_guard_every_scenario_passes_and_no_container_outlives_the_probe(
    docker_engine: Engine, docker_image: str
) -> None:
    """1. probe `mcp-tether run -- docker run -i` of a server that ignores EOF, every
    scenario; 2. every one passes; 3. no container of ours
    runs afterwards, the idle scenario's included: the keeper's clean-up SIGKILLs the
    guard, so it ends the container the guard's owner label ties to its tree."""
    from mcp_tether.probe import ProbeOptions, probe

    scenarios = ("close", "exit", "crash", "devnull", "idle", "half-close", "sigterm",
                 "sigint", "inherited-writer")
    guarded = [sys.executable, "-m", "mcp_tether", "run", "--grace", "1", "--term-grace",
               "1", "--", *box_cmd(docker_image, "ignore-eof")]
    try:
        report = probe(guarded, ProbeOptions(scenarios=scenarios, jobs=2, window=10.0))
        left = session_containers(docker_engine, running_only=True)
    finally:
        for cid in session_containers(docker_engine):
            docker_engine.call(["rm", "-f", cid])
    assert sorted(r.scenario for r in report.results) == sorted(scenarios)
    failed = [(r.scenario, r.verdict, r.detail) for r in report.results if not r.passed]
    assert not failed, failed
    assert not left, f"the probe left containers running: {left}"
