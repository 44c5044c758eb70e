"""The machine view: leaked stdio servers found by evidence, identified, and ended safely.

Rooms: `model` (result types and the evidence vocabulary), `evidence` (is the client
side of a process's protocol channel gone?), `rules` (the leak verdict), `identify`
(package, version, SDK), `match` (hosts and config entries), `find` (the scan),
`abandoned` (a hint: a host that reads a server nowhere), `superseded` (an old copy a
live host replaced), `habits` (one copy per client, or shared), `samples` (what earlier
looks saw, kept between runs), `reap` (which to end and ending them, identity pinned),
`watch` (the `reap --watch` loop and service files), `render` and `cli` (thin). Only
`reap` signals, and only through the process core.
"""

from __future__ import annotations

from mcp_tether.scan.find import scan
from mcp_tether.scan.match import classify_host, looks_like_mcp
from mcp_tether.scan.model import (
    HOST_GONE,
    PARENT_GONE,
    READER_HELD,
    STDIN_NO_WRITER,
    STDOUT_NO_READER,
    WRITER_HELD,
    Channel,
    Member,
    ScanResult,
    Server,
    What,
)
from mcp_tether.scan.reap import Plan, ReapOutcome, plan, reap_servers

__all__ = [
    "scan", "classify_host", "looks_like_mcp", "plan", "reap_servers", "Plan",
    "ReapOutcome", "ScanResult", "Server", "Member", "Channel", "What", "PARENT_GONE",
    "STDIN_NO_WRITER", "STDOUT_NO_READER", "WRITER_HELD", "READER_HELD", "HOST_GONE",
]
