"""Fixture `stdout_writer`: a server that writes on its own, every 200 ms.

A background task puts a `notifications/message` (level info) into the server's write
stream, so real bytes reach the wire even when the client asks nothing. In mcp 2.x fd 1
points at stderr while serving (the SDK writes through a private duplicate), so printing
would miss the wire; the SDK's own `stdio_server()` streams are the honest way.

When the session ends on stdin EOF the pump is cancelled and the process exits 0. What
it shows is the other exit door: once the client is gone the next write meets a pipe
with no reader (EPIPE; Python ignores SIGPIPE) before, or instead of, the EOF.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.stdio import stdio_server

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # run as a script

if TYPE_CHECKING:  # mypy checks the package path; scripts never need mcp_tether
    from mcp_tether.lab.python._common import log, make_server, notification
else:
    from _common import log, make_server, notification

PUMP_INTERVAL = 0.2  # seconds between notifications

mcp = make_server("stdout_writer")


def _lowlevel(server: Any) -> Any:
    # mcp 2.x names the wrapped low-level server `_lowlevel_server`; 1.x `_mcp_server`.
    return getattr(server, "_lowlevel_server", None) or server._mcp_server


async def _pump(write_stream: Any) -> None:
    seq = 0
    while True:
        await anyio.sleep(PUMP_INTERVAL)
        seq += 1
        params = {"level": "info", "logger": "stdout_writer", "data": {"seq": seq}}
        try:
            await write_stream.send(notification("notifications/message", params))
        except Exception as exc:  # not cancellation: that is the normal way out
            log("pump_error", seq=seq, error=type(exc).__name__)
            raise


async def _main() -> None:
    server = _lowlevel(mcp)
    async with stdio_server() as (read_stream, write_stream), anyio.create_task_group() as tg:
        tg.start_soon(_pump, write_stream)
        await server.run(read_stream, write_stream, server.create_initialization_options())
        log("run_returned")
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    log("ready")
    try:
        anyio.run(_main)
    except BaseException as exc:
        log("crashed", error=type(exc).__name__)
        raise
