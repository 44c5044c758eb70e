"""half-close: the client shuts down only the write side of the server's stdin and stays.

This is what Node hosts send (`stdin.end()` on a socketpair is shutdown(SHUT_WR)): the
server reads EOF while its stdout is still connected. Level spec: EOF on stdin is the
spec's shutdown signal. A pipe has no half-close, so the python host style skips it.
The trigger is announced before it is pulled: a correct server that exits at once must
never look like an early exit.

Hosts modelled: TypeScript SDK 1.32.2 `StdioClientTransport.close()` calls
`processToClose.stdin?.end()` and then waits 2 s with the process's stdout still read.
MCP Python SDK 2.3.0 closes a pipe (`_close_pipe(process.stdin)`): the `close` scenario.
"""

from __future__ import annotations

from mcp_tether.probe.scenarios.base import ClientPort, Scenario


class HalfClose(Scenario):
    name = "half-close"
    description = "client shuts down only the write side of stdin and stays; pass: tree gone"
    cites = "\"closing the input stream to the child process\" (what Node's stdin.end() does)"

    def applies(self, host_style: str) -> bool:
        return host_style != "python"  # a pipe has no half-close: closing it is the close

    def client_end(self, c: ClientPort) -> None:
        c.emit("trigger", what="eof")  # first: the server may be gone a moment later
        c.close_stdin()
        c.pump(None)


SCENARIO = HalfClose()
