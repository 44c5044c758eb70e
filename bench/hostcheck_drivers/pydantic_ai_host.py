"""pydantic-ai 2.x's `MCPToolset` (on FastMCP's `Client`): enter, list tools, leave.
Usage: pydantic_ai_host.py CMD ARGS..."""

import asyncio
import sys

from fastmcp.client.transports import StdioTransport
from pydantic_ai.mcp import MCPToolset


async def main() -> None:
    async with MCPToolset(StdioTransport(command=sys.argv[1], args=sys.argv[2:])) as toolset:
        print("tools:", [t.name for t in await toolset.list_tools()])


asyncio.run(main())
