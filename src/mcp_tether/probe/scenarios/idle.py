"""idle: connected and silent for --idle s, then a request. Pass: it still answers.

Level spec: a server must not take a quiet client for a gone one; only EOF (or the
client's signals) end a stdio session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_tether.probe.scenarios.base import Scenario

if TYPE_CHECKING:
    from mcp_tether.probe.client import Client


class Idle(Scenario):
    name = "idle"
    description = "connected and silent for --idle s, then a request; pass: it still answers"
    cites = "the session lasts until the client closes it: a quiet client is still there"
    pass_verdict = "alive"
    judge = "answer"

    def client_end(self, c: Client) -> None:
        c.pump(c.spec.idle)
        if c.status is not None and not c.stdout_held():  # gone, and its tree with it
            c.emit("idle", answered=False, why="exited")
        else:
            rid, data = c.sess.request("tools/list")
            c.send(data)
            msg, why = c.await_response(rid, c.spec.ready_timeout, c.spec.ready_ceiling)
            c.emit("idle", answered=msg is not None, why=why)
        c.ladder()
        c.emit("done")
        c.pump(None)


SCENARIO = Idle()
