"""A compact Markdown summary of probe results, for CI job pages (GitHub step summary).

    write_markdown("summary.md", [(title, payload)])   # payload: `probe --json`'s object

Every string of a result goes through `escape.md_text` (or `md_code`, `html_text` inside
the `<details>` HTML): rendered by a CommonMark renderer, a server's words stay text.
One section per server: its one-line summary of guarantees, a table of scenarios, and
for each failed one its diagnosis and the fixes it needs in a collapsed block; each fix is
written once, under "Fixes" at the end, and the rows point to it. Pure rendering.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp_tether.errors import UsageError
from mcp_tether.escape import html_text, md_cell, md_code, md_text
from mcp_tether.probe.diagnose import explain_line, summary
from mcp_tether.report.fixes import GUARD_LEGEND, Fixes, number_fixes
from mcp_tether.report.legend import legend

if TYPE_CHECKING:
    from mcp_tether.probe.record import ScenarioRecord
    from mcp_tether.report.picture import Section

__all__ = ["render_markdown", "write_markdown"]

_ICON = {"exited": "✅", "alive": "✅", "terminated": "⚠️", "killed": "❌", "orphaned": "❌",
         "lingered": "❌", "early-exit": "💥", "error": "💥", "skipped": "⏭️",
         "disabled": "⏭️"}


def _ms(v: Any) -> str:
    return "—" if v is None else f"{float(v):.0f}"


def _remedy(r: ScenarioRecord, fixes: Fixes) -> str:
    pointer = fixes.pointer(r)
    guard = fixes.guard_of(r)
    return f"fix {pointer}" + (f" ({md_code(guard)})" if guard else "")  # ours: "[1], or [G]"


def render_markdown(sections: list[Section]) -> str:
    out: list[str] = []
    fixes = number_fixes(r for _, p in sections for r in p.get("results", [])
                         if r.get("diagnosis"))
    for title, payload in sections:
        results = payload.get("results", [])
        passed = sum(1 for r in results if r.get("passed"))
        out.append(f"### {md_text(title)}")
        out.append("")
        per_server = payload.get("server_summaries")
        if per_server:  # the lab: several servers in one section
            out.append(f"**{passed}/{len(results)} passed**")
            out.append("")
            out += [f"- **{md_text(name)}**: {md_text(text)}" for name, text in per_server]
        else:
            probed = any(r.get("scenario") != "*" for r in results)  # "*": not probed
            count = f"**{passed}/{len(results)} passed** — " if probed else ""
            out.append(f"{count}{md_text(payload.get('summary') or summary(results))}")
        out.append("")
        labelled = any(r.get("label") for r in results)
        head = (["row"] if labelled else []) + ["scenario", "style", "verdict", "exit ms",
                                                 "rung", "why"]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * len(head))
        for r in results:
            cells = ([r.get("label", "")] if labelled else []) + [
                r.get("scenario", ""), r.get("host_style", ""),
                f"{_ICON.get(r.get('verdict', ''), '')} {r.get('verdict', '')}",
                _ms(r.get("exit_ms")), r.get("rung") or "—",
                explain_line(r) or ("" if r.get("passed") else r.get("detail", "")),
            ]
            out.append("| " + " | ".join(md_cell(c) for c in cells) + " |")
        out.append("")
        for r in results:
            if r.get("diagnosis"):
                name = f"{r.get('label') or ''} {r.get('scenario')} ({r.get('verdict')})".strip()
                out.append(f"<details><summary>{html_text(name)}</summary>")
                out.append("")
                out.append(f"**Diagnosis.** {md_text(r['diagnosis'])}")
                out.append("")
                if r.get("remedy"):
                    out.append(f"**Remedy.** {_remedy(r, fixes)}")
                    out.append("")
                out.append("</details>")
                out.append("")
    styles = [str(r.get("host_style", "")) for _, p in sections for r in p.get("results", [])]
    if said := legend(styles):
        out += [said, ""]  # our words on the known styles only (`legend`)
    if fixes.steps or fixes.guarded:
        out += ["### Fixes", "", "Each said once; the rows above point to them.", ""]
        out += [f"- **[{n}]** {md_text(step)}" for n, step in enumerate(fixes.steps, 1)]
        if fixes.guarded:
            out.append(f"- **[G]** {md_text(GUARD_LEGEND)}")
    return "\n".join(out).rstrip() + "\n"


def write_markdown(path: str, sections: list[Section]) -> None:
    try:
        with open(path, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(render_markdown(sections))
    except OSError as exc:
        raise UsageError(f"--markdown {path}: {exc.strerror}") from None
