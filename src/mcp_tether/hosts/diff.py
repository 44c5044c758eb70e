"""Unified diffs of a config rewrite, and applying span edits to text.

Guarantees: `apply` applies non-overlapping `(start, end, new)` edits in one pass;
`diff` builds a unified diff from the edits themselves (not difflib: its matcher goes
quadratic on a multi-megabyte `~/.claude.json` full of similar lines, and we already
know exactly which lines change); `diff_texts` is the difflib fallback for formats
edited by a library (TOML), whose files are small.
"""

from __future__ import annotations

import bisect
import difflib
from pathlib import Path
from typing import Any

__all__ = ["Edit", "apply", "diff", "diff_texts"]

Edit = tuple[int, int, str]


def apply(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits in one pass (a big ~/.claude.json gets many)."""
    out, pos = [], 0
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1])):
        out += [text[pos:start], new]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def diff_texts(path: Path, old: str, new: str, action: str) -> str:
    if old == new:
        return ""
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 f"{path}", f"{path} ({action}ped)")
    out = [line if line.endswith("\n") else line + "\n" for line in lines]
    out[:2] = [f"--- {path}\n", f"+++ {path} ({action}ped)\n"]
    return "".join(out)


def diff(
    path: Path, old: str, edits: list[tuple[int, int, str]], action: str, context: int = 3
) -> str:
    """A unified diff of `edits` on `old`, built from the edits themselves.

    Not difflib: its matcher goes quadratic on a multi-megabyte `~/.claude.json` full
    of similar lines, and we already know exactly which lines change.
    """
    lines = old.splitlines(keepends=True)
    starts: list[int] = []
    pos = 0
    for line in lines:
        starts.append(pos)
        pos += len(line)

    def line_of(offset: int) -> int:
        return max(0, bisect.bisect_right(starts, offset) - 1)

    blocks: list[list[Any]] = []  # [first line, last line, edits on them]
    for edit in sorted(edits, key=lambda e: (e[0], e[1])):
        lo, hi = line_of(edit[0]), line_of(max(edit[0], edit[1] - 1))
        if blocks and lo <= blocks[-1][1]:
            blocks[-1][1] = max(blocks[-1][1], hi)
            blocks[-1][2].append(edit)
        else:
            blocks.append([lo, hi, [edit]])
    changes: list[tuple[int, int, list[str]]] = []  # old lines [lo, hi) -> new lines
    for lo, hi, block_edits in blocks:
        base = starts[lo]
        segment = old[base : starts[hi] + len(lines[hi])]
        shifted = [(s - base, e - base, n) for s, e, n in block_edits]
        new_lines = apply(segment, shifted).splitlines(keepends=True)
        hi += 1
        while lo < hi and new_lines and lines[lo] == new_lines[0]:  # unchanged head
            lo, new_lines = lo + 1, new_lines[1:]
        while lo < hi and new_lines and lines[hi - 1] == new_lines[-1]:  # unchanged tail
            hi, new_lines = hi - 1, new_lines[:-1]
        changes.append((lo, hi, new_lines))
    groups: list[list[tuple[int, int, list[str]]]] = []
    for change in changes:
        if groups and change[0] - groups[-1][-1][1] <= 2 * context:
            groups[-1].append(change)
        else:
            groups.append([change])

    out = [f"--- {path}\n", f"+++ {path} ({action}ped)\n"]
    shift = 0  # new-file line number minus old-file line number so far
    for group in groups:
        h_lo = max(0, group[0][0] - context)
        h_hi = min(len(lines), group[-1][1] + context)
        body: list[str] = []
        cur = h_lo
        new_count = 0
        for lo, hi, new_lines in group:
            body += [" " + line for line in lines[cur:lo]]
            body += ["-" + line for line in lines[lo:hi]]
            body += ["+" + line for line in new_lines]
            new_count += (lo - cur) + len(new_lines)
            cur = hi
        body += [" " + line for line in lines[cur:h_hi]]
        new_count += h_hi - cur
        out.append(f"@@ -{h_lo + 1},{h_hi - h_lo} +{h_lo + shift + 1},{new_count} @@\n")
        out += [line if line.endswith("\n") else line + "\n" for line in body]
        shift += new_count - (h_hi - h_lo)
    return "".join(out)


