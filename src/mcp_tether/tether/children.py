"""The helper ends the server's own children: it adopts its tree, and ends it last.

Guarantees:
- `adopt()` (at arming) makes the server a child subreaper where the platform allows
  (Linux, through `platform`): a grandchild whose parent exits reparents to the server,
  not to init, so at shutdown it is still found as the server's own.
- `end_children(budget)` runs after the cleanup hooks (they may still need the children:
  a browser to close, a language server to save) and before the exit. It climbs the
  ladder (`proc.end.end_tree`) on every live descendant: SIGTERM, then SIGKILL, each
  signal identity-checked right before it is sent. Never the process group: a server
  started without a session of its own shares its host's group.
- Its ladder fits in what is left of the host's window (`budget`), so the host's own
  SIGKILL of the server cannot come first and orphan the children to init.
- Loaded only on the shutdown path: the tree ending (select, signal handling, /proc
  scans) costs a server nothing until it exits.
- Where the platform has no subreaper, descendants still linked to the server are ended
  and the summary says that escaped ones could not be followed (`Tree.exact`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_tether import platform

if TYPE_CHECKING:
    from mcp_tether.proc.end import Tree

__all__ = ["adopt", "release", "end_children", "CHILD_TERM_GRACE", "CHILD_KILL_WAIT"]

# How long the children get after SIGTERM, and how long after SIGKILL they may take to be
# gone, at most: the host's 2 s window (`ladder.TERM_GRACE`) holds the hooks as well.
CHILD_TERM_GRACE = 0.5
CHILD_KILL_WAIT = 0.5
MIN_RUNG = 0.05  # even with no window left, the SIGTERM gets this long before SIGKILL


def adopt() -> bool:
    """Make this process a subreaper of its own tree; False where it cannot be."""
    return bool(platform.is_subreaper() or platform.set_subreaper(True))


def release() -> None:
    """Undo `adopt()` (a recorder `exit` returned: the process lives on)."""
    platform.set_subreaper(False)


def end_children(budget: float) -> str | None:
    """End every live descendant; a short summary for the exit line, None when none."""
    from mcp_tether.proc.end import Tree, end_tree

    tree = Tree(group=None)
    if not tree.members_now():
        tree.reap()
        return None
    term = min(CHILD_TERM_GRACE, max(MIN_RUNG, budget / 2))
    kill = min(CHILD_KILL_WAIT, max(MIN_RUNG, budget - term))
    result = end_tree(tree, close_stdin=False, grace=0.0, term_grace=term, kill_wait=kill)
    return _summary(tree, result.ended_by, result.survived)


def _summary(tree: Tree, ended_by: str | None, survived: bool) -> str:
    n = len(tree.seen)
    what = f"{n} child process{'es' if n != 1 else ''}"
    if survived:
        left = len(tree.members_now())
        return f"{what}: {left} still alive after SIGKILL"
    how = {"sigterm": "on SIGTERM", "sigkill": "by SIGKILL"}.get(ended_by or "", "by themselves")
    line = f"{what} ended {how}"
    if not tree.exact:
        line += " (no subreaper here: any that escaped the tree were not followed)"
    return line
