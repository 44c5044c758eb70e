"""`mcp_tether.client` in this process: SDK parity, the plain handle, the safety rung.

Parity tests run the SDK's own `stdio_client` and ours on the same parameters and
compare what a host would see (the error raised, the environment and cwd the server
gets, the bytes it receives); the rest checks real process trees by identity.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters
from mcp.client.stdio import stdio_client as sdk_stdio_client

from mcp_tether import ladder, platform
from mcp_tether.client import ServerProcess, guard_command, spawn, stdio_client
from mcp_tether.client.launch import check_command
from mcp_tether.client.stop import settle, settle_budget
from mcp_tether.proc import ProcessId, descendants, identify, is_running
from mcp_tether.proc.signals import signal_process
from polling import until
from probe_helpers import MINI, PY

pytestmark = pytest.mark.linux

# The servers here are tests/servers/mini.py (stdlib, no SDK: the client's ladder is what
# these tests check, not a server SDK's start-up; `--thread` for one that outlives EOF).
# The SDK's servers are checked by the lab and test_client_hosts.py.
COOKIE_VAR = "MCP_TETHER_TEST_SESSION"

# A stdio "server" in sh: reports its cwd and two variables as one JSON-RPC
# notification, then waits for EOF (cat) and exits.
REPORTER = (
    'printf \'{"jsonrpc":"2.0","method":"report","params":'
    '{"cwd":"%s","extra":"%s","secret":"%s","home":"%s"}}\\n\' '
    '"$PWD" "$EXTRA" "$CLIENT_SECRET" "$HOME"; cat >/dev/null'
)


def _tree_of_me() -> list[ProcessId]:
    return [p.ident for p in descendants(os.getpid())]


def _tree_of_me_at_least(n: int) -> list[ProcessId]:
    """Our tree if it has at least n processes, else [] (not yet)."""
    tree = _tree_of_me()
    return tree if len(tree) >= n else []


async def _tree_of_at_least(n: int, timeout: float = 10.0) -> list[ProcessId]:
    """Our tree once it has n processes (the guard forks the server after it starts),
    polled in a worker thread: the event loop runs on meanwhile."""
    def wait() -> list[ProcessId]:
        return until(lambda: _tree_of_me_at_least(n), f"{n} processes in our tree", timeout)

    return await anyio.to_thread.run_sync(wait)


# -- start-up errors ----------------------------------------------------------------------


def _error_of(client: Callable[..., Any], params: StdioServerParameters) -> BaseException:
    async def main() -> None:
        async with client(params):
            pass

    with pytest.raises(BaseException) as info:  # noqa: PT011  # compared below, field by field
        anyio.run(main)
    return info.value


@pytest.mark.parametrize(
    "command",
    ["no-such-command-mcp-tether", "/nonexistent/dir/server", "noexec", "."],
)
def test_a_command_that_cannot_start_raises_what_the_sdk_client_raises(
    command: str, tmp_path: Path
) -> None:
    """1. Missing on PATH, missing path, not executable, a directory.
    2. Ours raises the same exception class with the same message as the SDK's client,
       and starts nothing."""
    (tmp_path / "noexec").write_text("#!/bin/sh\n")
    cmd = str(tmp_path / command) if command in ("noexec", ".") else command
    params = StdioServerParameters(command=cmd)
    expected = _error_of(sdk_stdio_client, params)
    got = _error_of(stdio_client, params)
    assert type(got) is type(expected)
    assert str(got) == str(expected)
    assert _tree_of_me() == []


def test_a_missing_cwd_raises_what_the_sdk_client_raises() -> None:
    """The spawn reports a bad cwd itself, exactly as the SDK's client."""
    params = StdioServerParameters(command="true", cwd="/nonexistent-mcp-tether-dir")
    expected = _error_of(sdk_stdio_client, params)
    got = _error_of(stdio_client, params)
    assert (type(got), str(got)) == (type(expected), str(expected))


def test_check_command_follows_path_from_the_servers_environment(tmp_path: Path) -> None:
    """A bare name is looked up in the PATH the server will get, not in ours."""
    tool = tmp_path / "my-server"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    check_command("my-server", {"PATH": str(tmp_path)})
    with pytest.raises(FileNotFoundError):
        check_command("my-server", {"PATH": "/nonexistent"})


