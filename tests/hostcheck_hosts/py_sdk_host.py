"""A host on the MCP Python SDK's own `mcp.client.stdio.stdio_client`.

Connects, lists tools, then quits on stdin EOF, SIGINT, SIGTERM or SIGHUP by leaving
`stdio_client`'s block (the SDK's ladder: close stdin, 2 s, killpg SIGTERM, 2 s, killpg
SIGKILL; the server runs in a session and group of its own). Usage: py_sdk_host.py CMD ARGS...
"""

import asyncio
import signal
import sys
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def main(stdio_client: Any = stdio_client) -> None:
    """The host; tether_host.py runs it with mcp_tether's `stdio_client`."""
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)

    def on_stdin() -> None:
        if not sys.stdin.buffer.raw.read(4096):
            loop.remove_reader(0)
            stop.set()

    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        loop.add_reader(0, on_stdin)
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main())
