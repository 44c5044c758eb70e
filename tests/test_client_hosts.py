"""`mcp_tether.client.stdio_client` inside real host processes, on mcp 2.x and 1.x.

Each test runs a small host script (the real SDK `ClientSession` over our
`stdio_client`) under the interpreter of one SDK line: this venv's (mcp 2.x) and the
side venv's (mcp 1.x, `MCP_TETHER_MCP1_PYTHON`, built as `.ci/run` does). The host
reports the server's tree as `(pid, start)` identities; the test checks those very
processes, so a reused pid can never pass for a live server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_tether.lab import node_env
from mcp_tether.proc import ProcessId, is_running
from mcp_tether.proc.signals import signal_process
from polling import until

pytestmark = pytest.mark.linux

SRC = Path(__file__).resolve().parents[1] / "src"
FIXTURES = SRC / "mcp_tether" / "lab" / "python"
COOKIE_VAR = "MCP_TETHER_TEST_SESSION"  # tests/conftest.py finds orphans by it
GRACE = 0.3  # short graces keep the ladder fast; the defaults are tested by value
TERM_GRACE = 0.3

HOST = r'''
import json, os, sys, time
import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters
from mcp_tether.client import stdio_client
from mcp_tether.proc import ProcessId, cmdline, descendants, is_running

cfg = json.loads(sys.argv[1])

def say(**kw):
    print(json.dumps(kw), flush=True)

async def main():
    params = StdioServerParameters(
        command=cfg["command"], args=cfg["args"], env=cfg["env"], cwd=cfg.get("cwd")
    )
    errlog = open(cfg["errlog"], "w")
    tree = []
    left_at = None
    with anyio.CancelScope() as scope:
        async with stdio_client(
            params, errlog, grace=cfg["grace"], term_grace=cfg["term_grace"]
        ) as (read, write):
            try:
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    info = getattr(init, "server_info", None) or init.serverInfo
                    tools = await session.list_tools()
                    members = descendants(os.getpid())
                    tree = [list(p.ident) for p in members]
                    # Read here, while the block is open: right after this event the
                    # host leaves it and the tree ends.
                    say(event="ready", server=info.name, tools=[t.name for t in tools.tools],
                        tree=tree, argvs=[cmdline(p.pid) for p in members])
                    if cfg["mode"] == "hang":
                        await anyio.sleep_forever()
                    if cfg["mode"] == "call":  # cancelled while connected, a call in flight
                        scope.deadline = anyio.current_time() + cfg["cancel_after"]
                        await session.call_tool("sleep", {"seconds": 60})
            finally:
                left_at = time.monotonic()  # leaving stdio_client's block starts now
    done = time.monotonic()
    alive = [t for t in tree if is_running(ProcessId(*t))]
    say(event="exited", alive=alive, cancelled=scope.cancelled_caught,
        seconds=done - left_at)

anyio.run(main)
'''


def _mcp1_python() -> str:
    py = os.environ.get("MCP_TETHER_MCP1_PYTHON")
    if not py:
        pytest.skip("set MCP_TETHER_MCP1_PYTHON to an interpreter with mcp>=1.10,<2")
    return py


@pytest.fixture(params=["mcp2", "mcp1"])
def host_python(request: pytest.FixtureRequest) -> str:
    return sys.executable if request.param == "mcp2" else _mcp1_python()


class Host:
    """A running host script; its JSON lines on stdout, the server's stderr in a file."""

    def __init__(self, python: str, tmp: Path, command: str, args: list[str], **cfg: Any):
        self.errlog = tmp / "server-stderr.txt"
        config = {
            "command": command,
            "args": args,
            "env": {COOKIE_VAR: os.environ[COOKIE_VAR]},
            "errlog": str(self.errlog),
            "grace": GRACE,
            "term_grace": TERM_GRACE,
            "mode": "close",
            **cfg,
        }
        script = tmp / "host.py"
        script.write_text(HOST)
        env = {**os.environ, "PYTHONPATH": str(SRC)}  # the host's, not the server's
        self.proc = subprocess.Popen(
            [python, str(script), json.dumps(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def event(self, timeout: float = 60.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # the host always ends with "exited" or dies
        if not line:
            self.proc.wait(timeout)
            raise AssertionError(
                f"host ended (status {self.proc.returncode}) without a report; "
                f"server stderr: {self.errlog.read_text()[-2000:] if self.errlog.exists() else ''}"
            )
        return json.loads(line)  # type: ignore[no-any-return]

    def finish(self) -> int:
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        return self.proc.wait(30)


def _idents(tree: list[list[Any]]) -> list[ProcessId]:
    return [ProcessId(int(pid), float(start)) for pid, start in tree]


def _wait_all_gone(idents: list[ProcessId], timeout: float) -> None:
    """Every process of `idents` gone, or an AssertionError naming the ones still running."""
    try:
        until(lambda: not any(is_running(i) for i in idents),
              "every process of the server's tree to end", timeout)
    except AssertionError as e:
        left = [i for i in idents if is_running(i)]
        raise AssertionError(f"{e}; still running: {left}") from None


def _fixture(name: str) -> tuple[str, list[str]]:
    return sys.executable, [str(FIXTURES / f"{name}.py")]


# The servers whose SDK nothing here checks (what is checked is the host's SDK around our
# client) are tests/servers/mini.py: stdlib, no SDK start-up (1 s of CPU each); `--thread`
# outlives EOF, `--log-eof` says on stderr that EOF came, `--echo-version` answers either
# SDK line's initialize. The daemonizer (a helper in a session of its own) stays the lab's.
MINI = [sys.executable, "-S", str(Path(__file__).resolve().parent / "servers" / "mini.py"),
        "--echo-version"]
IGNORES_EOF = " ".join([*MINI, "--thread", "--log-eof"]) + "; true"  # behind sh -c


def test_initialize_and_tools_list_work_through_the_guard(host_python: str, tmp_path: Path) -> None:
    """1. The SDK's ClientSession does `initialize` and `tools/list` through our client.
    2. The server runs behind the guard (`mcp_tether run` is its parent).
    3. Leaving the block ends the whole tree before the block returns."""
    host = Host(host_python, tmp_path, MINI[0], MINI[1:])
    ready = host.event()
    assert ready["server"] == "mini"
    assert ready["tools"] == ["sleep"]
    argvs = ready["argvs"]  # read by the host before it left the block
    assert any("mcp_tether" in a[:5] and "run" in a for a in argvs), argvs
    exited = host.event()
    assert exited["alive"] == []
    assert host.finish() == 0


def test_a_server_that_ignores_eof_behind_sh_c_is_gone_when_the_block_exits(
    host_python: str, tmp_path: Path
) -> None:
    """1. `sh -c 'python mini.py --thread; true'`: the server ignores EOF, sh waits for it.
    2. Leaving the block: every process of the tree (guard, sh, server) is gone by the
       time the block returns, after the grace and SIGTERM."""
    host = Host(host_python, tmp_path, "sh", ["-c", IGNORES_EOF])
    ready = host.event()
    assert len(ready["tree"]) >= 3  # guard, sh, python
    exited = host.event()
    assert exited["alive"] == []
    assert exited["seconds"] >= GRACE  # the server got its grace before SIGTERM
    assert "stdin-eof" in host.errlog.read_text()  # it saw EOF (stderr went to errlog)
    assert host.finish() == 0


def test_a_helper_that_left_the_servers_group_is_gone_when_the_block_exits(
    host_python: str, tmp_path: Path
) -> None:
    """1. `daemonizer` double-forks a helper into a session of its own.
    2. The SDK's killpg cannot reach it; the guard (its subreaper) ends it, and the
       block returns only after that."""
    host = Host(host_python, tmp_path, *_fixture("daemonizer"))
    ready = host.event()
    assert len(ready["tree"]) >= 3  # guard, server, escaped helper
    exited = host.event()
    assert exited["alive"] == []
    assert host.finish() == 0


def test_a_host_sigkilled_mid_session_leaves_no_process_of_the_servers_tree(
    host_python: str, tmp_path: Path
) -> None:
    """1. A host holds a session with an EOF-ignoring server behind `sh -c`.
    2. The host is SIGKILLed: no stdin close, no ladder of its own.
    3. Within the guard's ladder, every process of the server's tree is gone."""
    host = Host(host_python, tmp_path, "sh", ["-c", IGNORES_EOF], mode="hang")
    tree = _idents(host.event()["tree"])
    assert len(tree) >= 3
    host_id = ProcessId(host.proc.pid, 0.0)
    from mcp_tether.proc import identify

    host_id = identify(host.proc.pid) or host_id
    assert signal_process(host_id, signal.SIGKILL) == "sent"
    host.proc.wait(10)
    assert host.proc.returncode == -signal.SIGKILL
    _wait_all_gone(tree, 30.0)


@pytest.mark.node
def test_a_host_sigkilled_with_a_node_timer_server_leaves_nothing(
    host_python: str, tmp_path: Path
) -> None:
    """1. The TypeScript SDK `timer` fixture: ignores EOF, a live timer keeps it up.
    2. The host is SIGKILLed; the guard ends the Node server anyway."""
    cache = node_env.cache_dir()
    if not (cache / "node_modules" / ".mcp-tether-installed").exists() or node_env.missing_tools():
        pytest.skip("Node fixtures not installed (mcp-tether lab --install-node)")
    host = Host(host_python, tmp_path, "node", [str(cache / "timer.mjs")], mode="hang",
                cwd=str(cache))
    tree = _idents(host.event()["tree"])
    from mcp_tether.proc import identify

    host_id = identify(host.proc.pid)
    assert host_id is not None
    assert signal_process(host_id, signal.SIGKILL) == "sent"
    host.proc.wait(10)
    _wait_all_gone(tree, 30.0)


def test_cancellation_while_connected_runs_the_ladder(host_python: str, tmp_path: Path) -> None:
    """1. Connected, a tool call in flight (`sleep 60`): the host's cancel scope fires.
    2. The ladder runs, shielded: the server sees EOF first (it logs `stdin-eof`),
       then SIGTERM after the grace; the block returns with the tree gone."""
    host = Host(host_python, tmp_path, "sh", ["-c", IGNORES_EOF], mode="call", cancel_after=1.0)
    host.event()
    exited = host.event()
    assert exited["cancelled"] is True
    assert exited["alive"] == []
    assert exited["seconds"] >= GRACE
    assert "stdin-eof" in host.errlog.read_text()
    assert host.finish() == 0


ERRORS = r'''
import json, sys, anyio
from mcp.client.stdio import StdioServerParameters, stdio_client as sdk
from mcp_tether.client import stdio_client as ours

async def first_error(client, command):
    try:
        async with client(StdioServerParameters(command=command)):
            return None
    except BaseException as exc:
        return [type(exc).__name__, str(exc)]

async def main():
    out = {}
    for command in sys.argv[1:]:
        out[command] = [await first_error(sdk, command), await first_error(ours, command)]
    print(json.dumps(out))

anyio.run(main)
'''


def test_a_command_that_cannot_start_raises_what_the_sdk_raises(
    host_python: str, tmp_path: Path
) -> None:
    """Missing, not executable, a directory: the same exception class and message as the
    SDK's client of that line, and no process started (the host exits cleanly)."""
    noexec = tmp_path / "noexec"
    noexec.write_text("#!/bin/sh\n")
    commands = ["no-such-command-mcp-tether", str(noexec), str(tmp_path)]
    script = tmp_path / "errors.py"
    script.write_text(ERRORS)
    out = subprocess.run(
        [host_python, str(script), *commands],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    for command in commands:
        sdk_error, our_error = result[command]
        assert sdk_error is not None and our_error == sdk_error, command
    assert result["no-such-command-mcp-tether"][1][0] == "FileNotFoundError"
    assert result[str(noexec)][1][0] == "PermissionError"
