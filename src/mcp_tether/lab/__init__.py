"""The lab: the reference experiment, rebuilt. Bundled fixture servers x scenarios.

The lab only *describes* rows (which server, which host style, which scenario) and
hands them to the probe's runner; every verdict comes from the probe's measurements.
Nothing here knows what a row should show: the expected table lives in the tests.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_tether.lab import node_env
from mcp_tether.probe import ProbeOptions, ScenarioResult, build_specs, level_met
from mcp_tether.probe.runner import run_specs
from mcp_tether.probe.scenarios import all_scenarios
from mcp_tether.probe.spec import Spec

if TYPE_CHECKING:
    from mcp_tether.cliprogress import Progress
    from mcp_tether.probe.record import ScenarioRecord

__all__ = [
    "RowPlan", "rows", "run_lab", "server_levels", "BLOCKS", "PY_FIXTURES", "NODE_FIXTURES",
    "python_fixture", "spec_for", "default_jobs", "server_name",
]

HERE = Path(__file__).resolve().parent
PY_FIXTURES = (
    "plain", "daemon_thread", "thread", "anyio_group", "executor", "stubborn", "fixed",
)
NODE_FIXTURES = ("plain", "timer", "fixed", "stubborn", "stdout_writer")

BLOCKS = ("reference", "python", "wrappers", "extra", "guarded", "tethered")

# The guarded block runs the guard with its defaults (--grace 2 --term-grace 2): the
# probe recognises the guard in the command and widens the window by grace + term-grace.
TETHER_ENV = {"MCP_TETHER_LAB_TETHERED": "1"}


@dataclass(frozen=True)
class RowPlan:
    """What one row of the lab runs: which server, under which host style, in which
    scenario; its block and short id place it in the table."""

    block: str
    row: str  # short id shown in the table (A..J for the reference rows)
    server: str  # human name, e.g. "node timer" or "sh -c + node timer"
    argv: tuple[str, ...]
    host_style: str
    scenario: str
    needs_node: bool = False
    env: tuple[tuple[str, str], ...] = ()
    window: float | None = None  # None: the lab's --window

    @property
    def label(self) -> str:
        return f"{self.row} {self.server}"


def python_fixture(name: str) -> list[str]:
    return [sys.executable, str(HERE / "python" / f"{name}.py")]


def _node(node_dir: Path | None, name: str) -> list[str]:
    return ["node", str((node_dir or HERE / "node") / f"{name}.mjs")]


def guarded(argv: list[str]) -> list[str]:
    """The same server behind the guard, as `mcp-tether wrap` would launch it."""
    return [sys.executable, "-m", "mcp_tether", "run", "--", *argv]


def _sh(argv: list[str]) -> list[str]:
    # `; true` keeps sh from exec-ing the server: a real wrapper process, like npx.
    return ["sh", "-c", f"{shlex.join(argv)}; true"]


def rows(node_dir: Path | None = None, blocks: tuple[str, ...] = BLOCKS) -> list[RowPlan]:
    """Every row of the lab, in table order (the order of BLOCKS, whatever `blocks` says)."""
    return [r for block, make in _BLOCK_ROWS if block in blocks for r in make(node_dir)]


def _plan(
    block: str, rid: str, server: str, argv: list[str], style: str, sc: str,
    env: dict[str, str] | None = None,
) -> RowPlan:
    node = any(os.path.basename(a) == "node" or a.endswith(".mjs") for a in argv) or (
        "node " in " ".join(argv)
    )
    return RowPlan(block, rid, server, tuple(argv), style, sc, node,
                   tuple(sorted((env or {}).items())))


def _reference_rows(node_dir: Path | None) -> list[RowPlan]:
    """A..J: the reference experiment, the Node fixtures in the reference's order."""
    letters = iter("ABCDEFGHIJ")
    out = [_plan("reference", next(letters), f"node {fx}", _node(node_dir, fx), "node", sc)
           for fx in ("plain", "timer", "fixed") for sc in ("close", "exit", "crash")]
    out.append(_plan("reference", next(letters), "node stubborn", _node(node_dir, "stubborn"),
                     "node", "close"))
    return out


