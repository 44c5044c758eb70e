"""sigterm-pid: SIGTERM to the spawned process's own pid alone, its client still connected.

Level robust: the spec's ladder leaves where the SIGTERM goes to the host (`sigterm`
models each SDK host: the Python SDK signals the process group, the TypeScript SDK the
direct child). But a user's `kill PID`, a supervisor that knows one pid (systemd's
`KillMode=process`, runit's `sv term`, a host's own `process.kill()`), signal exactly the
process the host spawned, and nothing below it. Behind `npx`, `uvx` or `sh -c` that is
the launcher: a launcher that does not pass SIGTERM on leaves the real server running,
whatever the host style. So in both host styles it goes to that one pid, never to the
group; after the window the probe, as such a sender would, SIGKILLs that pid alone.
Pass: the whole tree exits within the window.
"""

from __future__ import annotations

import signal

from mcp_tether.probe.scenarios.sigterm import Sigterm
from mcp_tether.probe.spec import ROBUST


class SigtermPid(Sigterm):
    name = "sigterm-pid"
    description = ("SIGTERM to the spawned pid alone (`kill PID`, a supervisor), client "
                   "alive; pass: the whole tree exits promptly")
    cites = ""
    level = ROBUST
    trigger_what = "sigterm"
    signum = signal.SIGTERM

    def signals_group(self, host_style: str) -> bool:
        return False  # the one pid someone typed or a supervisor knows, never its group


SCENARIO = SigtermPid()
