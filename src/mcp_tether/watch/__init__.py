"""Watchers that notice a client is gone, without reading a byte of the protocol.

- Parent death: `ParentWatch` holds the backend's exit descriptor on the parent (a pidfd
  on Linux, a kqueue with EVFILT_PROC/NOTE_EXIT on macOS) that turns readable when it
  exits, and falls back to comparing getppid() with the parent we started under
  (portable; a reparented process sees a new ppid).
  PR_SET_PDEATHSIG is in `platform`.
- stdin hang-up: `hangup_events(fd)` says which poll(2) events mean "every writer is
  gone" for what fd 0 is: POLLHUP on a pipe/FIFO; POLLRDHUP|POLLHUP on a socket (Node
  hosts give a UNIX socketpair; a half-close shows *only* as POLLRDHUP, which the
  portable backend does not have: there only a full close is seen). A TTY, a
  regular file or /dev/null can never hang up: None, rely on parent death instead.
  Polling with POLLIN unrequested never consumes data and does not wake for it.
- stdin at /dev/null: `is_null_device(fd)`. It never hangs up, but it is at end-of-file
  from the start: no client can ever send a byte, which is what the spec's "stdin
  reaches EOF" means. The guard and the library helper treat it as the client gone.
"""

from __future__ import annotations

import os
import select
import stat

from mcp_tether import platform

__all__ = ["ParentWatch", "hangup_events", "HANGUP_MASK", "is_null_device"]

POLLRDHUP = getattr(select, "POLLRDHUP", 0x2000)
HANGUP_MASK = select.POLLHUP | select.POLLERR | POLLRDHUP | getattr(select, "POLLNVAL", 0x20)


def hangup_events(fd: int) -> int | None:
    """poll(2) events to register on `fd` to learn of a hang-up; None if it cannot hang up."""
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    if stat.S_ISFIFO(st.st_mode):
        return 0  # POLLHUP/POLLERR are always reported, never need asking for
    if stat.S_ISSOCK(st.st_mode):
        return platform.backend.SOCKET_HANGUP  # 0: a half-close goes unnoticed
    return None  # tty, regular file, /dev/null, ...


def is_null_device(fd: int) -> bool:
    """Is `fd` /dev/null (at EOF from the start)?"""
    try:
        st, null = os.fstat(fd), os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == null.st_rdev


class ParentWatch:
    """Knows when the parent we started under is gone.

    Create it as early as possible: if the parent is already gone at creation (our ppid
    is no longer `expected_ppid`), `gone()` is true at once.
    """

    def __init__(self, expected_ppid: int | None = None) -> None:
        self.ppid = os.getppid() if expected_ppid is None else expected_ppid
        self.ppid_check = True
        self.fd: int | None = None
        if self.ppid > 1:
            try:  # a pidfd on Linux, a kqueue watching NOTE_EXIT on macOS
                self.fd = platform.exit_fd(self.ppid)
            except OSError:
                self.fd = None
        # Re-check after opening: the parent may have died (and we been reparented)
        # before the fd existed, in which case the fd could even name a reused pid.
        if os.getppid() != self.ppid and self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def beyond(self) -> None:
        """We are about to become a grandchild of the watched process (a front forks us):
        from now on only the pidfd can tell; without one, watching is given up."""
        self.ppid_check = False
        if self.fd is None:
            self.ppid = 0

    def gone(self) -> bool:
        if self.ppid_check and os.getppid() != self.ppid:
            return True
        if self.fd is not None:
            p = select.poll()
            p.register(self.fd, select.POLLIN)
            return bool(p.poll(0))
        return False

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
