"""Fixture `anyio_group`: a lifespan whose anyio task group runs a forever task.

The group is never cancelled, so when the session ends on stdin EOF the lifespan's exit
waits for that task forever: `run()` never returns and the process never exits.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # run as a script

if TYPE_CHECKING:  # mypy checks the package path; scripts never need mcp_tether
    from mcp_tether.lab.python._common import log, make_server, serve
else:
    from _common import log, make_server, serve


async def _forever() -> None:
    while True:
        await anyio.sleep(0.1)


@asynccontextmanager
async def _lifespan(_server: Any) -> AsyncIterator[dict[str, Any]]:
    async with anyio.create_task_group() as tg:
        tg.start_soon(_forever)
        yield {}
        log("lifespan_exit")  # the session is over; leaving the group waits on _forever
    # Unreachable: nobody cancels the group.


mcp = make_server("anyio_group", lifespan=_lifespan)

if __name__ == "__main__":
    log("ready")
    serve(mcp)
    log("run_returned")  # never logged
