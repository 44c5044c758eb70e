"""Text and OpenMetrics renderings of a `ScanResult` and of a reap plan.

The JSON rendering is `ScanResult.to_dict()`; these carry the same facts for a human
(a table, leaked first, with a total of the memory leaks hold; a server behind the
guard is shown by its inner command, marked `guarded:`) and for a node
exporter's textfile collector (gauges by the Prometheus conventions, in OpenMetrics
text or, for a `--textfile`, the Prometheus text format that collector parses;
`reap --watch --textfile` adds counters of what it ended, the memory that freed and
the files it could not write).
A command line, a user, a package or a parent's name is untrusted: each goes through
`escape.terminal`, so a server is one row whatever its argv holds (a newline, ESC, BEL
are shown as `\n`, `\x1b`, `\x07`, never sent).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mcp_tether.escape import terminal
from mcp_tether.scan.match import guarded_argv
from mcp_tether.scan.model import EVIDENCE, STATES, ScanResult, Server
from mcp_tether.scan.reap import REAP_OUTCOMES, Plan

__all__ = ["print_ps", "print_plan", "abandoned_lines", "superseded_lines",
           "render_openmetrics", "what_text", "counted", "size_text", "HEADERS", "DIALECTS"]

HEADERS = ["STATE", "PID", "USER", "AGE", "RSS", "CPU", "WHAT", "FOUND", "EVIDENCE",
           "PARENT", "COMMAND"]


def counted(n: int, word: str, plural: str | None = None) -> str:
    """`n` and the word for that many: "1 server tree", "2 server trees"."""
    return f"{n} {word if n == 1 else plural or word + 's'}"


def size_text(n: int) -> str:
    """A byte count in the largest binary unit under 1024 of it (B to GiB)."""
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if v < 1024 or unit == "GiB":
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    return f"{v:.1f} GiB"


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
        rows.append([terminal(c) for c in (
            s.state, str(s.pid), s.user, _age(s.age_seconds), size_text(s.rss_bytes),
            f"{s.cpu_percent:.1f}%", what_text(s), ",".join(s.found_by),
            ",".join(s.evidence) or "-",
            f"{s.parent['pid']} {s.parent['name'] or '?'} ({s.parent['role']})",
            guard + _short(s.shown, 60) + extra)])
    return rows


def _totals_line(result: ScanResult) -> str:
    t = result.totals()
    line = (f"{counted(t['servers'], 'stdio server')}: {t['leaked']} leaked holding "
            f"{size_text(t['leaked_rss_bytes'])} ({t['leaked_mcp']} identified as MCP), "
            f"{t['live']} live")
    if t["unknown"]:
        line += f", {t['unknown']} unknown (a far end not visible here: never reaped)"
    if t["superseded"]:
        line += (f", {t['superseded']} superseded by a newer copy holding "
                 f"{size_text(t['superseded_rss_bytes'])} (reap --include superseded)")
    if t["abandoned"]:
        line += (f", {t['abandoned']} abandoned by a live host holding "
                 f"{size_text(t['abandoned_rss_bytes'])} (a hint: never reaped)")
    if result.unreadable:
        line += (f"; {counted(result.unreadable, 'process', 'processes')} not readable, "
                 "skipped")
    return line


def abandoned_lines(result: ScanResult) -> list[str]:
    """The evidence of each abandoned server, one line each (`scan.abandoned`)."""
    out: list[str] = []
    for s in result.abandoned:
        info = s.listening
        out.append(f"abandoned pid {s.pid} (a hint, never reaped; confidence "
                   f"{info.get('confidence', '?')}, "
                   f"seen abandoned {float(info.get('abandoned_seconds') or 0):.1f}s):")
        out += [f"  - {terminal(line)}" for line in info.get("lines", ())]
    return out


def superseded_lines(result: ScanResult) -> list[str]:
    """The evidence of each superseded copy (the newer copy, the entry, the idle time, its
    host's habit), and one line for each copy that looks forgotten but is not superseded,
    saying which condition is missing (`superseded.missing`)."""
    out: list[str] = []
    for s in result.servers:
        info = s.superseded
        newer = (info.get("newer_copy") or {}).get("pid")
        if s.is_superseded:
            entry = info.get("entry") or {}
            where = entry.get("host") or os.path.basename(str(entry.get("path") or "")) \
                or "config"
            name = f", entry {where}/{entry.get('name')}" if entry else ""
            out.append(terminal(  # config entry names are untrusted
                f"superseded pid {s.pid} by pid {newer}{name}, idle "
                f"{float(info.get('idle_seconds') or 0):.0f}s observed: "
                f"{info.get('reason', '')}"))
            habit = (info.get("habit") or {}).get("evidence")
            if habit:
                out.append("  - " + terminal(f"host habit: {habit}"))
        elif info.get("missing"):
            copy = f" (newer copy pid {newer})" if newer else ""
            out.append(terminal(f"not superseded pid {s.pid}{copy}: {info.get('reason', '')}"))
    return out


def print_ps(result: ScanResult) -> None:
    rows = _rows(result)
    if sys.stdout.isatty():  # rich draws for a terminal only: pipes get plain columns
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table

        table = Table(box=None, header_style="bold")
        for h in HEADERS:
            table.add_column(h, overflow="fold" if h == "COMMAND" else "ellipsis")
        for r in rows:
            table.add_row(*map(escape, r), style={"leaked": "red", "unknown": "yellow",
                                                  "superseded": "magenta"}.get(r[0]))
        console = Console()
        if rows:
            console.print(table)
        for line in superseded_lines(result) + abandoned_lines(result):
            console.print(line, markup=False, highlight=False)
        console.print(_totals_line(result))
        return
    if rows:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADERS)]
        for r in [HEADERS, *rows]:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    for line in superseded_lines(result) + abandoned_lines(result):
        print(line)
    print(_totals_line(result))


def print_plan(p: Plan, to: Any = None, containers: bool = False) -> None:
    """The reap plan; `containers`: leaked containers follow (so not "nothing to reap")."""
    out = to or sys.stdout
    if not p.chosen and not containers:
        print("nothing to reap", file=out)
    for s in p.chosen:
        tree = counted(len(s.members), "process", "processes")
        print(terminal(f"would end pid {s.pid} ({tree}, "
                       f"{size_text(s.rss_bytes)}) {what_text(s)} [{', '.join(s.evidence)}]: "
                       f"{_short(s.shown)}"), file=out)
    for sk in p.skipped:
        print(terminal(f"left alone: pid {sk.server.pid} {_short(sk.server.shown, 60)}: "
                       f"{sk.reason}"), file=out)
    if p.chosen:
        print(f"total: {counted(len(p.chosen), 'tree')}, "
              f"{size_text(sum(s.rss_bytes for s in p.chosen))}",
              file=out)


def _label(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


# Base units a family name may end in; each gets a `# UNIT` line (OpenMetrics).
_UNITS = ("bytes", "seconds")
# The two text formats: OpenMetrics (`ps --format openmetrics` on stdout), and the
# Prometheus text format (0.0.4), which a node exporter's textfile collector parses
# (`--textfile`). They differ in a counter's name, which OpenMetrics gives without
# `_total` and the Prometheus format with it, in `# UNIT` and in `# EOF`.
DIALECTS = ("openmetrics", "prometheus")

# The states and evidence always written, 0 when none: a series that is sometimes absent
# breaks alerts (`absent()`, rate over gaps). Any other state or evidence a scan reports
# is written as well, as it appears, with no change here (`model.STATES`, `model.EVIDENCE`).


def render_openmetrics(result: ScanResult, *, per_process: bool = False,
                       version: str = "", reaped: Mapping[str, int] | None = None,
                       reclaimed_bytes: int = 0,
                       write_errors: Mapping[str, int] | None = None,
                       dialect: str = "openmetrics") -> str:
    """Gauges for a node exporter's textfile collector, by the Prometheus conventions:
    base units in the name (`_bytes`, `_seconds`) and in a `# UNIT` line, one family per
    fact with its dimensions as labels (sum over a label for the totals, except in the
    `evidence_*` families: a tree counts once per evidence line it has, so their sum can
    exceed the trees), `_info` series of value 1
    with low-cardinality labels, and no series per process unless `per_process` (a pid
    label makes a new series for every process, which churns a time-series database).
    Every family has its HELP and TYPE. `dialect` "openmetrics": OpenMetrics text,
    ending `# EOF`; "prometheus": the Prometheus text format a node exporter's textfile
    collector parses, which `promtool check metrics` passes with no warning (`DIALECTS`).
    With `reaped` (outcome -> trees, since `reap --watch` started), counters as well:
    `mcp_tether_reaped_total{outcome}`, `mcp_tether_reclaimed_bytes_total` and, with
    `write_errors` (file -> failed writes), `mcp_tether_file_write_errors_total{file}`,
    so `increase()` over them survives a restart of the watch (a reset)."""
    if dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, not {dialect!r}")
    out = _Families(openmetrics=dialect == "openmetrics")
    out.family("mcp_tether_build_info", "The mcp-tether that wrote these series.",
               [({"version": version}, 1)])
    _by_state(out, result.servers)
    _by_package(out, result.servers)
    _of_the_scan(out, result)
    if per_process:
        _per_process(out, result.servers)
    if reaped is not None:
        _reaped(out, reaped, reclaimed_bytes)
    if write_errors is not None:
        out.family("mcp_tether_file_write_errors", "Writes of its files reap --watch could "
                   "not make since it started, by file (textfile: this one; samples: the "
                   "read/write samples file).",
                   [({"file": f}, n) for f, n in sorted(write_errors.items())], kind="counter")
    return out.text()


# One series: its labels and its value.
_Sample = tuple[dict[str, str], float]


class _Families:
    """The text being written, one family at a time, in one dialect."""

    def __init__(self, *, openmetrics: bool) -> None:
        self.om = openmetrics
        self.lines: list[str] = []

    def family(self, name: str, help_: str, samples: Iterable[_Sample],
               kind: str = "gauge") -> None:
        """A family's HELP, TYPE (and UNIT) lines, then its samples."""
        sample = f"{name}_total" if kind == "counter" else name
        if self.om:
            # TYPE, UNIT, HELP: the order the OpenMetrics spec recommends. A UNIT must be
            # the name's suffix. A counter's family has no `_total`; its sample has.
            self.lines.append(f"# TYPE {name} {kind}")
            unit = next((u for u in _UNITS if name.endswith(f"_{u}")), None)
            if unit:
                self.lines.append(f"# UNIT {name} {unit}")
            self.lines.append(f"# HELP {name} {help_}")
        else:
            # The Prometheus format names the family by its samples, `_total` included:
            # a HELP or TYPE without it describes no sample, and the parser makes the
            # counter an untyped family with no help of its own.
            self.lines.extend([f"# HELP {sample} {help_}", f"# TYPE {sample} {kind}"])
        for labels, value in samples:
            inner = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
            text = str(value) if isinstance(value, int) else repr(float(value))  # exact
            self.lines.append(f"{sample}{{{inner}}} {text}" if inner else f"{sample} {text}")

    def text(self) -> str:
        return "\n".join([*self.lines, *(["# EOF"] if self.om else [])]) + "\n"


def _tally(servers: list[Server], key: Callable[[Server], Iterable[tuple[str, ...]]],
           keys: Iterable[tuple[str, ...]]
           ) -> tuple[dict[tuple[str, ...], int], dict[tuple[str, ...], int]]:
    """Trees and their resident memory per key (`keys` are there at 0 when none has them)."""
    keys = list(keys)
    count = dict.fromkeys(keys, 0)
    held = dict.fromkeys(keys, 0)
    for s in servers:
        for k in key(s):
            count[k] = count.get(k, 0) + 1
            held[k] = held.get(k, 0) + s.rss_bytes
    return count, held


def _by_state(out: _Families, servers: list[Server]) -> None:
    """Trees and memory by state, and by state and evidence."""
    states = sorted({*STATES, *(s.state for s in servers)})
    evidence = sorted({*EVIDENCE, *(e for s in servers for e in s.evidence)})
    count, held = _tally(servers, lambda s: [(s.state,)], [(st,) for st in states])
    out.family("mcp_tether_servers", "Stdio server process trees on this machine, by state.",
               [({"state": k[0]}, v) for k, v in sorted(count.items())])
    out.family("mcp_tether_server_rss_bytes", "Resident memory of server trees, by state.",
               [({"state": k[0]}, v) for k, v in sorted(held.items())])
    count, held = _tally(servers, lambda s: [(s.state, e) for e in s.evidence],
                         [(st, e) for st in states for e in evidence])
    out.family("mcp_tether_evidence_servers",
               "Server trees with each evidence, by state; a tree counts once per evidence "
               "it has, so a sum over evidence can exceed the trees.",
               [({"state": k[0], "evidence": k[1]}, v) for k, v in sorted(count.items())])
    out.family("mcp_tether_evidence_rss_bytes",
               "Resident memory of the server trees with each evidence, by state; a tree "
               "counts once per evidence it has, so a sum over evidence can exceed the total.",
               [({"state": k[0], "evidence": k[1]}, v) for k, v in sorted(held.items())])


def _by_package(out: _Families, servers: list[Server]) -> None:
    """Trees and memory by package and state; each package seen, with its SDK."""
    count, held = _tally(servers, lambda s: [(s.state, s.what.package or "")], [])
    out.family("mcp_tether_package_servers",
               "Server trees by package and state; an empty package label: not identified.",
               [({"state": k[0], "package": k[1]}, v) for k, v in sorted(count.items())])
    out.family("mcp_tether_package_rss_bytes",
               "Resident memory of server trees by package and state.",
               [({"state": k[0], "package": k[1]}, v) for k, v in sorted(held.items())])
    packages = sorted({_what(s) for s in servers if s.what.package})
    out.family("mcp_tether_package_info", "Each server package seen: its version and SDK.",
               [(dict(zip(("package", "version", "sdk", "sdk_version"), w, strict=True)), 1)
                for w in packages])


def _of_the_scan(out: _Families, result: ScanResult) -> None:
    """What the scan looked at, could not read, and took."""
    out.family("mcp_tether_scanned_processes", "Processes the scan looked at.",
               [({}, result.scanned)])
    out.family("mcp_tether_unreadable_processes", "Processes the scan could not read.",
               [({}, result.unreadable)])
    out.family("mcp_tether_config_errors", "Host config files that could not be read.",
               [({}, len(result.config_errors))])
    out.family("mcp_tether_scan_duration_seconds", "How long the scan took.",
               [({}, round(result.elapsed, 3))])


def _per_process(out: _Families, servers: list[Server]) -> None:
    """One series per tree (--per-process): what it is, and its memory."""
    out.family("mcp_tether_process_info", "One series per server tree (--per-process): "
               "its root process (pid, start time) and what it is.",
               [(dict(_ident(s), state=s.state, **dict(zip(
                   ("package", "version", "sdk", "sdk_version"), _what(s), strict=True)),
                   found_by=",".join(s.found_by), evidence=",".join(s.evidence)), 1)
                for s in servers])
    out.family("mcp_tether_process_rss_bytes", "Resident memory of each server tree "
               "(--per-process).", [(_ident(s), s.rss_bytes) for s in servers])


def _reaped(out: _Families, reaped: Mapping[str, int], reclaimed_bytes: int) -> None:
    """reap --watch's counters: trees acted on by outcome, memory reclaimed."""
    outcomes = sorted({*REAP_OUTCOMES, *reaped})
    out.family("mcp_tether_reaped", "Server trees reap --watch acted on since it started, "
               "by outcome.", [({"outcome": o}, reaped.get(o, 0)) for o in outcomes],
               kind="counter")
    out.family("mcp_tether_reclaimed_bytes", "Resident memory of the server trees reap "
               "--watch ended since it started.", [({}, reclaimed_bytes)], kind="counter")


def _what(s: Server) -> tuple[str, str, str, str]:
    w = s.what
    return (w.package or "", w.version or "", w.sdk or "", w.sdk_version or "")


def _ident(s: Server) -> dict[str, str]:
    return {"pid": str(s.pid), "start": str(s.ident.start)}
