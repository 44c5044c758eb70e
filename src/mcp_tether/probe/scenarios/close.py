"""close: the client runs its whole shutdown ladder (close stdin, 2 s, SIGTERM, 2 s, SIGKILL).

Level spec: for stdio "the client SHOULD initiate shutdown by" first "closing the input
stream to the child process (the server)", then "waiting for the server to exit"
(MCP lifecycle, Shutdown, stdio; kept in 2026-07-28's stdio transport). Pass: the tree
exits on EOF, before SIGTERM. Behind our guard the client's own SIGTERM reaches the
guard first and is forwarded: the guard's promise (the tree gone before SIGKILL) is what
counts there.

Hosts modelled (the client's ladder, `client.Client.ladder`): node is TypeScript SDK
1.32.2 `StdioClientTransport.close()` (dist/esm/client/stdio.js: `stdin.end()`, 2 s,
`kill('SIGTERM')` to the direct child, 2 s, `kill('SIGKILL')`); python is MCP Python SDK
2.3.0 `client/stdio.py` `_stop_server_process` (close stdin, `PROCESS_TERMINATION_TIMEOUT`
2 s, then `os/posix/utilities.py` `terminate_posix_process_tree`: killpg SIGTERM, 2 s,
killpg SIGKILL to the group of the `start_new_session=True` child).
"""

from __future__ import annotations

from mcp_tether.probe.scenarios.base import ClientPort, KeeperPort, Scenario, WindowEnd


class Close(Scenario):
    name = "close"
    description = "client runs its shutdown ladder; pass: the tree exits before SIGTERM"
    cites = ("\"closing the input stream to the child process (the server)\", then "
             "\"waiting for the server to exit\"")
    judge = "ladder"
    early_exit_needs_handshake = True

    def client_end(self, c: ClientPort) -> None:
        c.ladder(announce=True)
        c.emit("done")
        c.pump(None)

    def window(self, k: KeeperPort, trigger: float) -> WindowEnd:
        """The window opens when the client's ladder has ended, not at the trigger."""
        done = k.wait_for_ladder()
        end = None if done is None else done + k.spec.effective_window
        return lambda: end

    def passes(self, verdict: str, guarded: bool) -> bool:
        return verdict == "exited" or (guarded and verdict == "terminated")


SCENARIO = Close()
