"""The OpenAI Agents SDK's `MCPServerStdio` (no model is called): enter, list tools, leave.
Usage: openai_agents_host.py CMD ARGS..."""

import asyncio
import sys

from agents.mcp import MCPServerStdio


async def main() -> None:
    params = {"command": sys.argv[1], "args": sys.argv[2:]}
    async with MCPServerStdio(params=params, name="recorder") as server:
        print("tools:", [t.name for t in await server.list_tools()])


asyncio.run(main())
