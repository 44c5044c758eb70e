"""What `ps` says, at the end of a reconnect, about the copies of the recorder.

Guarantees:
- One scan (`scan.find.scan`, matched against the host's own config file) after the
  reconnect's wait: for each pid asked about, its state (`live`, `superseded`,
  `abandoned`, ...), its evidence, the listening answer's reason and the superseded
  answer with its reason; `not-found` when no row holds the pid.
- `superseded` is judged from read/write counters sampled across scans: the caller
  passes the `Samples` of its earlier looks (`look`), kept in memory only (the user's
  samples file is not touched).
- Reads only: the scan sends nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mcp_tether.scan.find import scan
from mcp_tether.scan.superseded import Samples

if TYPE_CHECKING:
    from mcp_tether.hostcheck.record import PsState

__all__ = ["states", "look"]


def look(config: Path | None, samples: Samples) -> None:
    """One scan for its samples only (a look before the one `states` reports)."""
    scan(config=str(config) if config is not None else None, samples=samples)


def states(pids: list[int], config: Path | None,
           samples: Samples | None = None) -> list[PsState]:
    """The `ps` row of each of `pids` (a server row's root or one of its members)."""
    result = scan(config=str(config) if config is not None else None,
                  samples=samples if samples is not None else Samples())
    out: list[PsState] = []
    for pid in pids:
        row = next((s for s in result.servers
                    if s.pid == pid or any(m.ident.pid == pid for m in s.members)), None)
        if row is None:
            out.append({"pid": pid, "state": "not-found", "evidence": [], "why": "",
                        "superseded": "n/a", "superseded_why": ""})
            continue
        out.append({"pid": pid, "state": row.state, "evidence": list(row.evidence),
                    "why": str(row.listening.get("reason", "")),
                    "confidence": row.listening.get("confidence"),
                    "superseded": str(row.superseded.get("answer", "n/a")),
                    "superseded_why": str(row.superseded.get("reason", ""))})
    return out
