"""The helper ends the server's own children: it adopts its tree, and ends it last.

Guarantees:
- `adopt()` (at arming) makes the server a child subreaper where the platform allows
  (Linux, through `platform`): a grandchild whose parent exits reparents to the server,
  not to init, so at shutdown it is still found as the server's own. It also puts the
  server's token in its environment (MCP_TETHER_TREE, `proc.mark`): what the server
  starts from then on carries it.
- What the server detached on purpose for its user is left (`proc.leave`: a child it
  kept out with `outside_tether`, a terminal multiplexer's server, a daemon a live
  process outside the tree is using), with what runs under it, and each is named in one
  stderr line. The rule is the same whether it was started before arming or after
  (before, it was reparented to init and is not found at all).
- `end_children(budget)` runs after the cleanup hooks (they may still need the children:
  a browser to close, a language server to save) and before the exit. It climbs the
  ladder (`proc.end.end_tree`) on every live descendant: SIGTERM, then SIGKILL, each
  signal identity-checked right before it is sent. Never the process group: a server
  started without a session of its own shares its host's group.
- Its ladder fits in what is left of the host's window (`budget`), so the host's own
  SIGKILL of the server cannot come first and orphan the children to init.
- Loaded only on the shutdown path: the tree ending (select, signal handling, /proc
  scans) costs a server nothing until it exits.
- Where the platform has no subreaper (macOS), descendants still linked to the server
  are ended, and so is every process started after arming that carries the server's
  mark (a child that setsid'd and double-forked: `proc.end`); the summary says when the
  platform could not follow escaped ones at all (`Tree.exact`, no environment to read).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from mcp_tether import log, platform

if TYPE_CHECKING:
    from mcp_tether.proc.end import Tree

__all__ = ["adopt", "release", "end_children", "CHILD_TERM_GRACE", "CHILD_KILL_WAIT"]

# How long the children get after SIGTERM, and how long after SIGKILL they may take to be
# gone, at most: the host's 2 s window (`ladder.TERM_GRACE`) holds the hooks as well.
CHILD_TERM_GRACE = 0.5
CHILD_KILL_WAIT = 0.5
MIN_RUNG = 0.05  # even with no window left, the SIGTERM gets this long before SIGKILL


def adopt() -> bool:
    """Make this process a subreaper of its own tree, its environment marked; False
    where it cannot be a subreaper."""
    from mcp_tether.proc import mark

    me = mark.own_token()
    if me is not None:
        os.environ[mark.TREE] = mark.with_token(os.environ, me)[mark.TREE]
    return bool(platform.is_subreaper() or platform.set_subreaper(True))


def release() -> None:
    """Undo `adopt()` (a recorder `exit` returned: the process lives on)."""
    platform.set_subreaper(False)


def end_children(budget: float) -> str | None:
    """End every live descendant; a short summary for the exit line, None when none."""
    from mcp_tether.proc import mark
    from mcp_tether.proc.end import Tree, end_tree

    me = mark.own_token()  # without a subreaper, how a child that daemonized is found
    tree = Tree(group=None, marks=() if me is None else (me,))
    members = tree.members_now()
    if not members:
        tree.reap()
        return None
    from mcp_tether.proc.leave import decide  # only with children to decide on

    tree.leave(decide(members, root=os.getpid(), server_sid=os.getsid(0)))
    _name_left(tree)
    if not tree.members_now():
        tree.reap()
        return _left_summary(tree)
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
        line += (" (no subreaper here: escaped ones were found by the tree's mark)"
                 if tree.by_marks else
                 " (no subreaper here: any that escaped the tree were not followed)")
    if tree.left:
        line += f"; {_left_summary(tree)}"
    return line


def _left_summary(tree: Tree) -> str:
    n = len(tree.left)
    return f"{n} process{'es' if n != 1 else ''} left running for the user"


def _name_left(tree: Tree) -> None:
    """One stderr line per process left: pid, command, why (the server's text, shown)."""
    if not tree.left:
        return
    from mcp_tether.escape import terminal

    for v in sorted(tree.left.values(), key=lambda v: v.ident):
        log.say(f"mcp-tether: left {v.info.pid} ({terminal(v.command)}): "
                f"{terminal(v.reason())}")
