"""Interpreters for each SDK line the helper supports (a fixture shared by test_tether*).

mcp 2.x is this venv's; mcp 1.x and the standalone fastmcp come from the interpreters
named by MCP_TETHER_MCP1_PYTHON / MCP_TETHER_FASTMCP_PYTHON (CI builds them), else
from venvs made once under /tmp (unless MCP_TETHER_NO_INSTALL is set).
"""

from __future__ import annotations

import fcntl
import functools
import os
import subprocess
import sys
from pathlib import Path

SIDE_VENVS = {
    # name: (pip requirement, module that must import, env var naming a ready interpreter)
    "mcp1": ("mcp>=1.10,<2", "mcp.server.fastmcp", "MCP_TETHER_MCP1_PYTHON"),
    "fastmcp": ("fastmcp>=2.10", "fastmcp", "MCP_TETHER_FASTMCP_PYTHON"),
}


def _side_python(name: str) -> str | None:
    """An interpreter with `name`'s SDK: from the env var, or a venv made once under /tmp."""
    requirement, module, var = SIDE_VENVS[name]
    if os.environ.get(var):
        return os.environ[var]
    venv = Path(os.environ.get("MCP_TETHER_VENVS", "/tmp")) / f"mcp-tether-test-{name}"
    py = venv / "bin" / "python"
    # psutil as `pip install mcp-tether` brings it: the portable pass runs the helper
    # inside these servers on psutil (a venv without it fails that pass, not skips it).
    ok = [str(py), "-c", f"import {module}, anyio, psutil"]
    if py.exists() and subprocess.run(ok, capture_output=True).returncode == 0:
        return str(py)
    if os.environ.get("MCP_TETHER_NO_INSTALL"):
        return None
    # tests/run's three passes start at once: one builds, the others wait and reuse it.
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"mcp-tether-test-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if py.exists() and subprocess.run(ok, capture_output=True).returncode == 0:
            return str(py)
        return _build(venv, py, requirement, ok)


def _build(venv: Path, py: Path, requirement: str, ok: list[str]) -> str | None:
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        subprocess.run(
            [str(py), "-m", "pip", "install", "-q", requirement, "psutil>=5.9"],
            check=True,
            capture_output=True,
            timeout=300,
        )
    except (subprocess.SubprocessError, OSError):
        return None
    return str(py) if subprocess.run(ok, capture_output=True).returncode == 0 else None


@functools.cache
def interpreters_by_sdk() -> dict[str, str | None]:
    """sdk -> interpreter (None: not available), found or built once per session."""
    return {"mcp2": sys.executable, **{name: _side_python(name) for name in SIDE_VENVS}}
