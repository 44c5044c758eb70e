"""A ladder target made of a process tree and the container its engine client runs.

`WithContainer(tree, follow)` is what the guard climbs its ladder on when the server is
a container run: every rung reaches the container first (through the engine, so the
engine client, still attached, sees the container's real exit and reports it) and then
the local tree (the engine client and anything else the server command started). The
target is gone when both are: the tree has no process left *and* the container is
stopped. Without this, SIGKILL reaches only the engine client, and the container, which
lives under the engine's shim and not under us, keeps running.
"""

from __future__ import annotations

import time

from mcp_tether.container.follow import DENIED, SENT, ContainerFollow

TYPE_CHECKING = False
if TYPE_CHECKING:
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
        outcomes = (self.follow.signal(sig), self.tree.signal(sig))
        if SENT in outcomes:
            return SENT
        return DENIED if DENIED in outcomes else "gone"

    def wait(self, timeout: float) -> float | None:
        """Until the container has stopped and the tree is empty. The container is
        waited for first: once it has stopped, the engine client (still attached) only
        has to notice and report; it gets up to `CLIENT_LINGER` past `timeout` for
        that, so a slow client does not make the next rung look needed."""
        deadline = time.monotonic() + timeout
        box_gone = self.follow.wait_gone(timeout)
        if box_gone is None:
            return None
        tree_gone = self.tree.wait(max(deadline - time.monotonic(), CLIENT_LINGER))
        if tree_gone is None:
            return None
        return max(tree_gone, box_gone)
