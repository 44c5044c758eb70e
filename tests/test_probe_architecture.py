"""The probe and the lab stand on the process core (issue 8): they never signal, wait,
reap or start sessions themselves, no module is over ~450 lines, each says its job."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "mcp_tether"
MODULES = sorted(
    [*(SRC / "probe").rglob("*.py"), *(SRC / "lab").glob("*.py"), SRC / "pytest_plugin.py"]
)
FORBIDDEN = {
    ("os", "kill"), ("os", "killpg"), ("os", "waitpid"), ("os", "waitid"), ("os", "setsid"),
    ("signal", "pidfd_send_signal"), ("signal", "set_wakeup_fd"),
}


def _ids(path: Path) -> str:
    return str(path.relative_to(SRC))


@pytest.mark.parametrize("path", MODULES, ids=_ids)
def test_probe_and_lab_modules_leave_processes_to_the_core(path: Path) -> None:
    tree = ast.parse(path.read_text())
    calls = [
        f"{node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
        and (node.value.id, node.attr) in FORBIDDEN
    ]
    assert calls == [], f"{_ids(path)} calls {calls}: use mcp_tether.proc"
    assert "PR_SET_CHILD_SUBREAPER" not in path.read_text().split('"""', 2)[-1]


@pytest.mark.parametrize("path", MODULES, ids=_ids)
def test_each_module_is_small_and_opens_with_its_job(path: Path) -> None:
    text = path.read_text()
    assert len(text.splitlines()) <= 450
    assert ast.get_docstring(ast.parse(text)), f"{_ids(path)} has no module docstring"
