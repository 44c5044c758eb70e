"""The environment marks of a tree: which trees a process was started in, and which it
was kept out of on purpose.

Guarantees:
- A tree's token is its root's identity as text, `PID:START` (START as the backend
  reads it: clock ticks since boot on Linux, the same text the Node package writes), so
  a token names one process, never a reused pid.
- `MCP_TETHER_TREE` lists (comma-separated) the tokens of the trees a process was started
  in: the guard puts its own in its server's environment, the helper and the Node
  package put theirs in their own process's environment when armed, and every process
  inherits the list from its parent.
- `MCP_TETHER_OUTSIDE` lists the tokens of the trees a process was kept out of:
  `outside(env)` (the helper's `outside_tether`, the Node package's `outsideTether`)
  names every tree the calling process is in and the calling process itself (a tree it
  roots, or will root once armed). Whatever the marked child starts inherits the mark,
  so it stays out with its descendants; a tree the child roots itself is not named, so
  the child's own children still end with the child.
- Stdlib only: the guard's start-up path loads this module.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing stays off the guard's start-up path
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["TREE", "OUTSIDE", "token", "tokens", "with_token", "own_token", "outside"]

TREE = "MCP_TETHER_TREE"
OUTSIDE = "MCP_TETHER_OUTSIDE"


def token(pid: int, start: float) -> str:
    """`pid:start`, as the Node package writes it (Linux start times are whole ticks)."""
    whole = float(start).is_integer()
    return f"{pid}:{int(start)}" if whole else f"{pid}:{start!r}"


def tokens(value: str | None) -> list[str]:
    """The tokens of a mark's value (empty words dropped)."""
    return [t for t in (value or "").split(",") if t]


def _joined(*values: str | None, extra: tuple[str, ...] = ()) -> str:
    out: list[str] = []
    for t in [w for v in values for w in tokens(v)] + list(extra):
        if t not in out:
            out.append(t)
    return ",".join(out)


def with_token(env: Mapping[str, str], tok: str) -> dict[str, str]:
    """A copy of `env` whose MCP_TETHER_TREE also lists `tok` (a tree inside another
    keeps the outer tree's token too)."""
    return {**env, TREE: _joined(env.get(TREE), extra=(tok,))}


def own_token() -> str | None:
    """This process's token; None where it cannot read its own start time."""
    from mcp_tether.platform import backend  # the backend the package chose

    try:
        info = backend.read(os.getpid())
    except OSError:
        return None
    return None if info is None else token(info.pid, info.start)


def outside(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of `env` (default: this process's environment) for a child that must stay
    out of every tree this process is in, with its descendants (see the module doc)."""
    base = dict(os.environ if env is None else env)
    mine = own_token()
    inside = _joined(os.environ.get(TREE), base.get(TREE))
    if inside:  # kept: a tree that finds its members by this mark still names the child
        base[TREE] = inside
    base[OUTSIDE] = _joined(base.get(OUTSIDE), inside, extra=(mine,) if mine else ())
    return base
