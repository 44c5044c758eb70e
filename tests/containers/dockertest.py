"""Fixtures and helpers for the container tests (imported by tests/test_container_*.py).

- `docker_engine`: the engine, or a skip saying "container support is off: <why>";
  under CI=true a failure instead (the docker tests must run in CI, never skip there).
- `docker_image`: the offline test image, built by tests/containers/build if missing.
- `no_container_left` (autouse where imported): after each test, no container carrying
  this session's label may still exist; any that does fails the test and is removed
  (only ours: the session label is on every container a test starts).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_tether.container.engine import Engine, clear_cache, engine_for
from polling import until

HERE = Path(__file__).resolve().parent
SESSION = uuid.uuid4().hex[:12]
SESSION_LABEL = f"io.mcp-tether.test-session={SESSION}"
DEADLINE = 60.0  # docker start-up on a loaded 2-core machine takes seconds
ENGINE_STEP = 0.2  # the longest poll step when each try runs the engine's CLI


@pytest.fixture(scope="session")
def docker_engine() -> Engine:
    clear_cache()
    engine = engine_for("docker")
    if engine.off is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{engine.off} (CI must run the docker tests: .ci/docker-up)")
        pytest.skip(engine.off)
    return engine


@pytest.fixture(scope="session")
def docker_image(docker_engine: Engine) -> str:
    done = subprocess.run([str(HERE / "build")], capture_output=True, text=True,
                          timeout=300, check=False)
    if done.returncode != 0:
        pytest.fail(f"tests/containers/build failed: {done.stderr.strip()}")
    return done.stdout.strip()


def box_cmd(image: str, mode: str, *, rm: bool = True, extra: tuple[str, ...] = ()
            ) -> list[str]:
    """A `docker run -i` server command for the test image, labelled as ours."""
    return ["docker", "run", "-i", *(["--rm"] if rm else []), "--network", "none",
            "--label", "io.mcp-tether.test=1", "--label", SESSION_LABEL, *extra,
            image, mode]


def session_containers(engine: Engine, *, running_only: bool = False) -> list[str]:
    args = ["ps", "-q", "--no-trunc", "--filter", f"label={SESSION_LABEL}"]
    code, out, _err = engine.call(args if running_only else [*args[:1], "-a", *args[1:]])
    return out.split() if code == 0 else []


@pytest.fixture(autouse=True)
def no_container_left(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "docker_engine" not in request.fixturenames:
        return
    engine: Engine = request.getfixturevalue("docker_engine")
    left = session_containers(engine)
    if left:
        # `--rm` removal runs in the daemon right after the container stops: give it
        # a moment before calling it a leftover (polled, not slept).
        with contextlib.suppress(AssertionError):
            until(lambda: not session_containers(engine, running_only=True),
                  "containers to stop", 10, max_step=ENGINE_STEP)
    running = session_containers(engine, running_only=True)
    for cid in session_containers(engine):
        engine.call(["rm", "-f", cid])
    if running:
        pytest.fail(f"test left containers running: {[c[:12] for c in running]}",
                    pytrace=False)
