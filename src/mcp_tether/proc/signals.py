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
    from collections.abc import Iterable

__all__ = ["signal_process", "signal_group", "SENT", "GONE", "DENIED"]

SENT = "sent"
GONE = "gone"
DENIED = "denied"


def signal_process(ident: ProcessId, sig: int) -> str:
    """Send `sig` to exactly the process `ident`, if it is still that process."""
    if platform.has_pidfd():
        try:
            fd = os.pidfd_open(ident.pid)
        except ProcessLookupError:
            return GONE
        except PermissionError:
            return DENIED
        try:
            if compare(ident) != SAME:  # checked after the fd pins the process
                return GONE
            try:
                _signal.pidfd_send_signal(fd, sig)
            except ProcessLookupError:
                return GONE
            except PermissionError:
                return DENIED
            return SENT
        finally:
            os.close(fd)
    if compare(ident) != SAME:
        return GONE
    try:
        os.kill(ident.pid, sig)
    except ProcessLookupError:
        return GONE
    except PermissionError:
        return DENIED
    return SENT


def signal_group(pgid: int, sig: int, members: Iterable[ProcessId] = ()) -> str:
    """killpg(pgid, sig), only while one of `members` (known processes) is still in it.

    A process group id is the leader's pid; it cannot be reused while any process is in
    the group. So a live, identified member with that pgid proves the group is ours.
    With no members given, the leader (pid == pgid) must be identified by the caller
    through `members`; an empty list means we cannot prove anything: nothing is sent.
    """
    proven = False
    for ident in members:
        info = read_info(ident.pid)
        if (
            info is not None
            and not info.exited
            and info.start == ident.start
            and info.pgid == pgid
        ):
            proven = True
            break
    if not proven:
        return GONE
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return GONE
    except PermissionError:
        return DENIED
    return SENT
