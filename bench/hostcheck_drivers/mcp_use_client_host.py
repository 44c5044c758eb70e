"""mcp-use's `MCPClient`: a session, its tools, `close_all_sessions()`.
Usage: mcp_use_client_host.py CMD ARGS..."""

import asyncio
import sys

from mcp_use import MCPClient


async def main() -> None:
    client = MCPClient.from_dict(
        {"mcpServers": {"rec": {"command": sys.argv[1], "args": sys.argv[2:]}}})
    try:
        session = await client.create_session("rec")
        print("tools:", [t.name for t in await session.list_tools()])
    finally:
        await client.close_all_sessions()


asyncio.run(main())
