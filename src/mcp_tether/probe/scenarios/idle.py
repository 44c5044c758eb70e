"""idle: connected and silent for --idle s, then a request. Pass: it still answers.

Level spec: a server must not take a quiet client for a gone one; only EOF (or the
client's signals) end a stdio session.

Hosts modelled: neither TypeScript SDK 1.32.2 `StdioClientTransport` nor MCP Python SDK
2.3.0 `stdio_client` sends keep-alives on stdio; a host left open and unused is silent.
After the answer the client runs its style's ladder (see `close`).
"""

from __future__ import annotations

from mcp_tether.probe.scenarios.base import ClientPort, Scenario


class Idle(Scenario):
    name = "idle"
    description = "connected and silent for --idle s, then a request; pass: it still answers"
    cites = "the session lasts until the client closes it: a quiet client is still there"
    pass_verdict = "alive"
    judge = "answer"

    def client_end(self, c: ClientPort) -> None:
        c.pump(c.spec.idle)
        if c.gone():  # and its tree with it
            c.emit("idle", answered=False, why="exited")
        else:
            rid = c.request("tools/list")
            msg, why = c.await_response(rid, c.spec.ready_timeout, c.spec.ready_ceiling)
            c.emit("idle", answered=msg is not None, why=why)
        c.ladder()
        c.emit("done")
        c.pump(None)


SCENARIO = Idle()
