"""smolagents' `MCPClient` (on mcpadapt): enter, list tools, leave.
Usage: smolagents_mcp_host.py CMD ARGS..."""

import sys

from mcp import StdioServerParameters
from smolagents import MCPClient

params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
with MCPClient(params) as tools:
    print("tools:", [t.name for t in tools])
