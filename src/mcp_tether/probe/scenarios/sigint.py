"""sigint: an externally sent SIGINT to the server's own pid, its client still connected.

Level robust: no SDK host sends SIGINT to its server (the spec's ladder sends SIGTERM;
TypeScript SDK 1.32.2 `StdioClientTransport.close()` sends SIGTERM then SIGKILL; MCP
Python SDK 2.3.0 `os/posix/utilities.py` killpg's SIGTERM then SIGKILL). It comes from
outside the host: a user's `kill -INT PID`, a server run by hand in a terminal, a host
or supervisor that forwards Ctrl-C to its child. So in both host styles it goes to the
server's own pid, never to its group: a wrapper (`npx`, `uvx`) must pass it on.
Pass: it exits within the window.
"""

from __future__ import annotations

import signal

from mcp_tether.probe.scenarios.sigterm import Sigterm
from mcp_tether.probe.spec import ROBUST


class Sigint(Sigterm):
    name = "sigint"
    description = "SIGINT sent to the server's own pid, client alive; pass: exits promptly"
    cites = ""
    level = ROBUST
    trigger_what = "sigint"
    signum = signal.SIGINT

    def signals_group(self, host_style: str) -> bool:
        return False  # from outside any host: the one pid someone typed or a supervisor knows


SCENARIO = Sigint()
