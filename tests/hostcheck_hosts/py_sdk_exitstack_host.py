"""A host on the MCP Python SDK that reconnects the way an `AsyncExitStack` invites:
it enters a second `stdio_client` + `ClientSession` on the same stack and never closes
the first, which keeps its process, its pipes and its reader task: copy A is held and
still read, but the host sends it nothing more unless told to.

Commands, one per line on stdin: `call I` (a tools/call to copy I: 0 is A, 1 is B;
answered `ok I`). Prints `ready PID_A PID_B`. Ends at stdin EOF without closing the
stack (the servers end with their pipes).
Usage: py_sdk_exitstack_host.py CMD ARGS...
"""

import asyncio
import os
import sys
from contextlib import AsyncExitStack
from typing import Any

import mcp.client.stdio as sdk_stdio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters

started: list[Any] = []  # the SDK's process objects, in start order
_create = sdk_stdio._create_platform_compatible_process


async def _recording(*args: Any, **kwargs: Any) -> Any:
    process = await _create(*args, **kwargs)
    started.append(process)
    return process


sdk_stdio._create_platform_compatible_process = _recording


async def main() -> None:
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    stack = AsyncExitStack()
    sessions = []
    for _ in range(2):  # the reconnect: a new client on the same stack, the old one kept
        read, write = await stack.enter_async_context(sdk_stdio.stdio_client(params))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        sessions.append(session)
    print("ready", started[0].pid, started[1].pid, flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        words = line.split()
        if words[:1] == [b"call"]:
            i = int(words[1])
            await sessions[i].call_tool("sleep", {"seconds": 0})
            print("ok", i, flush=True)
    os._exit(0)  # no cleanup: the servers end when their pipes close with us


if __name__ == "__main__":
    asyncio.run(main())
