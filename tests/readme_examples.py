"""The recipes (README.md and docs/*.md) are files under examples/, included verbatim
after a marker.

    <!-- example: examples/python-server/server.py -->
    ```python
    ...the file's text...
    ```

`python tests/readme_examples.py` rewrites every marked block from its file (run it after
editing an example); `tests/test_readme.py` fails when a block and its file differ, so a
recipe on a page is always the code the tests run.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!-- example: (?P<path>\S+) -->\n```(?P<lang>\w*)\n(?P<body>.*?)^```$",
                    re.M | re.S)


def blocks(text: str) -> dict[str, str]:
    """path -> the text of the fenced block under its marker."""
    return {m["path"]: m["body"] for m in MARKER.finditer(text)}


def expand(text: str) -> str:
    """A page with every marked block replaced by its file's current text."""

    def fill(m: re.Match[str]) -> str:
        body = (ROOT / m["path"]).read_text()
        return f"<!-- example: {m['path']} -->\n```{m['lang']}\n{body}```"

    return MARKER.sub(fill, text)


def shown() -> dict[str, list[tuple[Path, str]]]:
    """example path -> (page, the text of its block) for every marked block of every page."""
    out: dict[str, list[tuple[Path, str]]] = {}
    for page in PAGES:
        for path, body in blocks(page.read_text()).items():
            out.setdefault(path, []).append((page, body))
    return out


if __name__ == "__main__":
    for page in PAGES:
        old = page.read_text()
        new = expand(old)
        if new != old:
            page.write_text(new)
            print(f"{page.relative_to(ROOT)}: examples refreshed", file=sys.stderr)
