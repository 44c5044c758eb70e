"""close: the client runs its whole shutdown ladder (close stdin, 2 s, SIGTERM, 2 s, SIGKILL).

Level spec: for stdio "the client SHOULD initiate shutdown by" first "closing the input
stream to the child process (the server)", then "waiting for the server to exit"
(MCP lifecycle, Shutdown, stdio; kept in 2026-07-28's stdio transport). Pass: the tree
exits on EOF, before SIGTERM. Behind our guard the client's own SIGTERM reaches the
guard first and is forwarded: the guard's promise (the tree gone before SIGKILL) is what
counts there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_tether.probe.scenarios.base import Scenario

if TYPE_CHECKING:
    from mcp_tether.probe.client import Client
    from mcp_tether.probe.keeper import Keeper


class Close(Scenario):
    name = "close"
    description = "client runs its shutdown ladder; pass: the tree exits before SIGTERM"
    cites = ("\"closing the input stream to the child process (the server)\", then "
             "\"waiting for the server to exit\"")
    judge = "ladder"
    early_exit_needs_handshake = True

    def client_end(self, c: Client) -> None:
        c.announce_close = True
        c.ladder()
        c.emit("done")
        c.pump(None)

    def window_end(self, k: Keeper) -> float | None:
        done = k.wait_for_ladder()
        return None if done is None else done + k.spec.effective_window

    def passes(self, verdict: str, guarded: bool) -> bool:
        return verdict == "exited" or (guarded and verdict == "terminated")


SCENARIO = Close()
