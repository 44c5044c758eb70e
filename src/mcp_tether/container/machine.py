"""Containers in `mcp-tether ps` and `reap`: listing, planning and ending, rendered.

A thin layer over `leaked` for the scan CLI, so that its diff stays a few lines:
- `listing()` -> (off line or None, every running `-i` container judged);
- `plan(items, min_age, allow)` -> (chosen, [(container, why not)]): only "leaked"
  ones are chosen (never "unknown" or "live"), none younger than `min_age`, none whose
  image, name or command matches an `allow` glob; the same rules as for processes;
- `end(chosen, grace)` -> one outcome dict per container (`end_container`);
- text and JSON renderings of each; the text says "container support is off: ..." only
  when a container engine is configured here (`api.configured`) or was asked for
  (`--containers`): a machine that never had one is not told about it on every `ps`.
"""

from __future__ import annotations

import fnmatch
import sys
from typing import IO, Any

from mcp_tether.container import api
from mcp_tether.container.engine import engine_for
from mcp_tether.container.leaked import LEAKED, LeakedContainer, end_container, stdio_containers
from mcp_tether.escape import terminal

__all__ = ["listing", "plan", "end", "say_off", "print_listing", "print_plan", "as_json"]


def listing(engine: str = "docker") -> tuple[str | None, list[LeakedContainer]]:
    off = engine_for(engine).off
    if off is not None:
        return off, []
    return None, stdio_containers(engine)


def plan(items: list[LeakedContainer], min_age: float = 0.0, allow: list[str] | None = None
         ) -> tuple[list[LeakedContainer], list[tuple[LeakedContainer, str]]]:
    chosen: list[LeakedContainer] = []
    skipped: list[tuple[LeakedContainer, str]] = []
    for c in items:
        why = None
        if c.state != LEAKED:
            why = f"{c.state}: {c.evidence}"
        elif c.age is not None and c.age < min_age:
            why = f"younger than --min-age ({c.age:.0f}s < {min_age:g}s)"
        else:
            for pat in allow or []:
                if any(fnmatch.fnmatch(v, pat) for v in (c.image, c.name, c.cmdline)):
                    why = f"matches --allow {pat}"
                    break
        if why is None:
            chosen.append(c)
        else:
            skipped.append((c, why))
    return chosen, skipped


def end(chosen: list[LeakedContainer], grace: float) -> list[dict[str, Any]]:
    out = []
    for c in chosen:
        outcome = end_container(c, grace=grace)
        out.append({**c.as_dict(), "outcome": outcome})
    return out


def _size(n: int | None) -> str:
    if n is None:
        return "? MB"
    return f"{n / 1024 / 1024:.1f} MB"


def _age(s: float | None) -> str:
    if s is None:
        return "?"
    return f"{s:.0f}s" if s < 120 else f"{s / 60:.0f}m" if s < 7200 else f"{s / 3600:.1f}h"


def line(c: LeakedContainer) -> str:
    return (f"container {c.short_id} {c.image} ({c.name}) age {_age(c.age)}, "
            f"{_size(c.memory)}: {c.state}, {c.evidence}: {c.cmdline[:60]}")


def say_off(off: str | None, asked: bool = False) -> None:
    """The one line on stderr saying why containers are not listed, when it matters."""
    if off is not None and (asked or api.configured()):
        print(f"mcp-tether: {terminal(off)}", file=sys.stderr)


def print_listing(off: str | None, items: list[LeakedContainer], to: IO[str] | None = None,
                  *, asked: bool = False) -> None:
    out = to or sys.stdout
    if off is not None:
        say_off(off, asked)
        return
    if items:  # a section of its own, after the process table and its totals line
        print("containers:", file=out)
    for c in items:
        print(terminal(line(c)), file=out)


def print_plan(chosen: list[LeakedContainer], skipped: list[tuple[LeakedContainer, str]],
               to: IO[str] | None = None) -> None:
    out = to or sys.stdout
    for c in chosen:
        print(terminal(f"would end {line(c)}"), file=out)
    for c, why in skipped:
        print(terminal(f"left alone: container {c.short_id} {c.image}: {why}"), file=out)


def as_json(items: list[LeakedContainer]) -> list[dict[str, Any]]:
    return [c.as_dict() for c in items]
