"""The text renderings of the probe's typed results (`probe.api.ScenarioResult`): the
table (`probe`, `lab --table`), the fixes under it, the configured servers' matrix.

Text goes through rich with colour only on a TTY; every string a result carries from the
server (notes, labels, diagnoses) goes through `escape.rich_text` / `escape.terminal`, so
it can neither drive the terminal nor inject rich markup. Nothing here computes a verdict.
Each scenario's level is shown; a failed robust scenario judged at the `spec` level is a
warning (table), skipped-with-reason (JUnit): shown, never hidden, never failing.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterable, Sequence
from typing import IO, TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from mcp_tether.escape import rich_text, terminal
from mcp_tether.probe.api import ScenarioResult, level_met
from mcp_tether.probe.describe import short
from mcp_tether.probe.spec import ROBUST, SPEC

if TYPE_CHECKING:
    from mcp_tether.probe.record import ScenarioRecord

__all__ = ["render_table", "render_matrix", "VERDICT_STYLE"]

VERDICT_STYLE = {
    "exited": "green",
    "alive": "green",
    "terminated": "yellow",
    "killed": "red",
    "lingered": "red",
    "orphaned": "bold red",
    "early-exit": "magenta",
    "error": "bold magenta",
    "skipped": "dim",
    "disabled": "dim",
}


def _console(out: IO[str]) -> Console:
    tty = out.isatty()
    return Console(
        file=out,
        force_terminal=tty,
        no_color=not tty,
        highlight=False,
        width=None if tty or os.environ.get("COLUMNS") else 160,  # rich reads COLUMNS
        soft_wrap=False,
    )


def fmt_ms(ms: float | None) -> str:
    return "—" if ms is None else f"{ms:.0f}" if ms >= 10 else f"{ms:.1f}"


def note(r: ScenarioResult) -> str:
    parts = []
    if r.guarded:
        if r.guard_rung == "none":
            parts.append("guarded (the guard could not end it)")
        elif r.guard_rung:
            parts.append(f"guarded (ended at the guard's {r.guard_rung} rung)"
                         if r.guard_rung != "self" else "guarded (exited by itself)")
        else:  # no report from the guard: killed, or a launcher kept the descriptor
            parts.append("guarded (no report from the guard)")
    if r.call_answered is not None:
        parts.append("answered before exiting" if r.call_answered else "answer dropped")
    if r.verdict == "lingered":
        parts.append(r.detail)
    elif r.verdict == "orphaned" and r.survivors and not r.detail.startswith("alive"):
        parts.append(
            "survivors: "
            + "; ".join(f"{s.pid} (ppid {s.ppid}) {short(s.cmdline, 40)}" for s in r.survivors[:3])
        )
    elif r.detail and not r.detail.startswith("guarded"):
        parts.append(r.detail)
    if r.warnings:
        parts.append(f"{len(r.warnings)} warning(s): {r.warnings[0][:70]}")
    return " | ".join(parts)


def render_table(
    results: Sequence[ScenarioResult],
    *,
    title: str | None = None,
    out: IO[str] | None = None,
    with_label: bool = False,
    blocks: Iterable[tuple[str, Sequence[ScenarioResult]]] | None = None,
    level: str = SPEC,
) -> None:
    """One table; rows grouped under block headings when `blocks` is given."""
    table = Table(title=rich_text(title) if title else None, show_lines=False,
                  header_style="bold", title_justify="left")
    if with_label:
        table.add_column("row", no_wrap=True)
        table.add_column("server", no_wrap=True)
    table.add_column("scenario", no_wrap=True)
    table.add_column("level", no_wrap=True)
    table.add_column("style", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("exit ms", justify="right", no_wrap=True)
    table.add_column("rung", no_wrap=True)
    table.add_column("status", justify="right", no_wrap=True)
    table.add_column("notes", overflow="fold", max_width=70)
    groups = list(blocks) if blocks is not None else [("", results)]
    for heading, rows in groups:
        if heading:
            n = 2 if with_label else 0
            table.add_row(*([f"[bold]{rich_text(heading)}[/]"] + [""] * (n + 7)),
                          end_section=False)
        for r in rows:
            style = VERDICT_STYLE.get(r.verdict, "")
            verdict = f"[{style}]{r.verdict}[/]" if style else r.verdict
            if r.warning_only and level != ROBUST:
                verdict += " [yellow](warning)[/]"
            cells = [
                r.scenario,
                r.level,
                r.host_style,
                verdict,
                fmt_ms(r.exit_ms),
                r.rung or "—",
                "—" if r.exit_status is None else str(r.exit_status),
                rich_text(note(r)),
            ]
            if with_label:
                row, _, server = r.label.partition(" ")
                cells = [rich_text(row), rich_text(server), *cells]
            table.add_row(*cells)
            if r.explain:  # set by the probe CLI: why it failed
                table.add_row(*([""] * (len(cells) - 1)), f"[dim]↳ {rich_text(r.explain)}[/]")
        if heading:
            table.add_section()
    _console(out or sys.stdout).print(table)


def render_fixes(results: Sequence[ScenarioRecord], out: IO[str] | None = None) -> None:
    """Under the table: for each failed scenario, the whole diagnosis and the remedy;
    scenarios that share a remedy are listed together, the remedy printed once."""
    groups: dict[str, list[ScenarioRecord]] = {}
    for d in results:
        if d.get("diagnosis") or d.get("remedy"):
            groups.setdefault(str(d.get("remedy") or ""), []).append(d)
    if not groups:
        return
    out = out or sys.stdout
    columns = os.environ.get("COLUMNS", "")
    width = min(int(columns), 100) if columns.isdigit() and int(columns) > 20 else 100
    out.write("\nwhy, and how to fix it:\n")
    for remedy, rows in groups.items():
        # Each scenario under its own diagnosis (one that failed otherwise must not be
        # shown close's "needed SIGTERM"); scenarios with the same words share a line.
        said: dict[str, list[str]] = {}
        for d in rows:
            said.setdefault(str(d.get("diagnosis") or ""), []).append(str(d.get("scenario")))
        for diagnosis, scenarios in said.items():
            names = ", ".join(dict.fromkeys(scenarios))
            out.write(textwrap.fill(terminal(f"{names}: {diagnosis}"), width, initial_indent="- ",
                                    subsequent_indent="  ") + "\n")
        if remedy:
            out.write(textwrap.fill(terminal(f"fix: {remedy}"), width, initial_indent="  ",
                                    subsequent_indent="    ", break_on_hyphens=False,
                                    break_long_words=False) + "\n")


def render_matrix(results: Sequence[ScenarioResult], servers: Sequence[str],
                  out: IO[str] | None = None) -> None:
    """Servers x scenarios, one verdict (and exit ms) per cell."""
    scenarios = list(dict.fromkeys(r.scenario for r in results if r.scenario != "*"))
    table = Table(title="mcp-tether probe: configured servers", header_style="bold",
                  title_justify="left")
    table.add_column("server", no_wrap=True)
    table.add_column("level", no_wrap=True)
    for sc in scenarios:
        table.add_column(sc, no_wrap=True)
    table.add_column("notes", overflow="fold", max_width=50)
    for s in servers:
        mine = [r for r in results if r.label == s]
        whole = [r for r in mine if r.scenario == "*"]
        if whole:
            word = "—" if whole[0].verdict in ("skipped", "disabled") else "none"
            table.add_row(rich_text(s), word,
                          *([f"[{VERDICT_STYLE[whole[0].verdict]}]{whole[0].verdict}[/]"]
                            + [""] * (len(scenarios) - 1)), rich_text(whole[0].detail))
            continue
        cells = []
        for sc in scenarios:
            r = next((x for x in mine if x.scenario == sc), None)
            if r is None:
                cells.append("—")
                continue
            ms = "" if r.exit_ms is None else f" {fmt_ms(r.exit_ms)}"
            cells.append(f"[{VERDICT_STYLE.get(r.verdict, '')}]{r.verdict}[/]{ms}")
        why = {r.scenario: note(r) or r.diagnosis.split(". ")[0] for r in mine if not r.passed}
        notes = "; ".join(f"{sc}: {text}" for sc, text in why.items() if text)[:200]
        table.add_row(rich_text(s), level_met(mine), *cells, rich_text(notes))
    _console(out or sys.stdout).print(table)
