"""psutil backend of `proc.table`, for every OS without a Linux /proc.

Enumeration, argv, memory and CPU come from psutil; open channels cannot be seen
portably, so every channel answer is "unknown" (evidence says so, never guesses).
"""

from __future__ import annotations

import contextlib
import os
import time

from mcp_tether.proc._record import ProcRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

CHANNEL_DETAIL = False


def read_record(pid: int, want_argv: Callable[[str], bool] | None) -> ProcRecord | None:
    import psutil

    try:
        ps = psutil.Process(pid)
        with ps.oneshot():
            if ps.status() == psutil.STATUS_ZOMBIE:
                return None
            t = ps.cpu_times()
            pgid = sid = -1
            with contextlib.suppress(OSError):
                pgid, sid = os.getpgid(pid), os.getsid(pid)
            name = ps.name()
            argv = ps.cmdline() if want_argv is None or want_argv(name) else None
            return ProcRecord(pid, ps.ppid(), pgid, sid, "S", ps.create_time(), name,
                              int((t.user + t.system) * 100), ps.memory_info().rss, argv)
    except psutil.AccessDenied as exc:
        raise PermissionError(13, "access denied") from exc
    except psutil.Error:
        return None


def fill(out: dict[int, ProcRecord], want_argv: Callable[[str], bool] | None) -> int:
    import psutil

    unreadable = 0
    for pid in psutil.pids():
        try:
            p = read_record(pid, want_argv)
        except PermissionError:
            unreadable += 1
            continue
        if p is not None:
            out[pid] = p
    return unreadable


def read_argv(pid: int) -> list[str] | None:
    import psutil

    try:
        return list(psutil.Process(pid).cmdline())
    except psutil.Error:
        return None


def read_link(pid: int, what: str) -> str:
    import psutil

    try:
        p = psutil.Process(pid)
        return str(p.cwd() if what == "cwd" else p.exe())
    except psutil.Error:
        return ""


def owner(pid: int) -> int | None:
    import psutil

    try:
        return int(psutil.Process(pid).uids().real)
    except (psutil.Error, AttributeError):
        return None


def clock() -> float:
    return time.time()  # start is psutil's epoch create_time


def age_seconds(rec: ProcRecord, now: float | None = None) -> float:
    return max(0.0, (time.time() if now is None else now) - rec.start)


def fd_links(pid: int, only: tuple[int, ...] | None = None,
             limit: int | None = None,
             known: dict[int, str] | None = None) -> dict[int, str] | None:
    return None


def fd_mode(pid: int, fd: int) -> str | None:
    return None


def pipe_peer(pid: int, fd: int, ino: int, side: str) -> str:
    return "unknown"


def fd_info(pid: int, fd: int) -> dict[str, str] | None:
    return None


def root_pid_namespace() -> bool | None:
    return None


def link_holders(target: str, skip: set[int], mode: str | None = None) -> list[int]:
    return []


def pipe_holders(ino: int, skip: set[int], mode: str = "w") -> list[int]:
    return []


class UnixDiag:
    def peer(self, ino: int) -> tuple[int | None, int] | None:
        return None

    def close(self) -> None:
        pass
