"""A host on `mcp_tether.client.stdio_client` (the guarded drop-in for the SDK's).

Connects (the SDK's ClientSession), lists tools, then quits on stdin EOF, SIGINT,
SIGTERM or SIGHUP by leaving `stdio_client`'s block (the ladder over the server's whole
tree; a guard ends the tree even if this host is SIGKILLed). Usage: tether_host.py CMD ARGS...
"""

import asyncio

from py_sdk_host import main  # the same host, beside this file

from mcp_tether.client import stdio_client

asyncio.run(main(stdio_client))