def _python_rows(node_dir: Path | None) -> list[RowPlan]:
    """P1..: every Python fixture in the three reference scenarios."""
    cells = [(fx, sc) for fx in PY_FIXTURES for sc in ("close", "exit", "crash")]
    return [_plan("python", f"P{n}", f"python {fx}", python_fixture(fx), "python", sc)
            for n, (fx, sc) in enumerate(cells, 1)]


def _wrapper_rows(node_dir: Path | None) -> list[RowPlan]:
    """W1..: Node fixtures behind `sh -c`, a real wrapper process as npx is."""
    timer, fixed = _node(node_dir, "timer"), _node(node_dir, "fixed")
    w = [
        ("sh -c + node timer", _sh(timer), "node", "close"),
        ("sh -c + node timer", _sh(timer), "python", "close"),
        ("sh -c + node timer", _sh(timer), "node", "exit"),
        ("sh -c + node fixed", _sh(fixed), "node", "close"),
        ("sh -c + node fixed", _sh(fixed), "node", "exit"),
        ("sh -c + node fixed", _sh(fixed), "node", "crash"),
    ]
    return [_plan("wrappers", f"W{i}", server, argv, style, sc)
            for i, (server, argv, style, sc) in enumerate(w, 1)]


def _extra_rows(node_dir: Path | None) -> list[RowPlan]:
    """X1..: the scenarios beyond the reference's three."""
    timer, fixed = _node(node_dir, "timer"), _node(node_dir, "fixed")
    x = [
        ("node plain", _node(node_dir, "plain"), "node", "devnull"),
        ("node timer", timer, "node", "devnull"),
        ("python plain", python_fixture("plain"), "python", "devnull"),
        ("python thread", python_fixture("thread"), "python", "devnull"),
        ("node stdout_writer", _node(node_dir, "stdout_writer"), "node", "crash"),
        ("python stdout_writer", python_fixture("stdout_writer"), "python", "crash"),
        ("python plain", python_fixture("plain"), "python", "inherited-writer"),
        ("python fixed", python_fixture("fixed"), "python", "inherited-writer"),
        ("node fixed", fixed, "node", "inherited-writer"),
        ("node plain", _node(node_dir, "plain"), "node", "half-close"),
        ("node fixed", fixed, "node", "half-close"),
        ("node plain", _node(node_dir, "plain"), "node", "sigterm"),
        ("node fixed", fixed, "node", "sigint"),
        ("python plain", python_fixture("plain"), "python", "sigint"),
        ("python fixed", python_fixture("fixed"), "python", "sigterm"),
        ("node plain", _node(node_dir, "plain"), "node", "idle"),
        ("python daemonizer", python_fixture("daemonizer"), "python", "exit"),
    ]
    return [_plan("extra", f"X{i}", server, argv, style, sc)
            for i, (server, argv, style, sc) in enumerate(x, 1)]


def _guarded_rows(node_dir: Path | None) -> list[RowPlan]:
    """G1..: every orphan row of the other blocks, behind `mcp-tether run`: nothing may
    be left orphaned."""
    timer, stubborn = _node(node_dir, "timer"), _node(node_dir, "stubborn")
    g = [
        ("node timer", timer, "node", "close"),
        ("node timer", timer, "node", "exit"),
        ("node timer", timer, "node", "crash"),
        ("node stubborn", stubborn, "node", "exit"),
        ("python thread", python_fixture("thread"), "python", "exit"),
        ("python anyio_group", python_fixture("anyio_group"), "python", "crash"),
        ("python executor", python_fixture("executor"), "python", "crash"),
        ("python stubborn", python_fixture("stubborn"), "python", "crash"),
        ("sh -c + node timer", _sh(timer), "node", "close"),
        ("sh -c + node timer", _sh(timer), "node", "exit"),
        ("python plain", python_fixture("plain"), "python", "inherited-writer"),
        ("node timer", timer, "node", "inherited-writer"),
        ("node timer", timer, "node", "devnull"),
        ("node timer", timer, "node", "half-close"),
        ("python daemonizer", python_fixture("daemonizer"), "python", "exit"),
    ]
    return [_plan("guarded", f"G{i}", f"run -- {server}", guarded(argv), style, sc)
            for i, (server, argv, style, sc) in enumerate(g, 1)]


