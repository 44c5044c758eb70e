"""The Node package's layout is its architecture: tests that keep it so.

1. One file for platform decisions: no file of the package but node/lib/platform.cjs
   reads `process.platform` (or asks `os` which platform this is); the others ask it for
   a capability by name (`PROCFS`, `ANCESTRY`, `POSIX`, `GUARD_AUTO`).
2. Every /proc read is lib/procfs.cjs's: no string elsewhere names /proc (comments may,
   to say where a reader looks); every `ps` run is lib/ps.cjs's.
3. Small modules by role: each file opens with a comment that says what it is for, and
   none is over MAX_LINES lines.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

NODE = Path(__file__).resolve().parents[1] / "node"
MAX_LINES = 300
PLATFORM = "lib/platform.cjs"
PLATFORM_QUESTIONS = re.compile(r"process\.platform|\bos\.(platform|type)\(|process\.env\.OS\b")
PROC_STRING = re.compile(r"""['"`]/proc\b""")
PS_RUN = re.compile(r"""\bexecFile(Sync)?\(\s*['"]ps['"]""")


def _package_files() -> list[str]:
    """The package's code, as paths relative to node/: its tests and fixtures left out."""
    return sorted(str(p.relative_to(NODE)) for p in NODE.rglob("*")
                  if p.suffix in (".cjs", ".mjs", ".js")
                  and p.relative_to(NODE).parts[0] not in ("test", "node_modules"))


def _code(text: str) -> str:
    """`text` without its comments (line comments and /* */ blocks), strings kept."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("//"))


def test_the_package_has_files_to_check() -> None:
    """The walks below see the entries and the lib/ modules (an empty walk proves nothing)."""
    files = _package_files()
    assert {"index.cjs", "client.cjs", "register.cjs", PLATFORM, "lib/procfs.cjs"} <= set(files)


@pytest.mark.parametrize("rel", _package_files())
def test_only_lib_platform_asks_which_platform_this_is(rel: str) -> None:
    """Every platform decision is made once, in lib/platform.cjs."""
    if rel == PLATFORM:
        return
    text = (NODE / rel).read_text()
    found = [f"{rel}:{n}: {ln.strip()}" for n, ln in enumerate(text.splitlines(), 1)
             if PLATFORM_QUESTIONS.search(ln)]
    assert found == [], "ask lib/platform.cjs for the capability instead"


@pytest.mark.parametrize("rel", _package_files())
def test_only_the_readers_read_proc_or_run_ps(rel: str) -> None:
    """/proc is lib/procfs.cjs's, `ps` is lib/ps.cjs's."""
    code = _code((NODE / rel).read_text())
    if rel != "lib/procfs.cjs":
        assert not PROC_STRING.search(code), f"{rel} names /proc: use lib/procfs.cjs"
    if rel != "lib/ps.cjs":
        assert not PS_RUN.search(code), f"{rel} runs ps: use lib/ps.cjs"


@pytest.mark.parametrize("rel", _package_files())
def test_each_module_is_small_and_says_what_it_is_for(rel: str) -> None:
    """A comment first (after 'use strict'), and at most MAX_LINES lines."""
    lines = (NODE / rel).read_text().splitlines()
    body = lines[1:] if lines and lines[0] == "'use strict';" else lines
    assert body and body[0].startswith("// "), f"{rel} opens without saying what it is for"
    assert len(lines) <= MAX_LINES, f"{rel} has {len(lines)} lines: split it by role"


def test_the_checks_see_a_platform_question_and_a_proc_read() -> None:
    """The checks can fail: each pattern matches the code it forbids, not its comment."""
    assert PLATFORM_QUESTIONS.search("if (process.platform === 'darwin') {")
    assert PLATFORM_QUESTIONS.search("const p = os.platform();")
    assert PROC_STRING.search(_code("const s = fs.readFileSync(`/proc/${pid}/stat`);"))
    assert not PROC_STRING.search(_code("// reads '/proc/<pid>/stat'\nconst x = 1;"))
    assert PS_RUN.search("execFileSync('ps', ['-o', 'pid='])")
