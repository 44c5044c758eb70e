"""The files a command writes beside its output: --html, --markdown, --junit.

    code = write_pictures("lab", sections, html=args.html, markdown=args.markdown)
    code = write_junit_or_say(args.junit, {suite: results}, level) or code

Guarantees:
- Called after the results were shown: a file that cannot be written is one line on
  stderr and exit code 2 (returned, not raised), and the other files asked for are still
  written (CI reads --junit even when --html failed).
- `None` when every file asked for was written (or none was asked for).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from mcp_tether.errors import EXIT_USAGE, UsageError
from mcp_tether.report.html import write_html
from mcp_tether.report.junit import write_junit
from mcp_tether.report.markdown import write_markdown

if TYPE_CHECKING:
    from mcp_tether.report.picture import Section

__all__ = ["write_pictures", "write_junit_or_say"]


def write_pictures(command: str, sections: list[Section], *,
                   html: str | None, markdown: str | None, title: str = "") -> int | None:
    """--html / --markdown, after the results were shown; a file that cannot be written is
    one line and exit 2, and the other files asked for are still written (CI reads
    --junit)."""
    code = None
    for path, kind in ((html, "html"), (markdown, "markdown")):
        if not path:
            continue
        try:
            if kind == "html":
                write_html(path, sections, title=title)
            else:
                write_markdown(path, sections)
        except UsageError as exc:  # the writers' one line: "--html PATH: why"
            print(f"mcp-tether {command}: {exc.msg}", file=sys.stderr)
            code = EXIT_USAGE
    return code


def write_junit_or_say(path: str | None, suites: dict[str, Any], level: str) -> int | None:
    """Write JUnit after the results were shown; on failure, one line and exit 2."""
    if not path:
        return None
    try:
        write_junit(path, suites, level)
    except OSError as exc:
        print(f"mcp-tether: cannot write --junit {path}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    return None
