"""The `mcp_lifecycle` pytest fixture: real probes of a tethered and an untethered server."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["pytester"]

probe_module = pytest.importorskip("mcp_tether.probe", reason="the probe is not there yet")

SRC = Path(__file__).resolve().parents[1] / "src"

# Held open by a non-daemon thread AND a lifespan task group nobody cancels: run() never
# returns after EOF. With the helper it still passes every scenario.
TETHERED = textwrap.dedent(
    """
    import threading, anyio
    from contextlib import asynccontextmanager
    from mcp.server.mcpserver import MCPServer
    import mcp_tether

    @asynccontextmanager
    async def lifespan(_server):
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.sleep_forever)
            yield {}

    mcp = MCPServer("tethered", lifespan=lifespan)

    @mcp.tool()
    def echo(text: str) -> str:
        "Return the text."
        return text

    threading.Thread(target=threading.Event().wait, daemon=False).start()
    mcp_tether.run(mcp)
    """
)

# The same server without the helper: it outlives its client.
UNTETHERED = textwrap.dedent(
    """
    import threading
    from mcp.server.mcpserver import MCPServer

    mcp = MCPServer("untethered")

    @mcp.tool()
    def echo(text: str) -> str:
        "Return the text."
        return text

    threading.Thread(target=threading.Event().wait, daemon=False).start()
    mcp.run()
    """
)


def _script(tmp_path: Path, name: str, text: str) -> list[str]:
    path = tmp_path / name
    path.write_text(text)
    return [sys.executable, str(path)]


def _env() -> dict[str, str]:
    return {"PYTHONPATH": str(SRC)}


def test_a_tethered_server_passes_every_scenario_for_both_host_styles(
    mcp_lifecycle: Any, tmp_path: Path
) -> None:
    """Helper on, thread and stuck task group inside: every scenario passes, node and
    python, robust ones included (the helper's servers meet the robust level)."""
    report = mcp_lifecycle(
        _script(tmp_path, "tethered.py", TETHERED),
        host_style=("node", "python"),
        idle=1.0,
        env=_env(),
    )
    report.assert_passes(level="robust")
    scenarios = {(r.host_style, r.scenario) for r in report.results}
    assert ("node", "inherited-writer") in scenarios and ("python", "crash") in scenarios
    assert ("node", "sigint") in scenarios and ("python", "sigint") in scenarios
    assert report.passed and report.meets == "robust"


def test_an_untethered_server_fails_with_verdict_diagnosis_remedy_and_survivors(
    mcp_lifecycle: Any, tmp_path: Path
) -> None:
    """Without the helper the client's death orphans it; the failure says so readably,
    with the probe's diagnosis (what kept it alive) and its remedy (the two-line fix)."""
    argv = _script(tmp_path, "untethered.py", UNTETHERED)
    report = mcp_lifecycle(argv, scenarios=["crash"], window=1.0, env=_env())
    assert not report.passed
    with pytest.raises(AssertionError) as excinfo:
        report.assert_passes()
    message = str(excinfo.value)
    assert "1 of 1 lifecycle scenarios failed" in message
    assert "scenario 'crash' (node host): verdict 'orphaned'" in message
    assert "survivor pid" in message and "untethered.py" in message
    assert "diagnosis: " in message and "non-daemon thread" in message
    assert "remedy: " in message and "mcp_tether.run(mcp)" in message
    assert "FAIL crash (node host): orphaned" in message


def test_the_fixture_comes_with_the_package_through_the_entry_point(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """A fresh pytest run gets `mcp_lifecycle` from the pytest11 entry point alone."""
    argv = _script(tmp_path, "untethered.py", UNTETHERED)
    pytester.makepyfile(
        test_user=f"""
        def test_server_dies_with_its_client(mcp_lifecycle):
            report = mcp_lifecycle({argv!r}, scenarios=("crash",), window=1.0,
                                   env={_env()!r})
            report.assert_passes()
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*scenario 'crash' (node host): verdict 'orphaned'*"])


def test_loading_the_plugin_imports_nothing_heavy() -> None:
    """pytest start-up pays for the plugin module only: no probe, psutil, rich or mcp."""
    code = (
        "import sys, mcp_tether.pytest_plugin; "
        "print(sorted(m for m in ('mcp_tether.probe', 'psutil', 'rich', 'mcp')"
        " if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert out.stdout.strip() == "[]"
