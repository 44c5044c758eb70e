"""The layout is the architecture: tests that keep it so.

1. Only the process core touches processes: no module outside `proc/`, `platform.py`,
   `_plat/` and `watch/` calls os.kill, killpg, waitpid, waitid, pidfd_send_signal,
   set_wakeup_fd, setsid or the subreaper prctl (the lab's fixture servers excepted:
   they are deliberately naive programs, not part of the tool; so are the host check's
   recorder, a server any host runs as a plain script, and its stand-in for a terminal's
   shell: stdlib-only scripts by design).
2. Every module is one job: at most 800 lines, and a docstring that says it.
3. No import cycle, counting imports inside functions and under `if TYPE_CHECKING:`.
4. The two hot paths, `import mcp_tether` (every Python server's launch path) and
   `mcp-tether run` (every guarded server's), load the standard library and exactly the
   package modules listed here; everything else is ordinary Python.
5. One platform seam: no module outside `platform.py` and `_plat/` asks what the platform
   is (sys.platform, os.name, os.uname, `platform.os_name()`), probes a capability
   (os.pidfd_open, hasattr on os) or imports psutil; they ask the backend. The one
   exception is named below: the OS as data, the key of the hosts' per-OS tables.
6. Every /proc read is the backend's: no string outside `_plat/` names /proc (docstrings
   may, to say where a backend reads), but for the one named below.
7. Renderings are a room of their own: no module imports another command's `cli.py`
   or the dispatcher (what two commands print is in `report/`; only `__main__` starts
   through `mcp_tether.cli`); `report/` imports no `cli.py` at all, and
   the process core imports nothing from it.
8. Every floor below the ones that use it: each package and top-level module stands on
   one floor (the ground floor's small helpers, the process core, the capabilities, the
   renderings, the commands' `cli.py`); an import goes to its own floor or a lower one,
   and no package imports another in a circle. Counted like the cycles of 3: imports
   inside functions and under `if TYPE_CHECKING:` too.
9. A private name (`_x`) stays in its module: no module imports one from another, or
   reaches one through another module's name.
10. No function is over 80 lines (docstring, nested functions and all), the fixture
   servers and the recorder too: a longer one is split into named steps.
"""

from __future__ import annotations

import ast
import enum
import re
import subprocess
import sys
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


