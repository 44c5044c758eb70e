"""A Python MCP server whose cleanup is bound to its own event loop.

    python tether_pool.py SDK LOGDIR [hang-hook] [fork-hook]     SDK: mcp2 | mcp1 | fastmcp

- The lifespan starts a "pool": a task on the server's loop (asyncio.create_task), and
  in its `finally` awaits a flush (a real await: a cancelled unwind would cut it) before
  noting `lifespan-finally`.
- An async `on_shutdown` hook stops the pool and awaits its task: that only works on the
  loop the task belongs to (`pool-task-done`, `hook-pool-closed`).
- A sync hook notes `sync-hook`; a non-daemon keepalive thread holds the process.
- Tools: `echo`, and `nap(seconds)` that notes `nap-start` / `nap-end` (for drain).
- DEADLINE / DRAIN in the environment go to `mcp_tether.run`.
Every note is one line `<word>` in LOGDIR/<pid>.log (one file per server process).
"""

import asyncio
import os
import sys
import threading
from contextlib import asynccontextmanager

import mcp_tether

sdk, logdir, *opts = sys.argv[1:]
if sdk == "mcp2":
    from mcp.server.mcpserver import MCPServer as Server
elif sdk == "mcp1":
    from mcp.server.fastmcp import FastMCP as Server
else:
    from fastmcp import FastMCP as Server


def note(word: str) -> None:
    with open(os.path.join(logdir, f"{os.getpid()}.log"), "a") as fh:
        fh.write(word + "\n")


class Pool:
    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        await self.stop.wait()
        await asyncio.sleep(0.01)  # closing connections
        note("pool-task-done")


pool: Pool | None = None


@asynccontextmanager
async def lifespan(_server):  # type: ignore[no-untyped-def]
    global pool
    pool = Pool()
    try:
        yield {}
    finally:
        await asyncio.sleep(0.05)  # flush a write-ahead log: an await that must complete
        note("lifespan-finally")


mcp = Server("tether-pool", lifespan=lifespan)


@mcp.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@mcp.tool()
async def nap(seconds: float) -> str:
    """Sleep, then answer."""
    note("nap-start")
    await asyncio.sleep(seconds)
    note("nap-end")
    return "rested"


@mcp_tether.on_shutdown
def sync_hook() -> None:
    note("sync-hook")


if "fork-hook" in opts:

    @mcp_tether.on_shutdown
    def forker() -> None:
        note("forker")
        os.fork()  # both processes return from here: only the parent may go on


if "hang-hook" in opts:

    @mcp_tether.on_shutdown
    def hung() -> None:
        note("hung")
        threading.Event().wait()


@mcp_tether.on_shutdown
async def close_pool() -> None:
    assert pool is not None
    pool.stop.set()
    await pool.task  # bound to the server's loop: fails on any other
    note("hook-pool-closed")


threading.Thread(target=threading.Event().wait, name="keepalive", daemon=False).start()
note("ready")
drain = os.environ.get("DRAIN")
mcp_tether.run(
    mcp,
    deadline=float(os.environ.get("DEADLINE", "1.0")),
    drain=None if drain is None else float(drain),
)
