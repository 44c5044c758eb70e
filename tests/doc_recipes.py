"""The Node package's install recipes, as the pages and the tool's own fix texts say them.

A recipe is read from where a user copies it: a fenced or indented code block, or a code
span, of README.md, docs/*.md or node/README.md that installs the Node package (`npm
pack` of mcp-tether's node/ folder, or `npm install` of its tarball), and the install
command of the probe's and the lab's remedy (`inspect.node.NODE_INSTALL`). Nothing here
retypes a command: `shell(recipe, clone)` gives the recipe's own lines with the one
placeholder a user fills in, `/path/to/mcp-tether`, made a real path.

    for r in recipes():   # Recipe(where="docs/ci.md block 1", text="mkdir -p vendor\\n...")
        script = shell(r, "/tmp/clone")
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "node" / "README.md"]
PLACEHOLDER = "/path/to/mcp-tether"
# Installs the Node package: packs its folder, or installs its tarball.
_INSTALLS = re.compile(r"npm pack \S*mcp-tether/node|\(cd node && npm pack\)|"
                       r"npm install \S*mcp-tether-[^\s`]*\.tgz")
_FENCED = re.compile(r"^```[\w-]*\n(.*?)^```$", re.M | re.S)
_INDENTED = re.compile(r"(?:^\n)((?:^    \S.*\n)+)", re.M)
_SPAN = re.compile(r"`([^`\n]+)`")
# The lines of a block that are the install (a block may also build the Python package
# or clone the repository: the clone is the checkout the test gives as `clone`).
_STEP = re.compile(r"^(?:mkdir |npm (?:pack|install) |\(cd node && npm pack\)|git add )")


@dataclass(frozen=True)
class Recipe:
    where: str  # "docs/ci.md block 1", "README.md span 2", "NODE_INSTALL"
    text: str

    @property
    def vendors(self) -> bool:
        """Does it commit the tarball under vendor/ (what `npm ci` on a runner needs)?"""
        return "--pack-destination vendor" in self.text


def _blocks(text: str) -> tuple[list[str], str]:
    """The page's code blocks (fenced, then indented), and its text without them."""
    fenced = [m[1] for m in _FENCED.finditer(text)]
    rest = _FENCED.sub("", text)
    indented = [re.sub(r"^    ", "", m[1], flags=re.M) for m in _INDENTED.finditer(rest)]
    return fenced + indented, _INDENTED.sub("\n", rest)


def recipes() -> list[Recipe]:
    """Every install recipe of the pages, then the remedy's."""
    from mcp_tether.inspect.node import NODE_INSTALL

    out = []
    for page in PAGES:
        name = str(page.relative_to(ROOT))
        blocks, prose = _blocks(page.read_text())
        out += [Recipe(f"{name} block {i}", b) for i, b in enumerate(blocks, 1)
                if _INSTALLS.search(b)]
        out += [Recipe(f"{name} span {i}", s) for i, s in enumerate(_SPAN.findall(prose), 1)
                if _INSTALLS.search(s)]
    out.append(Recipe("NODE_INSTALL", NODE_INSTALL))
    # One run per distinct text: the survey's pages repeat the remedy's command per row.
    seen: dict[str, Recipe] = {}
    for r in out:
        seen.setdefault(r.text, r)
    return list(seen.values())


def mentions() -> list[tuple[str, str]]:
    """(page, line) for every line of the pages that names an install command: each must
    belong to a recipe `recipes()` found (none is left untested)."""
    return [(str(p.relative_to(ROOT)), ln) for p in PAGES for ln in p.read_text().splitlines()
            if _INSTALLS.search(ln)]


def shell(recipe: Recipe, clone: Path) -> tuple[str, str]:
    """(the lines run in mcp-tether's clone, the lines run in the server's project), each
    a shell script of the recipe's own install lines, `/path/to/mcp-tether` -> `clone`."""
    lines = [ln.strip() for ln in recipe.text.replace(PLACEHOLDER, str(clone)).splitlines()]
    steps = [ln for ln in lines if _STEP.match(ln)]
    in_clone = [ln for ln in steps if ln.startswith("(cd node")]
    in_project = [ln for ln in steps if not ln.startswith("(cd node")]
    return "\n".join(in_clone), "\n".join(in_project)
