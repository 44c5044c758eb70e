"""`probe` on a container server: the container is part of the server's tree.

The probe's keeper creates `container.follow_for(argv)` and counts the container in its
verdicts, survivors and clean-up.
"""

from __future__ import annotations

import sys

import pytest

from containers import dockertest
from containers.dockertest import box_cmd, session_containers
from mcp_tether.container.engine import Engine

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

    try:
        report = probe(box_cmd(docker_image, "ignore-eof"),
                       ProbeOptions(scenarios=("exit", "crash"), jobs=1, window=3.0))
        left = session_containers(docker_engine, running_only=True)
    finally:
        for cid in session_containers(docker_engine):  # ours (session label) only
            docker_engine.call(["rm", "-f", cid])
    verdicts = {r.scenario: r for r in report.results}
    for name in ("exit", "crash"):
        r = verdicts[name]
        assert r.verdict == "orphaned", r
        assert any("container" in s.cmdline for s in r.survivors), r.survivors
    assert not left, f"the probe left containers running: {left}"
