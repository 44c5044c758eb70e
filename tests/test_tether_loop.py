"""The helper keeps the server's own cleanup, on every SDK line and for every trigger.

The fixture (`servers/tether_pool.py`) keeps a pool task on its event loop, awaits a
flush in its lifespan's `finally`, and has an async hook that awaits the pool's task
(only possible on the loop that task belongs to). The probe drives each trigger against
a fresh server (node host style: close, exit, crash, half-close, SIGTERM, SIGINT, and
parent death with a leaked stdin writer); every server process writes its own note file,
so each one's cleanup is checked, not just the verdicts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import tether_venvs
from mcp_tether.probe import ProbeOptions, probe

pytestmark = pytest.mark.linux


@pytest.fixture(scope="session")
def interpreters() -> dict[str, str | None]:
    return tether_venvs.interpreters_by_sdk()

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
POOL = str(HERE / "servers" / "tether_pool.py")
TRIGGERS = ("close", "exit", "crash", "half-close", "sigterm", "sigint", "inherited-writer")
CLEAN = ["ready", "lifespan-finally", "pool-task-done", "hook-pool-closed", "sync-hook"]
ENV = {"PYTHONPATH": str(SRC), "FASTMCP_SHOW_SERVER_BANNER": "0"}


def _notes(logdir: Path) -> dict[int, list[str]]:
    return {int(p.stem): p.read_text().split() for p in logdir.glob("*.log")}


@pytest.mark.slow
@pytest.mark.parametrize("sdk", ["mcp2", "mcp1", "fastmcp"])
def test_the_lifespan_finally_and_a_loop_bound_hook_complete_for_every_trigger(
    tmp_path: Path, interpreters: dict[str, str | None], sdk: str
) -> None:
    """1. One server per trigger; 2. each exits by itself; 3. each ran all of its cleanup."""
    py = interpreters[sdk]
    if py is None:
        pytest.skip(f"no interpreter with {sdk}")
    report = probe(
        [py, POOL, sdk, str(tmp_path)],
        # A roomy deadline: every step of the cleanup is asked to complete, not to be fast
        # (the probe's window, which credits a loaded machine, still judges the exit).
        ProbeOptions(scenarios=TRIGGERS, env={**ENV, "DEADLINE": "10"}, ready_timeout=60.0),
    )
    by = {r.scenario: r for r in report.results}
    assert {s: r.verdict for s, r in by.items()} == dict.fromkeys(TRIGGERS, "exited"), [
        (r.scenario, r.detail, r.stderr_tail) for r in report.results
    ]
    assert by["sigterm"].exit_status == 128 + signal.SIGTERM
    assert by["sigint"].exit_status == 128 + signal.SIGINT
    notes = _notes(tmp_path)
    assert len(notes) == len(TRIGGERS), notes
    assert all(words == CLEAN for words in notes.values()), notes


def test_a_hook_that_forks_never_lets_the_child_run_the_remaining_hooks(tmp_path: Path) -> None:
    """The forked child returns from the hook and ends there; only the parent goes on."""
    proc = subprocess.Popen(
        [sys.executable, POOL, "mcp2", str(tmp_path), "fork-hook"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **ENV},
    )
    try:
        _, err = proc.communicate(input=b"", timeout=60)  # EOF at once: shut down
        assert proc.returncode == 0, err
        notes = _notes(tmp_path)
        assert notes[proc.pid] == [
            "ready", "lifespan-finally", "pool-task-done", "hook-pool-closed", "forker",
            "sync-hook",
        ], notes
        # The child's only trace would be its own note file: it has none.
        assert list(notes) == [proc.pid], notes
        assert err.count(b"mcp-tether: ") == 1, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


UNARMED = textwrap.dedent(
    """
    import mcp_tether

    @mcp_tether.on_shutdown
    def close_pool():
        pass
    """
)


def _run_script(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> Any:
    script = tmp_path / "script.py"
    script.write_text(text)
    return subprocess.run(
        [sys.executable, str(script)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **ENV, **(env or {})},
    )


def test_hooks_registered_without_arming_the_helper_are_warned_about_once(
    tmp_path: Path,
) -> None:
    """on_shutdown() but never run()/tethered(): one warning naming the hook."""
    done = _run_script(tmp_path, UNARMED)
    assert done.returncode == 0
    assert done.stderr.count("mcp-tether: ") == 1, done.stderr
    assert "not armed" in done.stderr and "close_pool" in done.stderr


def test_the_unarmed_warning_also_comes_while_the_process_runs_on(tmp_path: Path) -> None:
    """A server that never arms the helper and never exits still gets the warning."""
    text = textwrap.dedent(
        """
        import os, time
        from mcp_tether.tether import hooks
        hooks.UNARMED_WARNING_AFTER = 0.2
        import mcp_tether
        mcp_tether.on_shutdown(lambda: None)
        deadline = time.monotonic() + 30
        while not hooks._warned.locked() and time.monotonic() < deadline:
            time.sleep(0.02)   # polling for the warning, with a deadline
        os._exit(0)            # no atexit: only the running-process path may speak
        """
    )
    done = _run_script(tmp_path, text)
    assert "not armed" in done.stderr, done.stderr


TETHERED = textwrap.dedent(
    """
    import logging, sys
    import mcp_tether
    if len(sys.argv) > 1:  # the server routes our logger to its own handler
        handler = logging.FileHandler(sys.argv[1])
        handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        logging.getLogger("mcp_tether").addHandler(handler)
    with mcp_tether.tethered():
        pass
    """
)


def test_an_unknown_mcp_tether_log_value_is_reported(tmp_path: Path) -> None:
    done = _run_script(tmp_path, TETHERED, env={"MCP_TETHER_LOG": "bogus"})
    assert "unknown MCP_TETHER_LOG value 'bogus'" in done.stderr, done.stderr
    assert "mcp-tether: server stopped" in done.stderr or "client gone" in done.stderr


def test_diagnostics_go_through_the_mcp_tether_logger(tmp_path: Path) -> None:
    """A handler on logging.getLogger('mcp_tether') receives the exit line."""
    log_file = tmp_path / "our.log"
    script = tmp_path / "script.py"
    script.write_text(TETHERED)
    done = subprocess.run(
        [sys.executable, str(script), str(log_file)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        env={**os.environ, **ENV},
    )
    assert done.returncode == 0, done.stderr
    assert "mcp_tether WARNING mcp-tether: client gone (stdin closed)" in log_file.read_text()
    assert "mcp-tether:" not in done.stderr  # configured: routed, not duplicated


CHILDREN = str(HERE / "servers" / "tether_children.py")


def test_a_server_with_a_child_and_a_grandchild_passes_robust_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    """1. Every scenario against a fresh `mcp_tether.run` server that started a child (in a
    session of its own) and a grandchild that ignores SIGTERM; 2. the probe's robust level
    passes (nothing of any tree outlived its window); 3. each server's hook saw both kids
    alive: the hooks ran before the children ended; 4. none of the kids is left."""
    pytest.importorskip("mcp.server.mcpserver")
    from mcp_tether.proc import identify

    report = probe([sys.executable, CHILDREN, str(tmp_path)],
                   ProbeOptions(env=ENV, ready_timeout=60.0))
    assert report.passes("robust"), [
        (r.scenario, r.verdict, r.detail, r.stderr_tail) for r in report.results]
    # The `idle` scenario's server is still serving when the probe ends it: not a trigger
    # of ours. Whether its hook runs depends on how far the probe's ladder got on this
    # machine's clock (on a loaded one it did: 9 notes for 8 exits), so it is left out.
    idle = {e.get("pid") for r in report.results if r.scenario == "idle"
            for e in (r.record or {}).get("events", [])}
    assert idle, "the idle scenario's server pid"
    notes = [words for pid, words in _notes(tmp_path).items() if pid not in idle]
    exited = [r for r in report.results if r.verdict == "exited"]
    assert len(exited) >= 7 and "hook-kids-gone" not in str(notes), notes
    assert notes.count(["ready", "hook-kids-alive"]) == len(exited) == len(notes), notes
    assert all("2 child processes ended" in (r.stderr_tail or "") for r in exited)
    for kids in tmp_path.glob("*.kids"):
        for line in kids.read_text().splitlines():
            pid, start = map(int, line.split())
            now = identify(pid)
            assert now is None or now.start != start, f"kid {pid} outlived its server"
