"""sigterm: SIGTERM straight to the server while its client is still connected.

Level spec: the client's ladder goes on with "sending SIGTERM if the server does not
exit within a reasonable time" (MCP lifecycle, Shutdown, stdio): a server must end on it.
Pass: it exits within the window; else the probe, as a host would, SIGKILLs it.
"""

from __future__ import annotations

import signal
import time

from mcp_tether.probe.scenarios.base import KeeperPort, Scenario, Trigger
from mcp_tether.proc import ProcessId


class Sigterm(Scenario):
    name = "sigterm"
    description = "SIGTERM straight to the server, client alive; pass: exits promptly"
    cites = "\"sending SIGTERM if the server does not exit within a reasonable time\""
    trigger_what = "sigterm"
    signum = signal.SIGTERM

    def keeper_trigger(self, k: KeeperPort) -> Trigger | None:
        t = time.monotonic()
        if k.signal_server(self.signum):
            return Trigger(t, self.trigger_what)
        if k.tree_still_serving():
            # A launcher gone, its tree still serving (issue 22): the host's signal to
            # its child finds no one, as it would under a real host; judge the tree.
            return Trigger(t, self.trigger_what, missed=True)
        return None

    def after_window(self, k: KeeperPort, live: list[ProcessId]) -> list[ProcessId]:
        return k.escalate(live)


SCENARIO = Sigterm()
