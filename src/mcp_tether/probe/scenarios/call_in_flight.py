"""call-in-flight (with --call): the client sends the call and closes stdin right after.

Level spec: EOF ends the session even with a call in flight; the spec lets the server
drop the answer or send it first. Pass: the tree is gone within the window. The result
says whether the answer arrived before the server exited (`call_answered`).

Hosts modelled: a host that closes its transport while a `tools/call` is pending (a user
cancelling, the host quitting): TypeScript SDK 1.32.2 `StdioClientTransport.close()` and
MCP Python SDK 2.3.0 `stdio_client`'s exit both start their ladder (see `close`) without
waiting for pending requests.
"""

from __future__ import annotations

from mcp_tether.probe.scenarios.base import ClientPort, Scenario


class CallInFlight(Scenario):
    name = "call-in-flight"
    description = ("with --call: stdin closed right after the call is sent; pass: tree gone "
                   "within the window (reports whether the answer came first)")
    cites = "EOF with a request in flight: the server exits (the answer may be dropped)"
    needs_call = True

    def client_run(self, c: ClientPort) -> None:
        if not c.handshake(send_call=False):
            c.pump(None)
        assert c.spec.call is not None
        rid = c.request("tools/call", {"name": c.spec.call[0], "arguments": c.spec.call[1]})
        c.emit("trigger", what="eof")
        c.close_stdin()
        c.emit("call", answered=c.await_answer_or_end(rid))
        c.pump(None)


SCENARIO = CallInFlight()
