"""devnull: the server starts with stdin already at EOF (/dev/null), as under `cmd </dev/null`.

Level spec: EOF is EOF, whenever it comes. The server is allowed its start-up time
before the window counts: the start-up the handshaking scenarios of the same server
measured (sent by the runner), else `--ready-timeout` when nothing measured it. On a
loaded machine start-up times vary several-fold between two runs of one server, so
while a process of the tree is still runnable or in disk sleep (state R or D: still
starting, not waiting for input) the allowance keeps growing, up to `--ready-timeout`.
Waiting longer can only delay a verdict, never make a correct server fail.

Hosts modelled: no SDK host does this (both TypeScript SDK 1.32.2 and MCP Python SDK
2.3.0 give the server a pipe); launchers and supervisors started without a terminal
(systemd units, `cmd </dev/null &`, CI steps) do. Same in both styles.
"""

from __future__ import annotations

import time

from mcp_tether.probe.scenarios.base import ClientPort, KeeperPort, Scenario, WindowEnd
from mcp_tether.proc import read_info

# Start-up measured elsewhere, under the same load: allow this much more.
STARTUP_FACTOR = 2.0
STARTUP_SLACK = 0.5  # seconds


class Devnull(Scenario):
    name = "devnull"
    description = "server started with stdin already at EOF; pass: exits within the window"
    cites = "stdin at EOF from the start: the server exits"
    stdin_at_eof = True

    def client_run(self, c: ClientPort) -> None:
        c.emit("trigger", what="eof")
        c.pump(None)

    def window(self, k: KeeperPort, trigger: float) -> WindowEnd:
        return _Allowance(k, trigger)


class _Allowance:
    """The window's end after the server's start-up allowance: the start-up the runner
    sent (read each time: it may arrive while this keeper watches), or --ready-timeout;
    while the tree is still starting it grows, up to --ready-timeout."""

    def __init__(self, k: KeeperPort, trigger: float) -> None:
        self.k, self.trigger = k, trigger
        self.seen_starting = 0.0  # how long after the trigger it was seen still starting

    def __call__(self) -> float:
        spec, t = self.k.spec, self.trigger
        rt, s = spec.ready_timeout, spec.startup
        allowance = rt if s is None else min(rt, s * STARTUP_FACTOR + STARTUP_SLACK)
        now = time.monotonic()
        if allowance < now - t < rt and _starting(self.k):
            self.seen_starting = max(self.seen_starting, now - t)  # not yet judged
        return t + max(allowance, self.seen_starting) + spec.effective_window


def _starting(k: KeeperPort) -> bool:
    """Is a process of the tree runnable or in disk sleep (not blocked on input)?"""
    for p in k.live_members():
        info = read_info(p.pid)
        if info is not None and info.start == p.start and info.state in ("R", "D"):
            return True
    return False


SCENARIO = Devnull()
