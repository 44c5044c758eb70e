"""exit: the client process exits without closing anything (its fds close with it).

Level spec: the server's stdin reaches EOF when its client's process ends; the
2026-07-28 stdio transport asks servers to exit promptly when stdin is closed or reads
return EOF ("the primary graceful-shutdown signal"). Pass: the tree is gone within the
window.

Hosts modelled: a host process that ends without running its transport's close: neither
TypeScript SDK 1.32.2 (`StdioClientTransport` registers no exit hook: Node does not kill
children when it exits) nor MCP Python SDK 2.3.0 (`stdio_client`'s clean-up is the
context manager's exit, which `os._exit` or an unhandled fatal error skips) signals the
server then; only the kernel closing the host's fds reaches it. Same in both styles.
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