# -- what the server gets -----------------------------------------------------------------


def _report(client: Callable[..., Any], params: StdioServerParameters) -> dict[str, Any]:
    out: dict[str, Any] = {}

    async def main() -> None:
        async with client(params) as (read, _write):
            message = await read.receive()
            dumped = json.loads(message.message.model_dump_json(by_alias=True))
            out.update(dumped.get("params") or dumped["root"]["params"])

    anyio.run(main)
    return out


def test_env_and_cwd_reach_the_server_as_with_the_sdk_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1. `env` is merged over the SDK's default environment; other variables of the
       host (a secret) do not leak; `cwd` is honoured.
    2. The server sees exactly what it sees under the SDK's client."""
    monkeypatch.setenv("CLIENT_SECRET", "s3cret")
    params = StdioServerParameters(
        command="sh",
        args=["-c", REPORTER],
        env={"EXTRA": "x", COOKIE_VAR: os.environ[COOKIE_VAR]},
        cwd=str(tmp_path),
    )
    ours = _report(stdio_client, params)
    assert ours == _report(sdk_stdio_client, params)
    assert ours["cwd"] == str(tmp_path)
    assert ours["extra"] == "x" and ours["secret"] == ""


def test_messages_pass_byte_for_byte_in_both_directions(tmp_path: Path) -> None:
    """1. The server echoes every stdin line to stdout and records the raw bytes it got.
    2. A request sent through our write stream arrives as the SDK's client sends it, and
       comes back as the same message."""
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCRequest

    got = tmp_path / "got.bin"
    echo = f"tee {got}"
    request = JSONRPCRequest(jsonrpc="2.0", id=7, method="ping", params={"é": "ü" * 3})

    async def roundtrip(client: Callable[..., Any]) -> tuple[bytes, Any]:
        params = StdioServerParameters(command="sh", args=["-c", echo])
        async with client(params) as (read, write):
            await write.send(SessionMessage(request))
            back = await read.receive()
        return got.read_bytes(), back.message

    sdk_bytes, sdk_back = anyio.run(roundtrip, sdk_stdio_client)
    our_bytes, our_back = anyio.run(roundtrip, stdio_client)
    assert our_bytes == sdk_bytes
    assert our_back == sdk_back == request


# -- leaving the block --------------------------------------------------------------------


def test_leaving_the_block_returns_once_an_eof_honouring_server_is_gone(tmp_path: Path) -> None:
    """1. mini exits by itself on EOF. 2. When the block returns, the guard and the
    server are both gone, and the guard's summary (in errlog) says it left by itself."""
    params = StdioServerParameters(
        command=PY[0], args=[*PY[1:], MINI],
        env={COOKIE_VAR: os.environ[COOKIE_VAR]},
    )
    tree: list[ProcessId] = []

    errlog = tmp_path / "stderr.txt"

    async def main() -> None:
        with errlog.open("w") as log:
            async with stdio_client(params, log, grace=30.0) as (read, write):
                from mcp import ClientSession

                async with ClientSession(read, write) as session:
                    await session.initialize()
                    tree.extend(_tree_of_me())

    anyio.run(main)
    assert len(tree) == 3  # the guard's front, its supervisor, the server
    assert [i for i in tree if is_running(i)] == []
    assert "server exited by itself" in errlog.read_text()  # no SIGTERM rung was needed


def _leaves(exc: BaseException) -> list[BaseException]:
    subs = getattr(exc, "exceptions", None)  # an exception group (3.11+ or exceptiongroup)
    if subs is not None:
        return [leaf for sub in subs for leaf in _leaves(sub)]
    return [exc]


