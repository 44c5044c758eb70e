"""Text and OpenMetrics renderings of a `ScanResult` and of a reap plan.

The JSON rendering is `ScanResult.to_dict()`; these carry the same facts for a human
(a table, leaked first, with a total of the memory leaks hold; a server behind the
guard is shown by its inner command, marked `guarded:`) and for a node
exporter's textfile collector (gauges, ending `# EOF`).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from mcp_tether.scan.match import guarded_argv
from mcp_tether.scan.model import (
    HOST_GONE,
    PARENT_GONE,
    STDIN_NO_WRITER,
    STDOUT_NO_READER,
    WRITER_HELD,
    ScanResult,
    Server,
)
from mcp_tether.scan.reap import Plan
from mcp_tether.scan.watch import _size

__all__ = ["print_ps", "print_plan", "abandoned_lines", "render_openmetrics", "what_text",
           "HEADERS"]

HEADERS = ["STATE", "PID", "USER", "AGE", "RSS", "CPU", "WHAT", "FOUND", "EVIDENCE",
           "PARENT", "COMMAND"]


def _age(s: float) -> str:
    n = int(s)
    if n < 60:
        return f"{n}s"
    if n < 3600:
        return f"{n // 60}m{n % 60:02d}s"
    if n < 86400:
        return f"{n // 3600}h{n % 3600 // 60:02d}m"
    return f"{n // 86400}d{n % 86400 // 3600:02d}h"


def _short(argv: list[str], width: int = 80) -> str:
    """The command, long paths cut to their last two parts (the full one is in --json)."""
    words = [w if len(w) <= 32 or "/" not in w.rstrip("/")
             else "…/" + "/".join(w.rstrip("/").split("/")[-2:]) for w in argv]
    if words and "/" in words[0]:
        words[0] = words[0].rsplit("/", 1)[-1]
    text = " ".join(words)
    return text if len(text) <= width else text[: width - 1] + "…"


def what_text(s: Server) -> str:
    w = s.what
    parts = []
    if w.package:
        parts.append(w.package + (f"@{w.version}" if w.version else ""))
    if w.sdk:
        parts.append(f"{w.sdk} {w.sdk_version or '?'}")
    # A --config file of no known host: its file name stands where the host's would.
    parts += [f"{c['host'] or os.path.basename(str(c.get('path') or '')) or 'config'}/{c['name']}"
              for c in s.config]
    if s.host:
        parts.append(f"under {s.host}")
    return "; ".join(parts) or ("mcp-like name" if s.guess else "-")


def _rows(result: ScanResult) -> list[list[str]]:
    rows = []
    for s in result.servers:
        extra = f" [+{len(s.members) - 1}]" if len(s.members) > 1 else ""
        guard = "guarded: " if s.shown != s.command and guarded_argv(s.command) else ""
        rows.append([s.state, str(s.pid), s.user, _age(s.age_seconds), _size(s.rss_bytes),
                     f"{s.cpu_percent:.1f}%", what_text(s), ",".join(s.found_by),
                     ",".join(s.evidence) or "-",
                     f"{s.parent['pid']} {s.parent['name'] or '?'} ({s.parent['role']})",
                     guard + _short(s.shown, 60) + extra])
    return rows


def _totals_line(result: ScanResult) -> str:
    t = result.totals()
    line = (f"{t['servers']} stdio server(s): {t['leaked']} leaked holding "
            f"{_size(t['leaked_rss_bytes'])} ({t['leaked_mcp']} identified as MCP), "
            f"{t['live']} live")
    if t["unknown"]:
        line += f", {t['unknown']} unknown (a far end not visible here: never reaped)"
    if t["abandoned"]:
        line += (f", {t['abandoned']} abandoned by a live host holding "
                 f"{_size(t['abandoned_rss_bytes'])} (reap --include abandoned)")
    if result.unreadable:
        line += f"; {result.unreadable} process(es) not readable, skipped"
    return line


def abandoned_lines(result: ScanResult) -> list[str]:
    """The evidence of each abandoned server, one line each (`scan.abandoned`)."""
    out: list[str] = []
    for s in result.abandoned:
        info = s.listening
        out.append(f"abandoned pid {s.pid} (confidence {info.get('confidence', '?')}, "
                   f"seen abandoned {float(info.get('abandoned_seconds') or 0):.1f}s):")
        out += [f"  - {line}" for line in info.get("lines", ())]
    return out


def print_ps(result: ScanResult) -> None:
    rows = _rows(result)
    if sys.stdout.isatty():  # rich draws for a terminal only: pipes get plain columns
        from rich.console import Console
        from rich.table import Table

        table = Table(box=None, header_style="bold")
        for h in HEADERS:
            table.add_column(h, overflow="fold" if h == "COMMAND" else "ellipsis")
        for r in rows:
            table.add_row(*r, style={"leaked": "red", "unknown": "yellow",
                                     "abandoned": "magenta"}.get(r[0]))
        console = Console()
        if rows:
            console.print(table)
        for line in abandoned_lines(result):
            console.print(line, markup=False, highlight=False)
        console.print(_totals_line(result))
        return
    if rows:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADERS)]
        for r in [HEADERS, *rows]:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    for line in abandoned_lines(result):
        print(line)
    print(_totals_line(result))


def print_plan(p: Plan, to: Any = None, containers: bool = False) -> None:
    """The reap plan; `containers`: leaked containers follow (so not "nothing to reap")."""
    out = to or sys.stdout
    if not p.chosen and not containers:
        print("nothing to reap", file=out)
    for s in p.chosen:
        print(f"would end pid {s.pid} ({len(s.members)} process(es), {_size(s.rss_bytes)}) "
              f"{what_text(s)} [{', '.join(s.evidence)}]: {_short(s.shown)}", file=out)
    for sk in p.skipped:
        print(f"left alone: pid {sk.server.pid} {_short(sk.server.shown, 60)}: {sk.reason}",
              file=out)
    if p.chosen:
        print(f"total: {len(p.chosen)} tree(s), {_size(sum(s.rss_bytes for s in p.chosen))}",
              file=out)


def _label(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render_openmetrics(result: ScanResult) -> str:
    """Gauges for a node exporter's textfile collector (OpenMetrics text, ends `# EOF`)."""
    t = result.totals()
    lines: list[str] = []

    def family(name: str, help_: str, samples: list[tuple[str, float]]) -> None:
        lines.append(f"# HELP {name} {help_}")
        lines.append(f"# TYPE {name} gauge")
        for labels, value in samples:
            lines.append(f"{name}{labels} {value:g}" if isinstance(value, float)
                         else f"{name}{labels} {value}")

    family("mcp_tether_servers", "stdio server process trees on this machine, by state.",
           [('{state="leaked"}', t["leaked"]), ('{state="live"}', t["live"]),
            ('{state="unknown"}', t["unknown"])])
    family("mcp_tether_leaked_rss_bytes", "Resident memory held by leaked server trees.",
           [("", t["leaked_rss_bytes"])])
    family("mcp_tether_server_rss_bytes", "Resident memory of server trees, by state.",
           [('{state="leaked"}', t["leaked_rss_bytes"]), ('{state="live"}', t["live_rss_bytes"])])
    family("mcp_tether_leaked_by_evidence", "Leaked server trees with each evidence.",
           [(f'{{evidence="{e}"}}', sum(1 for s in result.leaked if e in s.evidence))
            for e in (PARENT_GONE, STDIN_NO_WRITER, STDOUT_NO_READER, WRITER_HELD, HOST_GONE)])
    family("mcp_tether_server_info", "One sample per server: what it is, how found, state.",
           [(f'{{pid="{s.pid}",state="{s.state}",package="{_label(s.what.package or "")}",'
             f'version="{_label(s.what.version or "")}",sdk="{_label(s.what.sdk or "")}",'
             f'sdk_version="{_label(s.what.sdk_version or "")}",'
             f'found_by="{",".join(s.found_by)}",evidence="{",".join(s.evidence)}"}}',
             s.rss_bytes) for s in result.servers])
    family("mcp_tether_unreadable_processes", "Processes the scan could not read.",
           [("", result.unreadable)])
    family("mcp_tether_config_errors", "Host config files that could not be read.",
           [("", len(result.config_errors))])
    lines.append("# EOF")
    return "\n".join(lines) + "\n"
