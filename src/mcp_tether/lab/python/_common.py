"""Shared bits of the Python lab fixtures: the SDK import, the event log, the probe tools.

Guarantees every fixture relies on:
- Nothing here writes to stdout: stdout carries protocol bytes only. Events go to fd 2
  with one `os.write` per line, so lines from threads and forked children never tear.
- `log()` stamps `mono=` with `time.monotonic()` (CLOCK_MONOTONIC on Linux), the clock
  the probe measures exits with, so the two can be compared directly.
- `make_server()` works on mcp 2.x (`MCPServer`) and falls back to mcp 1.x (`FastMCP`).

Fixtures are run as scripts (`python <file>`), so they import this module through their
own folder on `sys.path`, never as `mcp_tether.lab.python._common`: a fixture must not
depend on mcp_tether being importable.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import time
from typing import Any

import anyio

try:
    from mcp.server.mcpserver import MCPServer

    SDK_MAJOR = 2
except ImportError:  # mcp 1.x: the same server under its old name
    # Type-checked against mcp 2.x, where this module has no FastMCP.
    from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[no-redef,attr-defined,unused-ignore]

    SDK_MAJOR = 1

__all__ = [
    "MCPServer", "SDK_MAJOR", "fixture_name", "log", "make_server", "notification", "serve", "tick",
]

# The script's own stem: `thread.py` logs `fixture=thread`. Overridable by make_server().
_name = os.path.splitext(os.path.basename(sys.argv[0] or "fixture"))[0]


def fixture_name() -> str:
    return _name


def log(event: str, **kv: object) -> None:
    """Write `fixture=<name> pid=<pid> event=<event> mono=<s> k=v ...` as one stderr line.

    `mono` is read first, so it is the instant the event happened, not when it was written.
    """
    mono = time.monotonic()
    extra = "".join(f" {k}={v}" for k, v in kv.items())
    line = f"fixture={_name} pid={os.getpid()} event={event} mono={mono:.6f}{extra}\n"
    # stderr gone: a fixture must keep behaving as it would unobserved
    with contextlib.suppress(OSError):
        os.write(2, line.encode(errors="replace"))


def tick(interval: float = 0.1) -> None:
    """Loop forever, waking every `interval` seconds: the body of a flusher-like thread."""
    while True:
        time.sleep(interval)


def make_server(name: str | None = None, **kwargs: Any) -> MCPServer:
    """A server with the two probe tools: `echo(text)` and `sleep(seconds)`.

    `sleep` is async and logs its start and end, so a probe can hold a call in flight
    while it ends the client and see whether the call ever finished.
    """
    global _name
    if name is not None:
        _name = name
    server = MCPServer(_name, **kwargs)

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Sleep for `seconds`, then return; for probing an in-flight call."""
        log("sleep_start", seconds=seconds)
        await anyio.sleep(seconds)
        log("sleep_end", seconds=seconds)
        return f"slept {seconds}"

    return server


def notification(method: str, params: dict[str, Any] | None = None) -> Any:
    """A SessionMessage carrying one JSON-RPC notification, for a server's write stream.

    mcp 2.x takes the bare `JSONRPCNotification` (the message type is a union); 1.x wants
    it wrapped in the `JSONRPCMessage` root model.
    """
    from mcp.shared.message import SessionMessage

    if SDK_MAJOR >= 2:
        from mcp_types import JSONRPCNotification

        return SessionMessage(JSONRPCNotification(jsonrpc="2.0", method=method, params=params))
    types1: Any = importlib.import_module("mcp.types")  # 1.x only; untyped on purpose
    inner = types1.JSONRPCNotification(jsonrpc="2.0", method=method, params=params)
    return SessionMessage(types1.JSONRPCMessage(inner))


def serve(mcp: MCPServer) -> None:
    """`mcp.run()`, or, in the lab's "tethered" block, the library helper's one call.

    The lab sets MCP_TETHER_LAB_TETHERED=1 to run the very same fixture with
    `mcp_tether.run(mcp)` instead of `mcp.run()`: the one-line change a server author
    makes. Only then is mcp_tether imported, so the bare fixtures never depend on it.
    """
    if os.environ.get("MCP_TETHER_LAB_TETHERED") == "1":
        import mcp_tether

        mcp_tether.run(mcp)
    else:
        mcp.run()
