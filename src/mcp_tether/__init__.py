"""mcp-tether: make MCP stdio servers die with their client, and prove it.

Importing this package is cheap on purpose (stdlib only): the library helper sits on
every Python server's launch path. Heavier parts (probe, lab, scan) load on first use.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
