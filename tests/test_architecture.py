"""The layout is the architecture: tests that keep it so.

1. Only the process core touches processes: no module outside `proc/`, `platform.py`,
   `_plat/` and `watch/` calls os.kill, killpg, waitpid, waitid, pidfd_send_signal,
   set_wakeup_fd, setsid or the subreaper prctl (the lab's fixture servers excepted:
   they are deliberately naive programs, not part of the tool; so are the host check's
   recorder, a server any host runs as a plain script, and its stand-in for a terminal's
   shell: stdlib-only scripts by design).
2. Every module is one job: at most 800 lines, and a docstring that says it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "mcp_tether"
CORE = ("proc", "watch", "_plat")
CORE_FILES = ("platform.py",)
FIXTURES = ("lab/python", "lab/node", "hostcheck/recorder.py", "hostcheck/ttyshell.py")
FORBIDDEN_CALLS = {
    ("os", "kill"), ("os", "killpg"), ("os", "waitpid"), ("os", "waitid"), ("os", "setsid"),
    ("signal", "pidfd_send_signal"), ("signal", "set_wakeup_fd"),
}
FORBIDDEN_NAMES = {"PR_SET_CHILD_SUBREAPER", "PR_SET_PDEATHSIG", "prctl"}  # use platform.*
MAX_LINES = 800


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if not any(str(p.relative_to(PACKAGE)).startswith(f) for f in FIXTURES))


def _is_core(path: Path) -> bool:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] in CORE or str(rel) in CORE_FILES


def _process_calls(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in FORBIDDEN_CALLS:
                found.append(f"{node.value.id}.{node.attr} (line {node.lineno})")
            elif node.attr in FORBIDDEN_NAMES:
                found.append(f"{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            found.append(f"{node.id} (line {node.lineno})")
        elif isinstance(node, ast.ImportFrom) and node.module in ("os", "signal"):
            for alias in node.names:
                if (node.module, alias.name) in FORBIDDEN_CALLS:
                    found.append(f"from {node.module} import {alias.name} (line {node.lineno})")
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_only_the_process_core_touches_processes(path: Path) -> None:
    """Signals, waits, sessions and the subreaper flag go through proc/ and platform."""
    if _is_core(path):
        return
    calls = _process_calls(ast.parse(path.read_text(), str(path)))
    assert not calls, f"{path.relative_to(PACKAGE)} calls the process core's primitives: {calls}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_module_is_one_screenful_of_one_job(path: Path) -> None:
    """At most about 800 lines, opening with a docstring that says what it guarantees."""
    text = path.read_text()
    lines = text.count("\n")
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines"
    if text.strip():
        assert ast.get_docstring(ast.parse(text)), f"{path.relative_to(PACKAGE)} has no docstring"