def _tethered_rows(node_dir: Path | None) -> list[RowPlan]:
    """T1..: the Python fixtures that orphan, with the library helper's one call added,
    in every scenario that applies to a Python host and needs no tool call."""
    cells = [(fx, scenario.name) for fx in ("thread", "anyio_group", "executor", "stubborn")
             for scenario in all_scenarios()
             if scenario.applies("python") and not scenario.needs_call]
    return [_plan("tethered", f"T{n}", f"python {fx} + mcp_tether.run", python_fixture(fx),
                  "python", sc, env=TETHER_ENV)
            for n, (fx, sc) in enumerate(cells, 1)]


# Each block's rows, in table order.
_BLOCK_ROWS: tuple[tuple[str, Callable[[Path | None], list[RowPlan]]], ...] = (
    ("reference", _reference_rows),
    ("python", _python_rows),
    ("wrappers", _wrapper_rows),
    ("extra", _extra_rows),
    ("guarded", _guarded_rows),
    ("tethered", _tethered_rows),
)


def spec_for(row: RowPlan, **opts: Any) -> Spec:
    if row.window is not None:
        opts["window"] = max(row.window, opts.get("window", 0.0))
    if row.env:
        opts["env"] = dict(row.env)
    o = ProbeOptions(host_style=row.host_style, scenarios=(row.scenario,), **opts)
    (spec,) = build_specs(list(row.argv), o)
    return spec


def default_jobs() -> int:
    """Two scenarios per CPU, at most 8. More starve the machine: each Python row starts
    an mcp 2.x server (about 1.9 s of CPU to import on a 2-core machine here) and its exit
    (0.5 s of CPU) must land inside the 2 s window; with 8 at once on 2 cores five rows
    read `lingered`/`terminated` instead of `exited` (4 at once: none, in the same time)."""
    return max(2, min(8, 2 * (os.cpu_count() or 1)))


def run_lab(
    blocks: tuple[str, ...] = BLOCKS,
    *,
    jobs: int | None = None,
    window: float | None = None,
    ready_timeout: float | None = None,
    quiet: bool = False,
    should_stop: Callable[[], bool] = lambda: False,
    retry: bool = True,
    progress: Progress | None = None,
) -> list[ScenarioResult]:
    """Run the lab; ScenarioResults with `label` and `block`, in table order.

    `jobs` (scenarios at once outside the reference block) defaults to `default_jobs()`.
    A row that could not run (verdict `error`: no answer to the handshake on a loaded
    machine, say) is run once more on its own, nothing else running beside it, before
    it is reported; its result then says so in its warnings. `progress` is told of
    each row as it ends (the rows of every block are expected at the start)."""
    skip_reason = node_env.missing_tools()
    node_dir = None if skip_reason else node_env.ensure(quiet=quiet)
    extra: dict[str, float] = {} if window is None else {"window": window}
    if ready_timeout is not None:
        extra["ready_timeout"] = ready_timeout
    plan = [(group, [r for b in group for r in rows(node_dir, (b,))
                     if not (r.needs_node and skip_reason)]) for group in _groups(blocks)]
    if progress is not None:
        progress.expect(sum(len(runnable) for _, runnable in plan))
    done: dict[tuple[str, str], ScenarioResult] = {}
    for group, runnable in plan:
        n = len(runnable) if group == ("reference",) else (jobs or default_jobs())
        done.update(_run_rows(runnable, extra, n, should_stop, retry, progress))
    return _in_table_order(blocks, node_dir, skip_reason, done)


