"""Is a process tree still doing something? One look at its CPU time, members and states.

A server that is slow to answer because it is busy (importing, installing, starved of
CPU on a loaded machine) is making progress; one that is idle and silent is not. The
probe's client waits for a handshake answer for as long as the server's tree keeps
moving (up to a ceiling), instead of a fixed number of seconds: on a loaded machine a
slow import is not a dead server.

Guarantees:
- A `Look` is taken in one pass over the process table: for every live process of the tree, its
  identity (pid, start time), its CPU time (utime + stime + what its reaped children
  used: cutime + cstime, so a wrapper whose short-lived children came and went counts)
  and whether it is runnable or in disk sleep (R or D: working or waiting for a CPU,
  not for input).
- `moved(a, b)` is True when between two looks the tree used CPU, gained or lost a
  member, or has a member in R/D now; False when none of that; None (unknown) when
  either look could not be taken. Unknown never extends a wait.
- `Starvation` measures how long a tree waited for a CPU (schedstat run_delay, the
  most-starved member), so that the probe's window can count the server's own time on
  a loaded machine, not the time the machine made it wait. Unreadable (the portable
  backend): no credit.
- Nothing is signalled; the process table is only read.
"""

from __future__ import annotations

from mcp_tether.platform import backend, clock_ticks
from mcp_tether.proc.identity import ProcessId
from mcp_tether.proc.tree import children_map, snapshot

__all__ = ["Look", "look", "moved", "MIN_CPU", "run_delay", "Starvation"]

# CPU seconds that count as work between two looks: two clock ticks (USER_HZ = 100),
# above the noise of an idle event loop's timer wake-ups.
MIN_CPU = 0.02


class Look(tuple):  # type: ignore[type-arg]  # (cpu seconds, members, busy), hashable
    """One look at a tree: total CPU seconds, its members, any member in R or D."""

    __slots__ = ()

    def __new__(cls, cpu: float, members: frozenset[ProcessId], busy: bool) -> Look:
        return tuple.__new__(cls, (cpu, members, busy))

    cpu = property(lambda self: self[0], doc="CPU seconds used by the tree's processes")
    members = property(lambda self: self[1], doc="the tree's live processes")
    busy = property(lambda self: self[2], doc="a member is runnable or in disk sleep")


def look(root: int, exclude: frozenset[int] = frozenset()) -> Look | None:
    """The descendants of `root`, not counting `root` nor the pids in `exclude` (their
    children are counted: the probe's client excludes itself, not the server it
    started); None when the process table cannot be read."""
    snap = snapshot()
    if not snap:
        return None
    kids = children_map(snap)
    total, members, busy = 0, set(), False
    stack = [p.pid for p in kids.get(root, ())]
    seen = {root}
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        info = snap[pid]
        stack.extend(p.pid for p in kids.get(pid, ()))
        if pid in exclude or info.exited:
            continue
        total += info.cpu_ticks + info.child_ticks
        members.add(info.ident)
        busy = busy or info.state in ("R", "D")
    return Look(total / clock_ticks(), frozenset(members), busy)


def moved(before: Look | None, now: Look | None) -> bool | None:
    """Did the tree do anything between the two looks? None: cannot know."""
    if before is None or now is None:
        return None
    return bool(now.busy or now.members != before.members or now.cpu - before.cpu >= MIN_CPU)


def run_delay(pid: int) -> float | None:
    """Seconds `pid` has spent runnable but waiting for a CPU since it started (the
    kernel's schedstat run_delay); None where that is not readable."""
    return backend.run_delay(pid)


class Starvation:
    """How long a tree waited for a CPU since it was first looked at: the largest wait of
    any one member (members wait side by side, so their waits do not add up).

    A window measured in wall time judges the machine as much as the server on a loaded
    machine: an SDK server that needs half a second of CPU to exit after EOF may wait
    seconds for it. Adding this wait to the window judges the server's own time.
    """

    def __init__(self) -> None:
        self.base: dict[ProcessId, float] = {}
        self.waited = 0.0

    def update(self, members: list[ProcessId]) -> float:
        for m in members:
            d = run_delay(m.pid)
            if d is None:
                continue
            first = self.base.setdefault(m, d)
            self.waited = max(self.waited, d - first)
        return self.waited
