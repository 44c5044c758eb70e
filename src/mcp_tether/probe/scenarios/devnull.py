"""devnull: the server starts with stdin already at EOF (/dev/null), as under `cmd </dev/null`.

Level spec: EOF is EOF, whenever it comes. The server is allowed its start-up time
before the window counts: the start-up the handshaking scenarios of the same server
measured (sent by the runner), else `--ready-timeout` when nothing measured it.
"""

from __future__ import annotations

from mcp_tether.probe.scenarios.base import Scenario

TYPE_CHECKING = False
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
        assert k.facts.trigger is not None
        s = k.spec.startup
        allowance = k.spec.ready_timeout if s is None else s * STARTUP_FACTOR + STARTUP_SLACK
        return k.facts.trigger + min(allowance, k.spec.ready_timeout) + k.spec.effective_window


SCENARIO = Devnull()
