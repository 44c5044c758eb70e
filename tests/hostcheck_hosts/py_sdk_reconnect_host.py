"""A host on the MCP Python SDK's `stdio_client` that reconnects: copy A, then copy B of
the same command, each in a `stdio_client` block with a `ClientSession`.

MODE listen:  both sessions stay open and read.
MODE abandon: A is forgotten, not closed: its block is never left (its process and
              pipes stay held) and its output is no longer read: the asyncio transport
              under it is paused, as asyncio itself does when nobody drains a stream.
Prints "ready PID_A PID_B" and runs until stdin EOF.
Usage: py_sdk_reconnect_host.py MODE CMD ARGS...
"""

import asyncio
import os
import sys
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


async def connection(params: StdioServerParameters, ready: asyncio.Event) -> None:
    async with sdk_stdio.stdio_client(params) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        ready.set()
        await asyncio.Event().wait()  # held open for good, closed only with the host


async def main() -> None:
    params = StdioServerParameters(command=sys.argv[2], args=sys.argv[3:])
    tasks = []
    for _ in range(2):
        ready = asyncio.Event()
        tasks.append(asyncio.create_task(connection(params, ready)))
        await ready.wait()
    a, b = started
    if sys.argv[1] == "abandon":
        # anyio's Process -> asyncio's Process -> its transport -> the stdout pipe's
        a._process._transport.get_pipe_transport(1).pause_reading()
    print("ready", a.pid, b.pid, flush=True)
    loop = asyncio.get_running_loop()
    eof = asyncio.Event()

    def on_stdin() -> None:
        if not sys.stdin.buffer.raw.read(4096):
            loop.remove_reader(0)
            eof.set()

    loop.add_reader(0, on_stdin)
    await eof.wait()
    sys.stdout.flush()

    os._exit(0)  # no cleanup: the servers end when their pipes close with us


if __name__ == "__main__":
    asyncio.run(main())
