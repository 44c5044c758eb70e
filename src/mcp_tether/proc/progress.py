"""Is a process tree still doing something? One look at its CPU time, members and states.

A server that is slow to answer because it is busy (importing, installing, starved of
CPU on a loaded machine) is making progress; one that is idle and silent is not. The
probe's client waits for a handshake answer for as long as the server's tree keeps
moving (up to a ceiling), instead of a fixed number of seconds (issue 22 item 5).

Guarantees:
- A `Look` is taken in one pass over /proc: for every live process of the tree, its
  identity (pid, start time), its CPU time (utime + stime + what its reaped children
  used: cutime + cstime, so a wrapper whose short-lived children came and went counts)
  and whether it is runnable or in disk sleep (R or D: working or waiting for a CPU,
  not for input).
- `moved(a, b)` is True when between two looks the tree used CPU, gained or lost a
  member, or has a member in R/D now; False when none of that; None (unknown) when
  either look could not be taken (no /proc). Unknown never extends a wait.
- `Starvation` measures how long a tree waited for a CPU (schedstat run_delay, the
  most-starved member), so that the probe's window can count the server's own time on
  a loaded machine, not the time the machine made it wait. Unreadable: no credit.
- Nothing is signalled; only /proc is read.
"""

from __future__ import annotations

import os

from mcp_tether import platform
from mcp_tether.proc.identity import ProcessId, split_stat

__all__ = ["Look", "look", "moved", "MIN_CPU", "run_delay", "Starvation"]

# CPU seconds that count as work between two looks: two clock ticks (USER_HZ = 100),
# above the noise of an idle event loop's timer wake-ups.
MIN_CPU = 0.02
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


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
    started); None when the process table cannot be read this way (not Linux)."""
    if not platform.has_proc():
        return None
    stats: dict[int, tuple[int, str, float, float]] = {}  # pid -> ppid, state, start, cpu
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                data = fh.read()
            _comm, f = split_stat(data)
            # f[k] is field k+3: state 3, ppid 4, utime..cstime 14..17, start 22.
            cpu = (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) / _TICK
            stats[int(name)] = (int(f[1]), f[0].decode(), float(f[19]), cpu)
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or unreadable: not a member we can see
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _s, _st, _c) in stats.items():
        kids.setdefault(ppid, []).append(pid)
    total, members, busy = 0.0, set(), False
    stack = list(kids.get(root, ()))
    seen = {root}
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        _ppid, state, start, cpu = stats[pid]
        stack.extend(kids.get(pid, ()))
        if pid in exclude or state in ("Z", "X", "x"):
            continue
        total += cpu
        members.add(ProcessId(pid, start))
        busy = busy or state in ("R", "D")
    return Look(total, frozenset(members), busy)


def moved(before: Look | None, now: Look | None) -> bool | None:
    """Did the tree do anything between the two looks? None: cannot know."""
    if before is None or now is None:
        return None
    return bool(now.busy or now.members != before.members or now.cpu - before.cpu >= MIN_CPU)


def run_delay(pid: int) -> float | None:
    """Seconds `pid` has spent runnable but waiting for a CPU since it started (the
    kernel's schedstat run_delay); None where that is not readable."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as fh:
            return int(fh.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


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
