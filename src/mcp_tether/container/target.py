"""A ladder target made of a process tree and the container its engine client runs.

`WithContainer(tree, follow)` is what the guard climbs its ladder on when the server is
a container run: every rung reaches the local tree (the engine client and anything else
the server command started) and the container: relayed by the live engine client
(`--sig-proxy`), else through the engine (`kill --signal`), and always through the
engine for SIGKILL, which no client relays. The
target is gone when both are: the tree has no process left *and* the container is
stopped. Without this, SIGKILL reaches only the engine client, and the container, which
lives under the engine's shim and not under us, keeps running.
"""

from __future__ import annotations

import signal
import time

from mcp_tether.container.engine import DENIED, SENT
from mcp_tether.container.follow import ContainerFollow
from mcp_tether.ladder import LadderTarget

__all__ = ["WithContainer", "CLIENT_LINGER"]

# Seconds the engine client gets, after its container stopped, to see it and exit.
CLIENT_LINGER = 2.0


class WithContainer:
    """LadderTarget: `tree` (any LadderTarget) plus the followed container."""

    def __init__(self, tree: LadderTarget, follow: ContainerFollow) -> None:
        self.tree = tree
        self.follow = follow

    def close_stdin(self) -> None:
        self.tree.close_stdin()  # the engine client closes the container's stdin itself

    def signal(self, sig: int) -> str:
        """`sig` to the tree first, then to the container through the engine, unless
        the engine client already relays it: a live `docker run` proxies every signal
        but SIGKILL to its container (`--sig-proxy`, on by default), at once, where an
        engine call takes 0.1-0.5 s; and a second SIGTERM would cut short a graceful
        shutdown some servers start on the first."""
        tree_out = self.tree.signal(sig)
        relayed = sig != signal.SIGKILL and tree_out == SENT and self.follow.cmd.sig_proxy
        box_out = "gone" if relayed else self.follow.signal(sig)
        outcomes = (tree_out, box_out)
        if SENT in outcomes:
            return SENT
        return DENIED if DENIED in outcomes else "gone"

    def wait(self, timeout: float) -> float | None:
        """Until the tree is empty and the container has stopped.

        The tree first, on SIGCHLD alone (no engine call): while the engine client is
        attached it exits when its container stops. If the tree did not empty in
        time, one look at the container: stopped means the client only has to notice
        and report, so it gets up to `CLIENT_LINGER` more (a slow client must not
        make the next rung look needed). Once the tree is empty (the client died, or
        was never attached), the container is polled through the engine."""
        deadline = time.monotonic() + timeout
        tree_gone = self.tree.wait(timeout)
        if tree_gone is None:
            if self.follow.state() not in ("stopped", "gone"):
                return None
            tree_gone = self.tree.wait(CLIENT_LINGER)
            if tree_gone is None:
                return None
        box_gone = self.follow.wait_gone(max(0.0, deadline - time.monotonic()))
        if box_gone is None:
            return None
        return max(tree_gone, box_gone)
