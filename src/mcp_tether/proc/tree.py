"""Snapshots of the process table and the descendants of a process.

`snapshot` makes one pass over the backend's process table (every pid). `own_tree`
walks down from one process through the backend's children lists, where it has them
(Linux with CONFIG_PROC_CHILDREN): the cost follows the tree, not the table.
Zombies are left out of trees: they have exited, whatever kill(pid, 0) says.
"""

from __future__ import annotations

from mcp_tether.platform import backend
from mcp_tether.proc.identity import ProcRecord, read_info

__all__ = ["snapshot", "descendants", "cmdline", "children_map", "own_tree", "carrying"]


def snapshot() -> dict[int, ProcRecord]:
    """Every readable process now, zombies included (callers decide)."""
    out: dict[int, ProcRecord] = {}
    for pid in backend.pids():
        info = read_info(pid)
        if info is not None:
            out[pid] = info
    return out


def own_tree(root: int) -> list[ProcRecord] | None:
    """Live descendants of `root`, parents first, read from the children lists.

    None where the backend has no children lists; the caller then takes a `snapshot`.
    The kernel's list is exact only for a frozen task: a child being born during the
    read may appear on the next read only. Callers therefore confirm "gone" and the
    final list of survivors with a full snapshot.
    """
    if backend.children(root) is None:
        return None
    out: list[ProcRecord] = []
    stack, seen = [root], {root}
    while stack:
        for kid in backend.children(stack.pop()) or []:  # None: it ended meanwhile
            if kid in seen:
                continue
            seen.add(kid)
            info = read_info(kid)
            if info is not None and not info.exited:
                out.append(info)
                stack.append(kid)
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


def carrying(marks: set[str], snap: dict[int, ProcRecord], born: float | None = None
             ) -> list[ProcRecord]:
    """Live processes of `snap` whose environment carries one of the tree tokens `marks`
    in MCP_TETHER_TREE (`proc.mark`), started at or after `born`, and their descendants:
    a tree's members wherever they were reparented. A process whose environment cannot
    be read is not among them (an empty answer proves nothing)."""
    from mcp_tether.proc import mark

    out: dict[int, ProcRecord] = {}
    environ = backend.channels().environ
    for info in snap.values():
        if info.exited or info.pid in out or (born is not None and info.start < born):
            continue
        env = environ(info.pid)
        if env is not None and marks & set(mark.tokens(env.get(mark.TREE))):
            out[info.pid] = info
            for under in descendants(info.pid, snap):
                out.setdefault(under.pid, under)
    return list(out.values())


def cmdline(pid: int) -> list[str]:
    """argv of `pid` ([] for a zombie, a kernel thread, or an unreadable process)."""
    return backend.read_argv(pid) or []
