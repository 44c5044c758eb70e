"""inherited-writer: a forked helper of the client keeps stdin's write end; the client dies.

EOF never comes, so only a parent-death watch ends the server. Level robust: the spec
asks a server to exit at EOF, not to watch its parent; real hosts leak writers
(a forked helper, a shell), and a robust server survives that.

Hosts modelled: a host that forks (a helper, a `shell: true` spawn, a plugin process)
while it holds the server's stdin write end without close-on-exec, then dies. Neither
TypeScript SDK 1.32.2 nor MCP Python SDK 2.3.0 does this itself; their hosts' other
children may. Same in both styles.
"""

from __future__ import annotations

from mcp_tether.probe.scenarios.base import ClientPort
from mcp_tether.probe.scenarios.crash import Crash
from mcp_tether.probe.spec import ROBUST


class InheritedWriter(Crash):
    """The crash's trigger (SIGKILL to the client), once a helper holds stdin's write end."""

    name = "inherited-writer"
    description = ("a forked helper keeps stdin's write end, the client is SIGKILLed "
                   "(EOF never comes); pass: tree gone (needs a parent-death watch)")
    level = ROBUST
    cites = ""
    trigger_what = "parent-death"

    def client_end(self, c: ClientPort) -> None:
        c.fork_writer_holder()
        c.emit("ready")
        c.pump(None)


SCENARIO = InheritedWriter()
