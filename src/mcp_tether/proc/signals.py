"""Signals that re-check identity immediately before they are sent.

With pidfds the check and the send are tied: open a pidfd, confirm the start time of
the process it refers to, send through the fd. Without pidfds a tiny window remains
between the check and kill(2); we accept it as psutil does.
Outcomes: "sent", "gone" (exited, zombie, or pid reused: nothing sent), "denied" (EPERM:
we do not know that it is gone, and we did not touch it).
"""

from __future__ import annotations

import os
import signal as _signal

from mcp_tether import platform
from mcp_tether.proc.identity import SAME, ProcessId, compare, read_info

TYPE_CHECKING = False  # typing/collections.abc stay off the start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["Pinned", "pin", "signal_process", "signal_group", "SENT", "GONE", "DENIED"]

SENT = "sent"
GONE = "gone"
DENIED = "denied"


class Pinned:
    """A process held from identification to signal (`pin()` makes one).

    With pidfds (Linux >= 5.3) `fd` is a pidfd opened *before* the identity was checked:
    it refers to that process for as long as it is open, so a pid reused after the check
    cannot be hit, however quickly (the start time has a 10 ms granularity; the fd has
    none). Without pidfds `fd` is None and `signal()` re-checks (pid, start) right before
    kill(2), leaving the tiny window psutil also accepts.
    Close it (or use `with`) when done; signalling after `close()` sends nothing ("gone").
    """

    __slots__ = ("ident", "fd", "_closed")

    def __init__(self, ident: ProcessId, fd: int | None) -> None:
        self.ident = ident
        self.fd = fd
        self._closed = False

    def signal(self, sig: int) -> str:
        """SENT, GONE (exited, reaped, or pid reused: nothing sent) or DENIED (EPERM)."""
        if self._closed:
            return GONE
        if self.fd is None:
            if compare(self.ident) != SAME:
                return GONE
            return send(os.kill, self.ident.pid, sig)
        return send(_signal.pidfd_send_signal, self.fd, sig)

    def close(self) -> None:
        if not self._closed and self.fd is not None:
            os.close(self.fd)
        self._closed = True

    def __enter__(self) -> Pinned:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Pinned({self.ident!r}, fd={self.fd})"


def pin(ident: ProcessId) -> Pinned | None:
    """Hold `ident` for signalling: None if it is not running as that process now.

    The pidfd is opened first and the identity checked after, so the check is about the
    very process the fd refers to. A zombie counts as gone.
    """
    try:
        fd = platform.pidfd_open(ident.pid)  # None: re-check identity before kill(2)
    except ProcessLookupError:
        return None
    if compare(ident) != SAME:
        if fd is not None:
            os.close(fd)
        return None
    return Pinned(ident, fd)


def signal_process(ident: ProcessId, sig: int) -> str:
    """Send `sig` to exactly the process `ident`, if it is still that process."""
    pinned = pin(ident)
    if pinned is None:
        return GONE
    with pinned:
        return pinned.signal(sig)


def signal_group(pgid: int, sig: int, members: Iterable[ProcessId] = ()) -> str:
    """killpg(pgid, sig), only while one of `members` (known processes) is still in it.

    A process group id is the leader's pid; it cannot be reused while any process is in
    the group. So a live, identified member with that pgid proves the group is ours.
    With no members given, the leader (pid == pgid) must be identified by the caller
    through `members`; an empty list means we cannot prove anything: nothing is sent.
    A member that is the caller's own unreaped child proves the group even as a zombie
    (the caller must not reap in another thread meanwhile).
    """
    proven = False
    me = os.getpid()
    for ident in members:
        info = read_info(ident.pid)
        if (
            info is not None
            # A zombie proves it too if it is our own child: only we can reap it, so
            # until we do, its pid (and the group it is still in) cannot be reused.
            and (not info.exited or info.ppid == me)
            and info.start == ident.start
            and info.pgid == pgid
        ):
            proven = True
            break
    if not proven:
        return GONE
    return send(os.killpg, pgid, sig)


def send(kill: Callable[[int, int], None], target: int, sig: int) -> str:
    """`kill(target, sig)` (kill, killpg or pidfd_send_signal) as SENT, GONE or DENIED."""
    try:
        kill(target, sig)
    except ProcessLookupError:
        return GONE
    except PermissionError:
        return DENIED
    return SENT
