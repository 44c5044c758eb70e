"""What `ps` says, at the end of a reconnect, about the copies of the recorder.

Guarantees:
- One scan (`scan.find.scan`, matched against the host's own config file) after the
  reconnect's wait: for each pid asked about, its state (`live`, `abandoned`, ...), its
  evidence and the listening answer's reason; `not-found` when no row holds the pid.
- Reads only: the scan sends nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_tether.scan.find import scan

__all__ = ["states"]


def states(pids: list[int], config: Path | None) -> list[dict[str, Any]]:
    """The `ps` row of each of `pids` (a server row's root or one of its members)."""
    result = scan(config=str(config) if config is not None else None)
    out: list[dict[str, Any]] = []
    for pid in pids:
        row = next((s for s in result.servers
                    if s.pid == pid or any(m.ident.pid == pid for m in s.members)), None)
        if row is None:
            out.append({"pid": pid, "state": "not-found", "evidence": [], "why": ""})
            continue
        out.append({"pid": pid, "state": row.state, "evidence": list(row.evidence),
                    "why": str(row.listening.get("reason", "")),
                    "confidence": row.listening.get("confidence")})
    return out
