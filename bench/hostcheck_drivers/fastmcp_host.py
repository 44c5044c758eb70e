"""FastMCP's `Client` over `StdioTransport`: enter, list tools, leave.
Usage: fastmcp_host.py CMD ARGS..."""

import asyncio
import sys

from fastmcp import Client
from fastmcp.client.transports import StdioTransport


async def main() -> None:
    async with Client(StdioTransport(command=sys.argv[1], args=sys.argv[2:])) as client:
        print("tools:", [t.name for t in await client.list_tools()])


asyncio.run(main())
