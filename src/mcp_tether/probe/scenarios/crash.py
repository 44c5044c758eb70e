"""crash: the keeper SIGKILLs the client; the kernel closes its end of the stdio.

Level spec: for the server this is the same EOF as a clean exit; nothing in the spec
lets a server outlive a client that crashed. Pass: the tree is gone within the window.

Hosts modelled: any host killed outright (OOM killer, `kill -9`, a crashed Electron
process): no SDK code runs, so neither TypeScript SDK 1.32.2 nor MCP Python SDK 2.3.0
sends anything; the kernel closes the host's end of the stdio. Same in both styles.
"""

from __future__ import annotations

import signal
import time

from mcp_tether.probe.scenarios.base import KeeperPort, Scenario, Trigger


class Crash(Scenario):
    name = "crash"
    description = "the probe SIGKILLs the client; pass: tree gone within the window"
    cites = "stdin at EOF when the client crashes: the server exits"

    def keeper_trigger(self, k: KeeperPort) -> Trigger:
        t = time.monotonic()
        k.kill_client(signal.SIGKILL)
        return Trigger(t, self.trigger_what)


SCENARIO = Crash()
