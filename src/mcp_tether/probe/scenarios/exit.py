"""exit: the client process exits without closing anything (its fds close with it).

Level spec: the server's stdin reaches EOF when its client's process ends; the
2026-07-28 stdio transport asks servers to exit promptly when stdin is closed or reads
return EOF ("the primary graceful-shutdown signal"). Pass: the tree is gone within the
window.
"""

from __future__ import annotations

import os

from mcp_tether.probe.scenarios.base import ClientPort, Scenario


class Exit(Scenario):
    name = "exit"
    description = "client exits without closing anything; pass: tree gone within the window"
    cites = "stdin at EOF when the client's process ends: the server exits"
    trigger_is_client_exit = True

    def client_end(self, c: ClientPort) -> None:
        c.emit("trigger", what="eof")
        os._exit(0)


SCENARIO = Exit()
