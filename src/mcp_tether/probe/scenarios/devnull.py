"""devnull: the server starts with stdin already at EOF (/dev/null), as under `cmd </dev/null`.

Level spec: EOF is EOF, whenever it comes. The server is allowed its start-up time
before the window counts: the start-up the handshaking scenarios of the same server
measured (sent by the runner), else `--ready-timeout` when nothing measured it. On a
loaded machine start-up times vary several-fold between two runs of one server, so
while a process of the tree is still runnable or in disk sleep (state R or D: still
starting, not waiting for input) the allowance keeps growing, up to `--ready-timeout`.
Waiting longer can only delay a verdict, never make a correct server fail.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from mcp_tether.probe.scenarios.base import Scenario
from mcp_tether.proc import read_info

if TYPE_CHECKING:
    from mcp_tether.probe.client import Client
    from mcp_tether.probe.keeper import Keeper

# Start-up measured elsewhere, under the same load: allow this much more.
STARTUP_FACTOR = 2.0
STARTUP_SLACK = 0.5  # seconds


class Devnull(Scenario):
    name = "devnull"
    description = "server started with stdin already at EOF; pass: exits within the window"
    cites = "stdin at EOF from the start: the server exits"
    stdin_at_eof = True

    def client_run(self, c: Client) -> None:
        c.emit("trigger", what="eof")
        c.pump(None)

    def window_end(self, k: Keeper) -> float | None:
        t = k.facts.trigger
        assert t is not None
        rt = k.spec.ready_timeout
        s = k.spec.startup
        allowance = rt if s is None else min(rt, s * STARTUP_FACTOR + STARTUP_SLACK)
        now = time.monotonic()
        if allowance < now - t < rt and _starting(k):
            k.startup_seen = max(k.startup_seen, now - t)  # still starting: not yet judged
        return t + max(allowance, k.startup_seen) + k.spec.effective_window


def _starting(k: Keeper) -> bool:
    """Is a process of the tree runnable or in disk sleep (not blocked on input)?"""
    for p in k.live_members():
        info = read_info(p.pid)
        if info is not None and info.start == p.start and info.state in ("R", "D"):
            return True
    return False


SCENARIO = Devnull()
