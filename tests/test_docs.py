"""docs/architecture.md names every room of the house, with the command it serves;
docs/README.md, every page by task.

A reader finds where a command lives from that page alone; a package or top-level module
added to src/mcp_tether/ without a row there (or a row left for one that is gone) fails.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "mcp_tether"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _rows() -> dict[str, list[str]]:
    """`name/` or `name.py` -> the cells after it, for each table row naming one."""
    section = ARCHITECTURE.read_text().split("## Every room, and the command it serves", 1)
    assert len(section) == 2, "docs/architecture.md has no section naming every room"
    rows = {}
    for line in section[1].split("\n## ", 1)[0].splitlines():
        m = re.match(r"^\| `([\w.]+/?)`[^|]*\|(.*)\|\s*$", line)
        if m:
            rows[m[1]] = [c.strip() for c in m[2].split("|")]
    return rows


def _rooms() -> set[str]:
    packages = {f"{p.parent.name}/" for p in PKG.glob("*/__init__.py")}
    modules = {p.name for p in PKG.glob("*.py")}
    return packages | modules


def test_every_package_and_top_level_module_is_named_with_what_it_serves() -> None:
    rows = _rows()
    missing = sorted(_rooms() - rows.keys())
    assert not missing, f"docs/architecture.md does not name: {missing}"
    for name in _rooms():
        what, serves = rows[name]
        assert what and serves, (name, rows[name])


def test_no_row_names_a_room_that_is_gone() -> None:
    stale = sorted(_rows().keys() - _rooms())
    assert not stale, f"docs/architecture.md names rooms that do not exist: {stale}"


INDEX = ROOT / "docs" / "README.md"


def test_the_docs_index_links_every_page_by_task() -> None:
    """docs/README.md lists every page of docs/ under a task, so a page added without a
    row there (or a row left for a page that is gone) fails."""
    linked = set(re.findall(r"\]\(([\w.-]+\.md)(?:#[^)]*)?\)", INDEX.read_text()))
    pages = {p.name for p in INDEX.parent.glob("*.md")} - {INDEX.name}
    assert not sorted(pages - linked), f"docs/README.md does not link: {sorted(pages - linked)}"
    assert not sorted(linked - pages), f"docs/README.md links missing pages: {linked - pages}"