def _groups(blocks: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The reference block runs alone, all its rows at once (its times are the reference);
    every other block shares one run, so no block waits for the slowest of the last."""
    groups: list[tuple[str, ...]] = [(b,) for b in blocks if b == "reference"]
    rest = tuple(b for b in blocks if b != "reference")
    if rest:
        groups.append(rest)
    return groups


def _run_rows(
    runnable: list[RowPlan], extra: dict[str, float], jobs: int,
    should_stop: Callable[[], bool], retry: bool, progress: Progress | None,
) -> dict[tuple[str, str], ScenarioResult]:
    """One run of the probe's runner over these rows, `jobs` at once; each row's result
    by (block, row id), with its probe record kept for --html."""
    specs = [spec_for(r, **extra) for r in runnable]
    tell = progress.per_index([f"{r.label} {r.scenario}" for r in runnable],
                              expected=True) if progress else None
    raws = run_specs(specs, jobs=jobs, should_stop=should_stop, on_result=tell)
    if retry:
        raws = _retry_alone(specs, raws, should_stop, tell)
    done: dict[tuple[str, str], ScenarioResult] = {}
    for r, raw in zip(runnable, raws, strict=True):
        raw["argv"] = list(r.argv)  # for --html
        done[(r.block, r.row)] = ScenarioResult.from_dict(raw)
    return done


def _in_table_order(
    blocks: tuple[str, ...], node_dir: Path | None, skip_reason: str | None,
    done: dict[tuple[str, str], ScenarioResult],
) -> list[ScenarioResult]:
    """Every row's result in table order, labelled with its row and block; a row that
    needs Node where Node is missing is `skipped`, with the reason."""
    out: list[ScenarioResult] = []
    for block in blocks:
        for r in rows(node_dir, (block,)):
            if r.needs_node and skip_reason:
                res = ScenarioResult(r.scenario, r.host_style, "skipped", False, None, None,
                                     None, detail=f"skipped: {skip_reason}")
            else:
                res = done[(r.block, r.row)]
            res.label, res.block = r.label, block
            out.append(res)
    return out


def _retry_alone(
    specs: list[Spec], raws: list[ScenarioRecord], should_stop: Callable[[], bool],
    tell: Callable[[int, ScenarioRecord], None] | None = None,
) -> list[ScenarioRecord]:
    """Each row that could not run, once more, alone; the second result stands, marked
    (`tell(i, record)` hears of it, the record marked `rerun`)."""
    out = list(raws)
    for i, raw in enumerate(raws):
        if raw.get("verdict") != "error":
            continue
        (again,) = run_specs([specs[i]], jobs=1, should_stop=should_stop)
        first = str(raw.get("detail") or "error")
        note = f"could not run beside the others ({first}); run again alone"
        again["warnings"] = [*(again.get("warnings") or []), note]
        out[i] = again
        if tell is not None:
            tell(i, {**again, "rerun": {"alone": True, "why": first}})
    return out


def server_name(r: ScenarioResult) -> str:
    """A row's server as the levels name it: its label minus the row id, and its host
    style (`node timer [node]`)."""
    return f"{r.label.partition(' ')[2]} [{r.host_style}]"


def server_levels(results: list[ScenarioResult]) -> dict[str, str]:
    """One word per server (name and host style) across its rows: none / spec / robust.

    A server with a row that could not run gets no level: "not measured (k of n rows
    could not run)"; a level from the rows that ran would claim what was not seen."""
    by: dict[str, list[ScenarioResult]] = {}
    for r in results:
        if r.verdict != "skipped":
            by.setdefault(server_name(r), []).append(r)
    out = {}
    for name, rs in by.items():
        errors = sum(r.verdict == "error" for r in rs)
        out[name] = (f"not measured ({errors} of {len(rs)} rows could not run)" if errors
                     else level_met(rs))
    return out
