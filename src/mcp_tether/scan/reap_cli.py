"""`mcp-tether reap`: the adapter in `scan.cli`, without `ps`'s argparse-free fast path.

Guarantees:
- `reap` is always read by argparse: `scan.cli.fast_command` reads `ps` words only, and
  a bare `reap` must never be taken for a `ps` (it printed the table and exited 0).
"""

from __future__ import annotations

from mcp_tether.scan.cli import command, configure

__all__ = ["configure", "command"]