# -- 3. no import cycle ------------------------------------------------------------------
def _module_names() -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package) for every module of the package."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def imported_from(name: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    """The absolute module a `from ... import` in module `name` reads from (relative
    imports resolved against `name`, a package's own name when `is_pkg`)."""
    base = node.module or ""
    if node.level:
        here = name.split(".") if is_pkg else name.split(".")[:-1]
        here = here[: len(here) - (node.level - 1)]
        base = ".".join(here + ([base] if base else []))
    return base


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports anywhere in its text: at the top, inside
    functions, under `if TYPE_CHECKING:`. `from pkg import name` is an edge to the module
    `pkg.name` when there is one, else to `pkg` (its `__init__` defines the name)."""
    mods = _module_names()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, (path, is_pkg) in mods.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = imported_from(name, is_pkg, node)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]
            graph[name].update(t for t in targets if t in mods and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        comp.append(member)
                        if member == node:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycle() -> None:
    """A cycle makes every module in it load the others and fixes their import order."""
    assert cycles(import_graph()) == []


# -- 4. the two hot paths ----------------------------------------------------------------
HOT_IMPORT = {"mcp_tether", "mcp_tether._launch", "mcp_tether._lazy"}
HOT_HELPER = HOT_IMPORT | {
    "mcp_tether._plat", "mcp_tether._plat.linux", "mcp_tether._plat.record",
    "mcp_tether.errors", "mcp_tether.ladder", "mcp_tether.log", "mcp_tether.platform",
    "mcp_tether.tether", "mcp_tether.tether.binding", "mcp_tether.tether.coordinator",
    "mcp_tether.tether.hooks", "mcp_tether.tether.stdio", "mcp_tether.watch"}
HOT_RUN = HOT_IMPORT | {
    "mcp_tether._lazy", "mcp_tether._plat", "mcp_tether._plat.linux", "mcp_tether._plat.record",
    "mcp_tether.cli",
    "mcp_tether.cliutil", "mcp_tether.container", "mcp_tether.errors", "mcp_tether.guard",
    "mcp_tether.guard.cli",
    "mcp_tether.guard.argv",
    "mcp_tether.guard.result", "mcp_tether.guard.session", "mcp_tether.ladder",
    "mcp_tether.log", "mcp_tether.platform", "mcp_tether.proc", "mcp_tether.proc.end",
    "mcp_tether.proc.front", "mcp_tether.proc.identity", "mcp_tether.proc.inbox",
    "mcp_tether.proc.mark",
    "mcp_tether.proc.reap", "mcp_tether.proc.signals", "mcp_tether.proc.spawn",
    "mcp_tether.proc.tree", "mcp_tether.watch"}
# Each path runs after a prelude that notes sys.modules, and names what was added when
# the interpreter leaves, by atexit or by os._exit (how `run` leaves): every module,
# also those imported through importlib.import_module. What the bare interpreter loaded
# before (site, .pth hooks) is not the package's doing.
_TRACE = ("import atexit, os, sys\n"
          "_before = set(sys.modules)\n"
          "def _names():\n"
          "    sys.stderr.write('@mods ' + ' '.join(set(sys.modules) - _before) + '\\n')\n"
          "    sys.stderr.flush()\n"
          "atexit.register(_names)\n"
          "_exit = os._exit\n"
          "os._exit = lambda code: (_names(), _exit(code))\n")
HOT = {"import": "import mcp_tether",
       # the helper's names, as a server's `mcp_tether.run(mcp)` reaches them
       "helper": "import mcp_tether; mcp_tether.run",
       "run": "import runpy; sys.argv = ['mcp-tether', 'run', '--', 'true']\n"
              "runpy.run_module('mcp_tether', run_name='__main__')"}


def _loaded(code: str) -> set[str]:
    p = subprocess.run([sys.executable, "-c", _TRACE + code], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=60)
    assert p.returncode == 0 and p.stdout == b"", p.stderr.decode()[-2000:]
    lines = [ln for ln in p.stderr.decode().splitlines() if ln.startswith("@mods ")]
    assert lines, p.stderr.decode()[-2000:]
    return {m for ln in lines for m in ln.split()[1:]}  # `run`'s front and supervisor


@pytest.mark.parametrize("path", sorted(HOT))
def test_the_two_hot_paths_load_the_stdlib_and_exactly_these_modules(path: str) -> None:
    """`import mcp_tether`, its helper and `mcp-tether run -- true`: every module outside
    the package is the standard library's, and the package's own are exactly the listed."""
    loaded = _loaded(HOT[path]) - {"runpy"}
    ours = {m for m in loaded if m.split(".")[0] == "mcp_tether"}
    foreign = {m for m in loaded - ours if m.split(".")[0] not in sys.stdlib_module_names}
    assert not foreign, f"{path} loads outside the standard library: {sorted(foreign)}"
    expected = {"import": HOT_IMPORT, "helper": HOT_HELPER, "run": HOT_RUN}[path]
    assert ours == expected, f"{path}: {sorted(ours ^ expected)} differ from the list"


# -- 5. one platform seam ----------------------------------------------------------------
SEAM = ("_plat",)
SEAM_FILES = ("platform.py",)
PLATFORM_QUESTIONS = {("sys", "platform"), ("os", "name"), ("os", "uname"),
                      ("os", "pidfd_open"), ("sys", "getwindowsversion"),
                      ("platform", "system"), ("platform", "os_name")}
# Where the OS is data, not a branch on what this machine can do: each host keeps its
# config in a per-OS place, and the hosts tables are keyed by the OS of the machine
# described (tests describe other OSes' machines with the same tables).
OS_AS_DATA = {
    "hosts/model.py": "Machine.here(): this machine's OS, as the key of the hosts' tables",
    "hosts/locations.py": "discover(): the machine looked at, this one unless one is given",
}


def _platform_branches(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in PLATFORM_QUESTIONS:
                found.append(f"{node.value.id}.{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [
                node.module or ""]
            if any(n.split(".")[0] == "psutil" for n in names):
                found.append(f"import psutil (line {node.lineno})")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "hasattr" and node.args
              and isinstance(node.args[0], ast.Name) and node.args[0].id in ("os", "signal")):
            found.append(f"hasattr({node.args[0].id}, ...) (line {node.lineno})")
        elif isinstance(node, ast.Name) and node.id == "os_name":
            found.append(f"os_name (line {node.lineno})")
    return found


def test_the_seam_finder_finds_a_branch() -> None:
    code = "import sys, os\nif sys.platform == 'darwin' or hasattr(os, 'x'): import psutil\n"
    assert len(_platform_branches(ast.parse(code))) == 3
    code = "from mcp_tether import platform\nif platform.os_name() == 'win32': pass\n"
    assert len(_platform_branches(ast.parse(code))) == 1


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_platform_branch_outside_the_seam(path: Path) -> None:
    """The backend is chosen once, in platform.py; a port adds a module under _plat/."""
    rel = path.relative_to(PACKAGE)
    if rel.parts[0] in SEAM or str(rel) in SEAM_FILES:
        return
    found = _platform_branches(ast.parse(path.read_text(), str(path)))
    if str(rel) in OS_AS_DATA:
        found = [f for f in found if "os_name" not in f]
    assert not found, f"{rel} asks the platform itself: {found}"


def test_the_os_as_data_list_names_only_modules_that_need_it() -> None:
    """An allowance nobody uses any more is taken off the list, not left to grow."""
    for rel in OS_AS_DATA:
        found = _platform_branches(ast.parse((PACKAGE / rel).read_text()))
        assert any("os_name" in f for f in found), f"{rel} no longer reads the OS as data"


# -- 6. /proc is read behind the seam only ----------------------------------------------------
# A script that runs in a container reads that container's /proc, not ours: text we
# send elsewhere, not a read of this machine.
PROC_ELSEWHERE = {"container/execfollow.py": "the shell script `exec` runs in the container"}
_PROC = re.compile(r"/proc(?![\w-])")


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _proc_literals(tree: ast.AST) -> list[str]:
    docs = _docstrings(tree)
    return [f"{node.value!r} (line {node.lineno})" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docs and _PROC.search(node.value)]


def test_the_proc_finder_finds_a_path_and_spares_docstrings() -> None:
    code = ('"""Reads /proc/PID/stat."""\n'
            'def f(pid):\n    """/proc."""\n    return open(f"/proc/{pid}/maps"), "/process"\n')
    assert len(_proc_literals(ast.parse(code))) == 1


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_proc_read_outside_the_seam(path: Path) -> None:
    """/proc is the Linux backend's: elsewhere a read is a backend method, which the
    portable backend answers from psutil, or with None where it cannot know."""
    rel = path.relative_to(PACKAGE)
    if rel.parts[0] in SEAM or str(rel) in PROC_ELSEWHERE:
        return
    found = _proc_literals(ast.parse(path.read_text(), str(path)))
    assert not found, f"{rel} names /proc outside the seam: {found}"


# -- 7. renderings are a room of their own ----------------------------------------------------
REPORT = "mcp_tether.report"
# The dispatcher (`mcp_tether.cli`) is no command's library either: only `python -m
# mcp_tether` starts through it (a command that reads more options, as `probe` does after
# a package spec, keeps the parser it configured).
DISPATCHER = "mcp_tether.cli"
ENTRY = "mcp_tether.__main__"
CORE_MODULES = tuple(f"mcp_tether.{c}" for c in CORE) + tuple(
    f"mcp_tether.{f.removesuffix('.py')}" for f in CORE_FILES)


def _is_a_commands_cli(module: str) -> bool:
    return module.endswith(".cli") and module != DISPATCHER


def _room(module: str) -> str:
    """`mcp_tether.probe.cli` -> `mcp_tether.probe`; a top-level module is its own room."""
    parts = module.split(".")
    return ".".join(parts[:2])


def _cli_imports(graph: dict[str, set[str]]) -> list[str]:
    return [f"{m} imports {t}" for m, targets in sorted(graph.items()) for t in sorted(targets)
            if (_is_a_commands_cli(t) and _room(t) != _room(m))
            or (t == DISPATCHER and m != ENTRY)]


def test_the_cli_finder_finds_another_commands_cli() -> None:
    graph = {"mcp_tether.lab.cli": {"mcp_tether.probe.cli", "mcp_tether.report.files"},
             "mcp_tether.probe.cli": {"mcp_tether.cli", "mcp_tether.probe.api"},
             "mcp_tether.probe.api": set(), "mcp_tether.__main__": {"mcp_tether.cli"}}
    assert _cli_imports(graph) == ["mcp_tether.lab.cli imports mcp_tether.probe.cli",
                                   "mcp_tether.probe.cli imports mcp_tether.cli"]


def test_no_module_imports_another_commands_cli() -> None:
    """One command's CLI is never another's library, nor is the dispatcher: what both
    need is in report/ (or in the command's Python API)."""
    assert _cli_imports(import_graph()) == []


def test_report_is_below_the_commands_and_above_the_core() -> None:
    """report/ renders what the commands computed: it imports no `cli.py` (the dispatcher's
    neither), and nothing in the process core imports a rendering."""
    graph = import_graph()
    assert REPORT in graph, "the report/ package is gone"
    up = [f"{m} imports {t}" for m, targets in sorted(graph.items()) if _room(m) == REPORT
          for t in sorted(targets) if t.endswith(".cli") or t == DISPATCHER]
    assert not up, f"report/ imports a command-line module: {up}"
    down = [f"{m} imports {t}" for m, targets in sorted(graph.items())
            if m.startswith(CORE_MODULES) for t in sorted(targets) if _room(t) == REPORT]
    assert not down, f"the process core imports a rendering: {down}"


# -- 8. every floor below the ones that use it -------------------------------------------
class Floor(enum.IntEnum):
    """The floors, lowest first: an import goes to its own floor or a lower one."""

    GROUND = 0  # small helpers every floor uses: errors, stderr, escaping, the JSON envelope
    CORE = 1  # the process core and the platform seam
    CAPABILITIES = 2  # what the commands do, as Python APIs
    RENDERINGS = 3  # what several commands print
    COMMANDS = 4  # each command's cli.py, the dispatcher, the entry points


# Each package and top-level module, by its name under mcp_tether ("" is the package's
# own __init__: the helper's public names, which load tether/). A command's `cli.py`
# stands on COMMANDS whatever its package's floor. A new room is given a floor here.
ROOMS = {
    Floor.GROUND: ("errors", "log", "_launch", "_lazy", "cliutil", "cliprogress", "escape",
                   "jsonout"),
    Floor.CORE: ("_plat", "platform", "proc", "watch", "ladder", "tempdirs"),
    Floor.CAPABILITIES: ("", "tether", "client", "container", "guard", "hosts", "packages",
                         "inspect", "scan", "probe", "lab", "hostcheck", "survey"),
    Floor.RENDERINGS: ("report",),
    Floor.COMMANDS: ("cli", "__main__", "pytest_plugin"),
}
FLOORS = {room: floor for floor, rooms in ROOMS.items() for room in rooms}


def unit(module: str) -> str:
    """What stands on a floor: a command's `cli` module, else its top-level package or
    module (`mcp_tether.probe.scenarios.close` -> `mcp_tether.probe`)."""
    parts = module.split(".")
    if len(parts) > 2 and parts[-1] == "cli":
        return module
    return ".".join(parts[:2])


def floor_of(u: str, floors: dict[str, Floor]) -> Floor | None:
    parts = u.split(".")
    if len(parts) > 2 and parts[-1] == "cli":
        return Floor.COMMANDS
    return floors.get(".".join(parts[1:2]))


def unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph between units: a package imports another when any of its modules
    imports any of the other's."""
    out: dict[str, set[str]] = {unit(m): set() for m in graph}
    for m, targets in graph.items():
        out[unit(m)].update(unit(t) for t in targets if unit(t) != unit(m))
    return out


def upward(graph: dict[str, set[str]], floors: dict[str, Floor]) -> list[str]:
    """Every import from a lower floor to a higher one, and every unit without a floor."""
    found = [f"{u} has no floor" for u in sorted(unit_graph(graph))
             if floor_of(u, floors) is None]
    for m, targets in sorted(graph.items()):
        here = floor_of(unit(m), floors)
        for t in sorted(targets):
            there = floor_of(unit(t), floors)
            if here is not None and there is not None and there > here:
                found.append(f"{m} ({here.name.lower()}) imports {t} ({there.name.lower()})")
    return found


def test_the_floor_finder_finds_an_upward_import_and_a_circle() -> None:
    floors = {"escape": Floor.GROUND, "guard": Floor.CAPABILITIES, "probe": Floor.CAPABILITIES,
              "report": Floor.RENDERINGS}
    graph = {"mcp_tether.escape": {"mcp_tether.report.text"},
             "mcp_tether.report.text": {"mcp_tether.probe.api"},
             "mcp_tether.probe.api": {"mcp_tether.guard.result"},
             "mcp_tether.probe.cli": {"mcp_tether.report.text", "mcp_tether.probe.api"},
             "mcp_tether.guard.result": {"mcp_tether.probe.spec"},
             "mcp_tether.probe.spec": set(),
             "mcp_tether.lab": set()}
    assert upward(graph, floors) == [
        "mcp_tether.lab has no floor",
        "mcp_tether.escape (ground) imports mcp_tether.report.text (renderings)"]
    assert cycles(unit_graph(graph)) == [["mcp_tether.guard", "mcp_tether.probe"]]


def test_no_import_runs_to_a_higher_floor() -> None:
    """A floor uses the ones below it, never one above: the ground floor's helpers import
    nothing of the package's above them, the core no capability, a capability no
    rendering, a rendering no command."""
    assert upward(import_graph(), FLOORS) == []


def test_no_package_imports_another_in_a_circle() -> None:
    """Within a floor too: two packages that import each other are one, split in two."""
    assert cycles(unit_graph(import_graph())) == []


def test_the_floors_name_only_rooms_that_exist_each_once() -> None:
    """A floor given to a room that is gone is taken off the list, not left to mislead."""
    rooms = {".".join(unit(m).split(".")[1:2]) for m in import_graph()}
    assert set(FLOORS) - rooms == set()
    assert len(FLOORS) == sum(len(r) for r in ROOMS.values()), "a room is on two floors"


# -- 9. a private name stays in its module ------------------------------------------------
def private_uses(name: str, tree: ast.AST, mods: dict[str, tuple[Path, bool]],
                 is_pkg: bool = False) -> list[str]:
    """The private names of other package modules that module `name` imports or reaches
    through a module it imported (`from mcp_tether.scan.watch import _size`,
    `linux_fds._fd_info(...)`); a private module (`_plat`, `_lazy`) is a name of its
    package, not of another module."""
    found: list[str] = []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = imported_from(name, is_pkg, node)
            if base not in mods:
                continue
            for a in node.names:
                target = f"{base}.{a.name}"
                if target in mods:
                    aliases[a.asname or a.name] = target
                elif _private(a.name) and base != name:
                    found.append(f"from {base} import {a.name} (line {node.lineno})")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in mods and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and aliases[node.value.id] != name
                and _private(node.attr)):
            found.append(f"{node.value.id}.{node.attr} (line {node.lineno})")
    return found


def _private(word: str) -> bool:
    return word.startswith("_") and not word.startswith("__")


def test_the_private_name_finder_finds_an_import_and_a_reach() -> None:
    mods = {"mcp_tether.scan.watch": (Path("w.py"), False),
            "mcp_tether.scan.render": (Path("r.py"), False),
            "mcp_tether._plat": (Path("p.py"), True),
            "mcp_tether._plat.linux_fds": (Path("l.py"), False)}
    code = ("from mcp_tether.scan.watch import _size, describe\n"
            "from mcp_tether._plat import linux_fds\n"
            "from mcp_tether import _plat\n"
            "def f(x):\n    return linux_fds._fd_info(x), x._own, linux_fds.__name__\n")
    assert private_uses("mcp_tether.scan.render", ast.parse(code), mods) == [
        "from mcp_tether.scan.watch import _size (line 1)", "linux_fds._fd_info (line 5)"]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_name_crosses_a_module(path: Path) -> None:
    """What another module needs is public in its home (or the two are one module)."""
    mods = _module_names()
    name = next(n for n, (p, _) in mods.items() if p == path)
    found = private_uses(name, ast.parse(path.read_text(), str(path)), mods,
                         mods[name][1])
    assert not found, f"{path.relative_to(PACKAGE)} uses another module's private name: {found}"


# -- 10. no function over 80 lines --------------------------------------------------------
MAX_FUNCTION_LINES = 80


def long_functions(tree: ast.AST, max_lines: int = MAX_FUNCTION_LINES) -> list[str]:
    """Every function (method, nested one) longer than `max_lines`, from its `def` (or
    its first decorator) to its last line."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines = (node.end_lineno or node.lineno) - first + 1
            if lines > max_lines:
                found.append(f"{node.name} (line {node.lineno}): {lines} lines")
    return found


def test_the_length_finder_finds_a_long_function_and_a_nested_one() -> None:
    body = "".join(f"    x = {i}\n" for i in range(79))
    code = (f"def short():\n{body}"
            f"@decorated\nasync def long():\n{body}    y = 1\n"
            f"class C:\n    def outer(self):\n        def inner():\n"
            + "".join(f"        {line}\n" for line in body.splitlines()) + "            pass\n")
    assert long_functions(ast.parse(code)) == [
        "long (line 82): 82 lines", "outer (line 164): 82 lines", "inner (line 165): 81 lines"]


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_function_is_over_80_lines(path: Path) -> None:
    """A function reads as named steps (as guard/session.py's `_run` does), each a
    screenful at most."""
    found = long_functions(ast.parse(path.read_text(), str(path)))
    assert not found, f"{path.relative_to(PACKAGE)} has a function over " \
        f"{MAX_FUNCTION_LINES} lines: {found}"
