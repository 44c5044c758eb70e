"""sigint: SIGINT straight to the server while its client is connected.

Level robust: the spec's ladder sends SIGTERM, never SIGINT; but a server run in a
terminal, or a host that forwards Ctrl-C, sends it. Pass: it exits within the window.
"""

from __future__ import annotations

import signal

from mcp_tether.probe.scenarios.sigterm import Sigterm
from mcp_tether.probe.spec import ROBUST


class Sigint(Sigterm):
    name = "sigint"
    description = "SIGINT straight to the server, client alive; pass: exits promptly"
    cites = ""
    level = ROBUST
    trigger_what = "sigint"
    signum = signal.SIGINT


SCENARIO = Sigint()
