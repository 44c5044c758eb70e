"""Clients for hosts: start a stdio server so that its whole tree dies with the host.

Two ways in, one mechanism (the guard, `python -m mcp_tether run`):

- `stdio_client(server, errlog=sys.stderr)`: drop-in for the MCP Python SDK's
  `mcp.client.stdio.stdio_client` (mcp 1.x and 2.x): same parameters, same yielded
  `(read_stream, write_stream)`; change one import.
- `spawn(argv)` -> `ServerProcess`: a plain synchronous handle (`.stdin`, `.stdout`,
  `.pid`, `close()`) for hosts that do not use the SDK client.

Both put the guard between the host and the server, so the server's tree (wrappers,
the real server, helpers that left its group) ends when the host closes it, crashes, or
is SIGKILLed. Leaving the block / `close()` runs the spec's ladder on the whole tree
(close stdin, grace, SIGTERM, term grace, SIGKILL) and returns once the last process of
the tree is gone. `spawn` needs no MCP SDK: a host without one (or without anyio) can
use it, so `stdio_client`, which needs both, is imported when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_tether import _lazy
from mcp_tether.client.launch import guard_command
from mcp_tether.client.process import ServerProcess, spawn

if TYPE_CHECKING:
    from mcp_tether.client.stdio import stdio_client

__all__ = ["stdio_client", "spawn", "ServerProcess", "guard_command"]

# The SDK's client needs `mcp` and `anyio` (see above): loaded when first asked for.
__getattr__, __dir__ = _lazy.attach(__name__, {"stdio_client": ".stdio"})
