"""Each remedy said once: the distinct steps of the failed rows' remedies, numbered, and
for each row the numbers it points to. Used by the lab's summary and by the Markdown and
HTML reports of `probe` and `lab`.

    fixes = number_fixes(rows)   # result records annotated by `diagnose.annotate`
    fixes.steps                  # ["In the Node server install ...", ...]: [1], [2], ...
    fixes.of(row)                # [1, 3]: every step applies (do them all)
    fixes.guard_of(row)          # "mcp-tether run -- node x.mjs", or None: the [G] alternative
    fixes.pointer(row)           # "[3] and [1], or [G]"

Guarantees:
- A step shared by several rows (the Node fix for every Node leak, the Python one for
  every Python leak) is one entry; rows differing only in their command share every
  entry, and their one difference, the command to put behind the guard, stays theirs.
- A row annotated without `remedy_steps` (a `--json` written before they existed) points
  to its whole remedy as one step.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcp_tether.probe.diagnose import GUARD_STEP

if TYPE_CHECKING:
    from mcp_tether.probe.record import ScenarioRecord

__all__ = ["Fixes", "GUARD_LEGEND", "number_fixes"]

# The guard step with the command left to each row: what [G] stands for.
GUARD_LEGEND = "I" + GUARD_STEP.format(command="mcp-tether run -- <its command>")[1:]


def _steps(r: ScenarioRecord) -> list[str]:
    if "remedy_steps" in r:
        return [str(s) for s in r.get("remedy_steps") or []]
    return [str(r["remedy"])] if r.get("remedy") else []


@dataclass
class Fixes:
    """The numbered steps; see the module. `guarded`: some row has the [G] alternative."""

    steps: list[str] = field(default_factory=list)
    guarded: bool = False
    _number: dict[str, int] = field(default_factory=dict)

    def add(self, r: ScenarioRecord) -> None:
        for s in _steps(r):
            if s not in self._number:
                self.steps.append(s)
                self._number[s] = len(self.steps)
        self.guarded = self.guarded or self.guard_of(r) is not None

    def of(self, r: ScenarioRecord) -> list[int]:
        return [self._number[s] for s in _steps(r) if s in self._number]

    @staticmethod
    def guard_of(r: ScenarioRecord) -> str | None:
        if "remedy_steps" not in r:
            return None  # an old record: its remedy (one step) says the guard itself
        return str(r["remedy_guard"]) if r.get("remedy_guard") else None

    def pointer(self, r: ScenarioRecord) -> str:
        """`[2] and [5], or [G]`: what the row's line says instead of its remedy."""
        own = " and ".join(f"[{n}]" for n in self.of(r))
        if self.guard_of(r) is None:
            return own
        return f"{own}, or [G]" if own else "[G]"


def number_fixes(rows: Iterable[ScenarioRecord]) -> Fixes:
    """Number every distinct step of `rows`' remedies, in the order rows first show them."""
    fixes = Fixes()
    for r in rows:
        fixes.add(r)
    return fixes
