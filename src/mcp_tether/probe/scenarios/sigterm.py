"""sigterm: the host's SIGTERM while its client is still connected, sent as the host sends it.

Level spec: the client's ladder goes on with "sending SIGTERM if the server does not
exit within a reasonable time" (MCP lifecycle, Shutdown, stdio): a server must end on it.
Pass: it exits within the window; else the probe, as a host would, SIGKILLs it.

Where the host's SIGTERM goes is the host's own code, modelled per host style:
- node: to the direct child only. TypeScript SDK 1.32.2 `StdioClientTransport.close()`
  (dist/esm/client/stdio.js): `processToClose.stdin?.end()`, 2 s, then
  `processToClose.kill('SIGTERM')`, 2 s, then `kill('SIGKILL')`: Node's
  `ChildProcess.kill` signals that one pid; the server was spawned without `detached`,
  so it stays in the host's process group and a wrapper's children get nothing.
- python: to the process group the server leads. MCP Python SDK 2.3.0 (and 1.30.0)
  `client/stdio.py` spawns it with `anyio.open_process(..., start_new_session=True)`;
  `_stop_server_process` closes stdin, waits `PROCESS_TERMINATION_TIMEOUT` (2 s), then
  `os/posix/utilities.py` `terminate_posix_process_tree` does `os.killpg(pgid,
  SIGTERM)` with `pgid = process.pid`, polls the group for `FORCE_KILL_TIMEOUT` (2 s)
  and `os.killpg(pgid, SIGKILL)`. So the real server behind `npx`/`uvx` gets the
  SIGTERM too, even when the wrapper has already exited.
A SIGTERM someone else sends to the server's own pid (a user's `kill`, a supervisor) is
not a host's: under the node style it is this scenario; `sigint` is the scenario of an
externally sent signal.
"""

from __future__ import annotations

import signal
import time

from mcp_tether.probe.scenarios.base import KeeperPort, Scenario, Trigger
from mcp_tether.proc import ProcessId


class Sigterm(Scenario):
    name = "sigterm"
    description = ("the host's SIGTERM, client alive (node: the direct child; python: its "
                   "process group); pass: exits promptly")
    cites = "\"sending SIGTERM if the server does not exit within a reasonable time\""
    trigger_what = "sigterm"
    signum = signal.SIGTERM

    def signals_group(self, host_style: str) -> bool:
        """Does this style's host signal the server's process group (else its pid)?"""
        return host_style == "python"

    def keeper_trigger(self, k: KeeperPort) -> Trigger | None:
        t = time.monotonic()
        if k.signal_server(self.signum, group=self.signals_group(k.spec.host_style)):
            return Trigger(t, self.trigger_what)
        if k.tree_still_serving():
            # A launcher gone, its tree still serving: the host's signal to
            # its child finds no one, as it would under a real host; judge the tree.
            return Trigger(t, self.trigger_what, missed=True)
        return None

    def after_window(self, k: KeeperPort, live: list[ProcessId]) -> list[ProcessId]:
        return k.escalate(live, group=self.signals_group(k.spec.host_style))


SCENARIO = Sigterm()
