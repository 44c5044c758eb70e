"""What the host-style tags and the level words mean: one text for every report.

The lab's summary, the Markdown and the HTML report all say it in these words, so a tag
or a level read in one means the same in the others.
"""

from __future__ import annotations

from collections.abc import Iterable

from mcp_tether.probe.scenarios import all_scenarios
from mcp_tether.probe.spec import ROBUST

__all__ = ["HOST_STYLE_WORDS", "legend"]

HOST_STYLE_WORDS = {
    "node": "socketpair stdio, SIGTERM to the direct child (like Node hosts)",
    "python": "pipes, new session, signals to the group (like the Python SDK)",
}


def legend(styles: Iterable[str], capped: str = "") -> str:
    """The tags of `styles` (those known) and the three level words; `capped` is said
    after `spec` (the lab's note on servers that had no robust row to pass). Empty when
    no row has a known style: nothing was probed, so there is nothing to explain."""
    known = sorted({s for s in styles if s in HOST_STYLE_WORDS})
    if not known:
        return ""
    tags = "; ".join(f"[{s}] {HOST_STYLE_WORDS[s]}" for s in known)
    robust = ", ".join(s.name for s in all_scenarios() if s.level == ROBUST)
    return (f"legend: [tag] = host style of the rows: {tags}. robust = every row passed, "
            f"a robust one ({robust}) among them: the server also ends on a SIGINT from "
            "outside its host, and when its host dies while another process keeps its "
            "stdin open (EOF never comes), which takes a parent-death watch; "
            f"spec = every spec row passed, what the MCP spec asks of a server{capped}; "
            "none = a spec row failed.")
