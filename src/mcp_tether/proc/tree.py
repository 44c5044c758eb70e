"""Snapshots of the process table and the descendants of a process.

One pass over the backend's process table reads every pid (no
/proc/<pid>/task/*/children: that needs CONFIG_PROC_CHILDREN, which many kernels lack).
Zombies are left out of trees: they have exited, whatever kill(pid, 0) says.
"""

from __future__ import annotations

from mcp_tether.platform import backend
from mcp_tether.proc.identity import ProcRecord, read_info

__all__ = ["snapshot", "descendants", "cmdline", "children_map"]


def snapshot() -> dict[int, ProcRecord]:
    """Every readable process now, zombies included (callers decide)."""
    out: dict[int, ProcRecord] = {}
    for pid in backend.pids():
        info = read_info(pid)
        if info is not None:
            out[pid] = info
    return out


def children_map(snap: dict[int, ProcRecord]) -> dict[int, list[ProcRecord]]:
    kids: dict[int, list[ProcRecord]] = {}
    for info in snap.values():
        kids.setdefault(info.ppid, []).append(info)
    return kids


def descendants(
    root: int, snap: dict[int, ProcRecord] | None = None, *, include_zombies: bool = False
) -> list[ProcRecord]:
    """All live descendants of `root` (not root itself), parents before children."""
    if snap is None:
        snap = snapshot()
    kids = children_map(snap)
    out: list[ProcRecord] = []
    stack = [root]
    seen = {root}
    while stack:
        pid = stack.pop()
        for child in kids.get(pid, ()):
            if child.pid in seen:
                continue
            seen.add(child.pid)
            stack.append(child.pid)
            if include_zombies or not child.exited:
                out.append(child)
    return out


def cmdline(pid: int) -> list[str]:
    """argv of `pid` ([] for a zombie, a kernel thread, or an unreadable process)."""
    return backend.read_argv(pid) or []
