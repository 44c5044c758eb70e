"""llama-index-tools-mcp's `BasicMCPClient` through `McpToolSpec` (a session per call).
Usage: llama_index_mcp_host.py CMD ARGS..."""

import asyncio
import sys

from llama_index.tools.mcp import BasicMCPClient, McpToolSpec


async def main() -> None:
    client = BasicMCPClient(sys.argv[1], args=sys.argv[2:])
    tools = await McpToolSpec(client=client).to_tool_list_async()
    print("tools:", [t.metadata.name for t in tools])


asyncio.run(main())
