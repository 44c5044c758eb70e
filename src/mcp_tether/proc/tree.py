"""Snapshots of the process table and the descendants of a process.

One pass over /proc reads every pid's stat (no /proc/<pid>/task/*/children: that
needs CONFIG_PROC_CHILDREN, which many kernels lack). Zombies are left out of trees:
they have exited, whatever kill(pid, 0) says.
"""

from __future__ import annotations

import os

from mcp_tether import platform
from mcp_tether.proc.identity import ProcInfo, read_info

__all__ = ["snapshot", "descendants", "cmdline", "children_map"]


def snapshot() -> dict[int, ProcInfo]:
    """Every readable process now, zombies included (callers decide)."""
    out: dict[int, ProcInfo] = {}
    if platform.has_proc():
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            info = read_info(int(name))
            if info is not None:
                out[info.pid] = info
        return out
    import psutil  # non-Linux fallback

    for pid in psutil.pids():
        info = read_info(pid)
        if info is not None:
            out[pid] = info
    return out


def children_map(snap: dict[int, ProcInfo]) -> dict[int, list[ProcInfo]]:
    kids: dict[int, list[ProcInfo]] = {}
    for info in snap.values():
        kids.setdefault(info.ppid, []).append(info)
    return kids


def descendants(
    root: int, snap: dict[int, ProcInfo] | None = None, *, include_zombies: bool = False
) -> list[ProcInfo]:
    """All live descendants of `root` (not root itself), parents before children."""
    if snap is None:
        snap = snapshot()
    kids = children_map(snap)
    out: list[ProcInfo] = []
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
    if platform.has_proc():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                raw = fh.read()
        except OSError:
            return []
        return [a.decode(errors="replace") for a in raw.split(b"\0")[:-1]] if raw else []
    try:
        import psutil

        return list(psutil.Process(pid).cmdline())
    except Exception:  # noqa: BLE001  # any psutil failure means "unreadable"
        return []
