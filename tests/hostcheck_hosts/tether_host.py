"""A host on `mcp_tether.client.stdio_client` (the guarded drop-in for the SDK's).

Connects (the SDK's ClientSession), lists tools, then quits on stdin EOF, SIGINT,
SIGTERM or SIGHUP by leaving `stdio_client`'s block (the ladder over the server's whole
tree; a guard ends the tree even if this host is SIGKILLed). Usage: tether_host.py CMD ARGS...
"""

import asyncio
import signal
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters

from mcp_tether.client import stdio_client


async def main() -> None:
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


asyncio.run(main())
