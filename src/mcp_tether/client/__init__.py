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
the tree is gone. Names load on first use: `spawn` never imports the MCP SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["stdio_client", "spawn", "ServerProcess", "guard_command"]

_LAZY = {
    "stdio_client": "mcp_tether.client.stdio",
    "spawn": "mcp_tether.client.process",
    "ServerProcess": "mcp_tether.client.process",
    "guard_command": "mcp_tether.client.launch",
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from mcp_tether.client.launch import guard_command
    from mcp_tether.client.process import ServerProcess, spawn
    from mcp_tether.client.stdio import stdio_client


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_tether.client' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
