"""`mcp-tether/client` (node/client.cjs): a Node host's drop-in StdioClientTransport.

The package's own `node --test` suite for it (node/test/client*.test.mjs: both SDK client
lines, `sh -c` and an npx-style wrapper, close / process.exit / SIGKILL, nothing left by
pid + start time) runs here with the fixture folder that holds both SDK lines. Then
`hostcheck` judges a careful host (tests/hostcheck_hosts/ts_host.mjs) on this
transport behind each supervisor, in every scenario, and the same host on the SDK's own
transport, whose verdicts follow from its close(): end stdin, 2 s, SIGTERM to the direct
child only, and nothing at all after a crash.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import node_tap
import node_tether_env
from mcp_tether.hostcheck import check
from mcp_tether.lab import node_env

pytestmark = [
    pytest.mark.skipif(node_env.missing_tools() is not None, reason="needs node and npm"),
    pytest.mark.slow,
    pytest.mark.linux,
]
REPO = Path(__file__).resolve().parents[1]
HOST = REPO / "tests" / "hostcheck_hosts" / "ts_host.mjs"
EVERY = ["exit", "sigint", "sigterm", "sigkill", "sighup"]
FAST = {"settle": 0.5, "ready_timeout": 60.0, "jobs": 2}
# The transport's own node --test files: its surface and tree, the races, real SDK hosts.
CLIENT_TESTS = ["test/client.test.mjs", "test/client-race.test.mjs", "test/client-hosts.test.mjs"]


@pytest.fixture(scope="module")
def fx() -> Path:
    folder = node_tether_env.ensure()
    # From there `import "mcp-tether/client"` resolves to this checkout's node/ folder.
    shutil.copy2(HOST, folder / "hostcheck_ts_host.mjs")
    return folder


def _env(**extra: str) -> dict[str, str]:
    """This environment with the guard's console script on PATH (`mcp-tether run` for
    the transport's auto choice), whether or not the venv is activated."""
    bindir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if bindir not in path.split(os.pathsep):
        path = bindir + os.pathsep + path
    return {**os.environ, "PATH": path, **extra}


def test_the_client_transports_node_tests_pass(fx: Path) -> None:
    """`node --test` of the transport's files (its surface and tree, the races, real hosts)
    with both SDK client lines installed."""
    out = subprocess.run(["node", "--test", *CLIENT_TESTS], cwd=REPO / "node",
                         capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
                         env=_env(MCP_TETHER_NODE_FIXTURES=str(fx)))
    assert out.returncode == 0, node_tap.report(out)
    assert "# skipped 0" in out.stdout, out.stdout[-2000:]


@pytest.mark.parametrize("supervisor", ["mcp-tether", "node"])
def test_a_host_on_mcp_tether_client_is_clean_in_every_scenario(fx: Path, supervisor: str) -> None:
    """hostcheck: clean in exit, sigint, sigterm, sigkill and sighup behind either supervisor."""
    result = check(["node", str(fx / "hostcheck_ts_host.mjs"), "{server}"],
                   scenarios=EVERY, env=_env(HOST_TRANSPORT="tether", HOST_SUPERVISOR=supervisor),
                   cwd=str(fx), **FAST)
    verdicts = {r["scenario"]: r["verdict"] for r in result.results}
    assert verdicts == dict.fromkeys(EVERY, "clean"), result.results
    assert result.exit_code == 0


def test_the_same_host_on_the_sdks_transport_leaves_the_wrapped_child_and_after_a_crash_all(
        fx: Path) -> None:
    """hostcheck on the SDK's 2.4.0 StdioClientTransport: SIGTERM reaches only its direct
    child (the recorder's child is left); a SIGKILLed host leaves the server. (1.x: the
    same host in tests/test_hostcheck.py, and by hand on 1.32.2 in docs/hosts-check.md.)"""
    result = check(["node", str(fx / "hostcheck_ts_host.mjs"), "{server}"],
                   scenarios=["exit", "sigkill"],
                   env=_env(HOST_SDK="2", HOST_TRANSPORT="sdk"), cwd=str(fx), **FAST)
    verdicts = {r["scenario"]: r["verdict"] for r in result.results}
    assert verdicts == {"exit": "wrapper-child-left", "sigkill": "server-left"}, result.results
