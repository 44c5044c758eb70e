"""The Node package's layout is its architecture: tests that keep it so.

1. One file for platform decisions: no file of the package but
   node/lib/platform/platform.cjs reads `process.platform` (or asks `os` which platform
   this is); the others ask it for a capability by name (`PROCFS`, `ANCESTRY`, `POSIX`,
   `GUARD_AUTO`).
2. Every /proc read is the /proc reader's (lib/platform/procfs.cjs and the descriptors
   part it exports, procfs-fds.cjs): no string elsewhere names /proc (comments may, to
   say where a reader looks); every `ps` run is lib/platform/ps.cjs's.
3. Small modules by role (execa's lib/ shape): every file under lib/ sits in a folder
   named for its role (ROLES), the entry points at the top only wire, each file opens
   with a comment that says what it is for, and no file of node/ (code, types, tests,
   the README) is over MAX_LINES lines.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

NODE = Path(__file__).resolve().parents[1] / "node"
MAX_LINES = 200
PLATFORM = "lib/platform/platform.cjs"
PROC_READERS = ("lib/platform/procfs.cjs", "lib/platform/procfs-fds.cjs")
PS_READER = "lib/platform/ps.cjs"
# What each folder of lib/ is for: a new file goes in one of these (or a new role, named
# here and in docs/architecture.md), never loose in lib/.
ROLES = {
    "platform": "the one platform decision and the process readers it picks",
    "process": "a process by identity, a tree of them, its marks, its host, what it leaves",
    "terminate": "ending a tree: the ladder, tether()'s descendants, the Node watchdog",
    "tether": "tether(): arming and its triggers, the shutdown",
    "client": "the transport: options, launch, wiring, framing, back-pressure, its end",
    "output": "what the package says: stderr diagnostics, the shutdown report",
}
ENTRIES = ("index.cjs", "index.mjs", "client.cjs", "client.mjs", "register.cjs", "register.mjs")
PLATFORM_QUESTIONS = re.compile(r"process\.platform|\bos\.(platform|type)\(|process\.env\.OS\b")
PROC_STRING = re.compile(r"""['"`]/proc\b""")
PS_RUN = re.compile(r"""\bexecFile(Sync)?\(\s*['"]ps['"]""")


def _package_files() -> list[str]:
    """The package's code, as paths relative to node/: its tests and fixtures left out."""
    return sorted(str(p.relative_to(NODE)) for p in NODE.rglob("*")
                  if p.suffix in (".cjs", ".mjs", ".js")
                  and p.relative_to(NODE).parts[0] not in ("test", "node_modules"))


def _every_file() -> list[str]:
    """Every file of node/: code, types, tests, fixtures, the README (no node_modules)."""
    return sorted(str(p.relative_to(NODE)) for p in NODE.rglob("*")
                  if p.is_file() and "node_modules" not in p.relative_to(NODE).parts)


def _code(text: str) -> str:
    """`text` without its comments (line comments and /* */ blocks), strings kept."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("//"))


def test_the_package_has_files_to_check() -> None:
    """The walks below see the entries and the lib/ modules (an empty walk proves nothing)."""
    files = _package_files()
    assert {"index.cjs", "client.cjs", "register.cjs", PLATFORM, *PROC_READERS} <= set(files)
    assert {"index.d.ts", "client.d.mts", "README.md", "test/helpers.mjs"} <= set(_every_file())


@pytest.mark.parametrize("rel", _package_files())
def test_only_lib_platform_asks_which_platform_this_is(rel: str) -> None:
    """Every platform decision is made once, in lib/platform/platform.cjs."""
    if rel == PLATFORM:
        return
    text = (NODE / rel).read_text()
    found = [f"{rel}:{n}: {ln.strip()}" for n, ln in enumerate(text.splitlines(), 1)
             if PLATFORM_QUESTIONS.search(ln)]
    assert found == [], f"ask {PLATFORM} for the capability instead"


@pytest.mark.parametrize("rel", _package_files())
def test_only_the_readers_read_proc_or_run_ps(rel: str) -> None:
    """/proc is the /proc reader's, `ps` is lib/platform/ps.cjs's."""
    code = _code((NODE / rel).read_text())
    if rel not in PROC_READERS:
        assert not PROC_STRING.search(code), f"{rel} names /proc: use {PROC_READERS[0]}"
    if rel != PS_READER:
        assert not PS_RUN.search(code), f"{rel} runs ps: use {PS_READER}"


@pytest.mark.parametrize("rel", _package_files())
def test_each_module_says_what_it_is_for(rel: str) -> None:
    """A comment first (after 'use strict')."""
    lines = (NODE / rel).read_text().splitlines()
    body = lines[1:] if lines and lines[0] == "'use strict';" else lines
    assert body and body[0].startswith("// "), f"{rel} opens without saying what it is for"


@pytest.mark.parametrize("rel", _every_file())
def test_no_file_is_over_max_lines(rel: str) -> None:
    """Code, types, tests and the README alike: a file that grows past MAX_LINES is split
    by role (a test file by subject; the README's details go to docs/)."""
    n = len((NODE / rel).read_text().splitlines())
    assert n <= MAX_LINES, f"{rel} has {n} lines: split it by role"


def _misplaced(files: list[str]) -> list[str]:
    """The files of `files` that are neither an entry point nor in a role folder of lib/."""
    out = []
    for rel in files:
        parts = Path(rel).parts
        if parts[0] == "lib":
            if len(parts) != 3 or parts[1] not in ROLES:
                out.append(rel)
        elif len(parts) != 1 or rel not in ENTRIES:
            out.append(rel)
    return out


def test_every_lib_file_is_in_a_folder_by_role() -> None:
    """Nothing loose in lib/, no folder of lib/ without a named role, no other entry point."""
    files = _package_files()
    assert _misplaced(files) == [], "put it in a role folder of lib/ (ROLES)"
    used = {Path(rel).parts[1] for rel in files if rel.startswith("lib/")}
    assert used == set(ROLES), "ROLES names exactly the folders of lib/"


def test_the_role_check_sees_a_loose_file_and_a_folder_without_a_role() -> None:
    """The layout check can fail: a loose lib/ file, an unknown folder, a nested one."""
    assert _misplaced(["lib/tree.cjs", "lib/misc/x.cjs", "lib/process/a/b.cjs",
                       "helper.cjs"]) == ["lib/tree.cjs", "lib/misc/x.cjs",
                                          "lib/process/a/b.cjs", "helper.cjs"]
    assert _misplaced(["index.cjs", "lib/process/tree.cjs"]) == []


def test_the_checks_see_a_platform_question_and_a_proc_read() -> None:
    """The checks can fail: each pattern matches the code it forbids, not its comment."""
    assert PLATFORM_QUESTIONS.search("if (process.platform === 'darwin') {")
    assert PLATFORM_QUESTIONS.search("const p = os.platform();")
    assert PROC_STRING.search(_code("const s = fs.readFileSync(`/proc/${pid}/stat`);"))
    assert not PROC_STRING.search(_code("// reads '/proc/<pid>/stat'\nconst x = 1;"))
    assert PS_RUN.search("execFileSync('ps', ['-o', 'pid='])")
