"""A Python MCP server with a background flusher thread, made to die with its client.

Without the last line's `mcp_tether.run`, `mcp.run()` returns at stdin EOF but the
non-daemon flusher thread keeps the process alive forever once its client is gone.
"""

import sys
import threading
import time

import mcp_tether

try:
    from mcp.server.mcpserver import MCPServer  # mcp 2.x
except ImportError:
    from mcp.server.fastmcp import FastMCP as MCPServer  # mcp 1.x

mcp = MCPServer("notes")
notes: list[str] = []


@mcp.tool()
def add_note(text: str) -> str:
    """Remember a note."""
    notes.append(text)
    return f"{len(notes)} notes"


def flush_forever() -> None:  # a non-daemon thread, like a DB pool or a metrics flusher
    while True:
        time.sleep(0.1)


@mcp_tether.on_shutdown
def flush_notes() -> None:
    print(f"flushing {len(notes)} notes", file=sys.stderr)  # stdout is the protocol's


if __name__ == "__main__":
    threading.Thread(target=flush_forever, name="flusher").start()
    mcp_tether.run(mcp)  # instead of mcp.run()
