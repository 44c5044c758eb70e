"""JUnit XML of probe results, for CI dashboards: written in every outcome.

    write_junit(path, {suite_name: results}, level)

Guarantees:
- One <testsuite> per server (or lab block), one <testcase> per scenario.
- A failed scenario's `message` is never empty: its verdict, then the diagnosis (why it
  failed, what kept it alive) and the remedy ("Fix: ..."), as `probe --markdown` shows
  them; the element's text adds the server's stderr tail.
- A command that could not be started (not found: 127, not executable: 126) is one
  <testcase name="start"> with an <error> saying so and what to check: CI dashboards see
  the failure instead of a missing file.
- A failed robust scenario judged at the `spec` level is <skipped> with its reason, so
  dashboards show it without failing the build.
- Well-formed XML 1.0 whatever the server said: every name, message and text goes
  through `escape.xml_text` (characters XML forbids, ESC and BEL among them, are shown as
  `\x1b`); ElementTree escapes the markup characters, and nothing is put in CDATA.
Raises OSError when `path` cannot be written (callers print their results first).
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.etree import ElementTree as ET

from mcp_tether.escape import xml_text
from mcp_tether.probe.api import ScenarioResult
from mcp_tether.probe.spec import ROBUST, SPEC
from mcp_tether.report.text import note

__all__ = ["write_junit", "failure_message"]


def failure_message(r: ScenarioResult) -> str:
    """`<verdict>: <note>. <diagnosis> Fix: <remedy>`, each part only when known."""
    said = note(r)
    if said and r.diagnosis and said.lower().rstrip(".") in r.diagnosis.lower():
        said = ""  # the diagnosis says it already
    head = r.verdict + (f": {said}" if said else "")
    parts = [head]
    if r.diagnosis:
        parts.append(r.diagnosis)
    elif r.detail and r.detail not in head:
        parts.append(r.detail)
    if r.remedy:
        parts.append(f"Fix: {r.remedy}")
    return ". ".join(p.rstrip(".") for p in parts) + "."


def _el(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    """A child element whose attributes and text are legal XML 1.0 whatever they hold."""
    el = ET.SubElement(parent, tag, {k: xml_text(v) for k, v in attrs.items()})
    if text is not None:
        el.text = xml_text(text)
    return el


def write_junit(path: str, suites: dict[str, Sequence[ScenarioResult]],
                level: str = SPEC) -> None:
    root = ET.Element("testsuites", name="mcp-tether")
    for name, results in suites.items():
        def warn(r: ScenarioResult) -> bool:
            return r.warning_only and level != ROBUST

        def not_run(r: ScenarioResult) -> bool:  # a skipped or disabled config entry
            return r.verdict in ("skipped", "disabled")

        failures = sum(1 for r in results if not r.passed and r.verdict != "error"
                       and not warn(r) and not not_run(r))
        errors = sum(1 for r in results if r.verdict == "error")
        skipped = sum(1 for r in results if (warn(r) or not_run(r)) and r.verdict != "error")
        suite = _el(
            root, "testsuite", name=name, tests=str(len(results)),
            failures=str(failures), errors=str(errors), skipped=str(skipped),
        )
        for r in results:
            case = _el(
                suite, "testcase",
                classname=name,
                name=f"{r.label + ' ' if r.label else ''}{r.scenario}[{r.host_style}]",
                time=f"{(r.exit_ms or 0) / 1000:.3f}",
            )
            props = _el(case, "properties")
            _el(props, "property", name="level", value=r.level)
            _el(props, "property", name="verdict", value=r.verdict)
            if r.guarded:
                _el(props, "property", name="guard_rung", value=r.guard_rung or "")
            if r.verdict == "error":
                _el(case, "error", _body(r), message=failure_message(r))
            elif not_run(r):  # not run: neither passed nor failed
                _el(case, "skipped", message=r.detail or r.verdict)
            elif warn(r):
                _el(case, "skipped", message="robust level (warning at --level "
                    f"spec): {failure_message(r)}")
            elif not r.passed:
                _el(case, "failure", _body(r), message=failure_message(r))
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def _body(r: ScenarioResult) -> str | None:
    parts = [f"Diagnosis: {r.diagnosis}" if r.diagnosis else "",
             f"Remedy: {r.remedy}" if r.remedy else "",
             f"stderr (last lines):\n{r.stderr_tail[-1000:]}" if r.stderr_tail else ""]
    text = "\n\n".join(p for p in parts if p)
    return text or None