def test_an_exception_in_the_block_runs_the_ladder_and_propagates_as_with_the_sdk() -> None:
    """1. The host raises inside the block; the EOF-ignoring tree is gone afterwards.
    2. The host's exception comes out as the SDK's client lets it out (on 2.x wrapped
       in the same exception group), carrying the original error."""
    params = StdioServerParameters(
        command=PY[0], args=[*PY[1:], MINI, "--thread"],
        env={COOKIE_VAR: os.environ[COOKIE_VAR]},
    )
    tree: list[ProcessId] = []

    async def main(client: Callable[..., Any], size: int, **kw: float) -> None:
        async with client(params, **kw):
            # the whole tree, or the server could be forked after the raise (seen: 2 of 3)
            tree.extend(await _tree_of_at_least(size))
            raise LookupError("host bug")

    with pytest.raises(BaseException) as sdk_info:  # noqa: PT011  # compared below
        anyio.run(main, sdk_stdio_client, 1)
    tree.clear()
    with pytest.raises(BaseException) as info:  # noqa: PT011  # compared below
        anyio.run(lambda: main(stdio_client, 3, grace=0.2, term_grace=0.2))
    assert type(info.value) is type(sdk_info.value)
    assert [type(e) for e in _leaves(info.value)] == [LookupError]
    assert len(tree) == 3  # the guard's front, its supervisor, the server
    assert [i for i in tree if is_running(i)] == []


def test_the_graces_default_to_the_spec_cited_ladder_constants() -> None:
    """Both SDKs wait 2 s per rung; so do we, through mcp_tether.ladder."""
    import inspect

    for fn in (stdio_client.__wrapped__, spawn):  # type: ignore[attr-defined]
        sig = inspect.signature(fn)
        assert sig.parameters["grace"].default == ladder.GRACE_AFTER_EOF == 2.0
        assert sig.parameters["term_grace"].default == ladder.TERM_GRACE == 2.0
    argv = guard_command("srv", ["a"], grace=1.5, term_grace=0.25)
    assert argv[argv.index("run") :] == [
        "run", "--grace", "1.5", "--term-grace", "0.25", "--", "srv", "a"
    ]


# -- the plain handle ---------------------------------------------------------------------


def test_spawn_gives_raw_pipes_and_close_ends_the_whole_tree() -> None:
    """1. `spawn` starts a server behind the guard; raw bytes go in and come out.
    2. `close()` ends the EOF-ignoring tree behind `sh -c` and returns its status."""
    script = f"{' '.join(PY)} {MINI} --thread; true"
    init = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}},
    }
    with spawn(["sh", "-c", script], grace=0.2, term_grace=0.2) as server:
        assert isinstance(server, ServerProcess)
        server.stdin.write((json.dumps(init) + "\n").encode())
        reply = json.loads(server.stdout.readline())
        assert reply["id"] == 1 and "serverInfo" in reply["result"]
        tree = _tree_of_me()
        # the guard's front (the pid the host knows; none in the portable backend), its
        # supervisor, sh, the server; and where there is no PDEATHSIG, its watcher
        front = 1 if platform.backend.WATCHES_BEYOND_PARENT else 0
        watcher = 0 if platform.has_pdeathsig() else 1
        assert len(tree) == 3 + front + watcher and tree[0].pid == server.pid
    assert server.settled is not None and server.settled.how == "exited"
    assert [i for i in tree if is_running(i)] == []
    assert server.returncode == 128 + signal.SIGTERM  # mirrored: sh died of the group SIGTERM


def test_spawn_raises_file_not_found_like_popen_and_starts_nothing() -> None:
    with pytest.raises(FileNotFoundError) as info:
        spawn(["no-such-command-mcp-tether"])
    with pytest.raises(FileNotFoundError) as popen_info:
        subprocess.Popen(["no-such-command-mcp-tether"])
    assert str(info.value) == str(popen_info.value)
    assert _tree_of_me() == []


