"""langchain-mcp-adapters' `MultiServerMCPClient.get_tools()` (a session per call, closed
when it returns). Usage: langchain_mcp_host.py CMD ARGS..."""

import asyncio
import sys

from langchain_mcp_adapters.client import MultiServerMCPClient


async def main() -> None:
    client = MultiServerMCPClient(
        {"rec": {"command": sys.argv[1], "args": sys.argv[2:], "transport": "stdio"}})
    print("tools:", [t.name for t in await client.get_tools()])


asyncio.run(main())