def test_spawn_imports_no_mcp_sdk() -> None:
    """Hosts without the SDK can use the handle: importing it pulls in no `mcp`."""
    code = (
        "import sys; from mcp_tether.client import spawn; "
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'anyio'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("importable", [True, False], ids=["module", "bootstrap"])
def test_the_guard_starts_whether_or_not_its_interpreter_finds_mcp_tether(
    importable: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's default environment drops PYTHONPATH: when the host found mcp_tether
    through it, the guard is started with a bootstrap instead of `-m`. Both forms run
    the guard (bytes pass, EOF ends it) and keep `mcp_tether run` where `mcp-tether ps`
    looks for it."""
    from mcp_tether.client import launch

    monkeypatch.setattr(launch, "_importable_without_help", lambda env: importable)
    env = {"PATH": os.environ["PATH"], COOKIE_VAR: os.environ[COOKIE_VAR]}
    argv = guard_command("cat", [], grace=0.1, term_grace=0.1, env=env)
    assert ("-m" in argv[:2]) is importable
    assert "mcp_tether" in argv[:4] and "run" in argv[:6]
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=tmp_path
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"hello\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == b"hello\n"
    proc.stdin.close()
    assert proc.wait(10) == 0
    proc.stdout.close()


def test_a_host_that_found_mcp_tether_through_pythonpath_needs_the_bootstrap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcp_tether.client import launch

    root = launch.package_root()
    monkeypatch.setenv("PYTHONPATH", root)
    assert launch._importable_without_help({"PATH": "/bin"}) is False
    assert launch._importable_without_help({"PYTHONPATH": root}) is True


# -- the safety rung ----------------------------------------------------------------------


def test_a_stuck_guard_gets_the_safety_rung_with_its_tree() -> None:
    """1. The guard is SIGSTOPped (it can no longer run its ladder).
    2. After the budget, `settle` SIGKILLs the guard and the tree it read, each
       identity-checked, and reports "killed"; nothing is left."""
    server = spawn([*PY, MINI, "--thread"], grace=0.1, term_grace=0.1)
    try:
        assert server.stdout.readable()
        tree = until(lambda: _tree_of_me_at_least(2), "the guard to fork the server", 10)
        guard = identify(server.pid)
        assert guard is not None and signal_process(guard, signal.SIGSTOP) == "sent"
        server.stdin.close()
        t0 = time.monotonic()
        settled = settle(guard, 0.3)
        assert settled.how == "killed"
        assert time.monotonic() - t0 >= 0.3
        assert [i for i in tree if is_running(i)] == []
    finally:
        server.close()
    assert server.returncode == -signal.SIGKILL


def test_the_safety_budget_covers_the_guards_own_worst_case() -> None:
    assert settle_budget(2.0, 2.0) > 2.0 + 2.0 + ladder.KILL_WAIT


def test_close_lets_a_server_blocked_writing_its_stdout_exit_by_itself() -> None:
    """1. The server writes 1 MB nobody reads (blocked on a full pipe), then would exit
    at stdin EOF. 2. `close()` drains stdout while the ladder runs: the server gets to
    its EOF and exits 0 by itself, long before the SIGTERM rung (a grace of 60 s, never
    waited when it works: whether it exits by itself is the question, not how fast)."""
    script = "head -c 1000000 /dev/zero; cat >/dev/null"
    with spawn(["sh", "-c", script], grace=60.0, term_grace=0.2) as server:
        assert server.stdout.read(1) == b"\0"
    assert server.settled is not None and server.settled.how == "exited"
    assert server.returncode == 0
    assert _tree_of_me() == []


def test_leaving_the_block_drains_a_server_blocked_writing_so_it_exits_by_itself(
    tmp_path: Path,
) -> None:
    """1. The server writes 20 000 notifications nobody reads (the reader blocks on the
    session, the server on its full pipe), then would exit at stdin EOF.
    2. Leaving the block drains stdout: the server exits by itself, no SIGTERM rung."""
    script = (
        "yes '{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}' | head -n 20000;"
        " cat >/dev/null"
    )
    params = StdioServerParameters(
        command="sh", args=["-c", script], env={COOKIE_VAR: os.environ[COOKIE_VAR]}
    )

    errlog = tmp_path / "stderr.txt"

    async def main() -> None:
        with errlog.open("w") as log:
            async with stdio_client(params, log, grace=30.0, term_grace=0.2) as (read, _):
                await read.receive()
                await _tree_of_at_least(2)

    anyio.run(main)
    assert "server exited by itself" in errlog.read_text()
    assert _tree_of_me() == []


def test_encoding_and_error_handler_apply_as_with_the_sdk_client() -> None:
    """A latin-1 server: with `encoding="latin-1"` the text decodes as under the SDK's
    client; with utf-8 and `replace`, the bad byte becomes U+FFFD in both."""
    line = r'{"jsonrpc":"2.0","method":"report","params":{"cwd":"caf\351"}}\n'
    script = f"printf '{line}'; cat >/dev/null"
    for encoding, expected in (("latin-1", "café"), ("utf-8", "caf\ufffd")):
        params = StdioServerParameters(
            command="sh", args=["-c", script], encoding=encoding,
            encoding_error_handler="replace",
        )
        ours = _report(stdio_client, params)
        assert ours == _report(sdk_stdio_client, params)
        assert ours["cwd"] == expected
