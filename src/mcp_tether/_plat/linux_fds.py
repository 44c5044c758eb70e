"""The Linux backend's channel checks: open fds, pipe peers, sockets through sock_diag.

Guarantees:
- Reading never disturbs a process: a pipe's far end is checked by opening a fresh end
  through /proc and polling it with no events (nothing is read or written); sockets are
  asked about through NETLINK_SOCK_DIAG, which needs no privilege.
- Answers are "yes" / "no" / "unknown"; an fd that cannot be read is unknown (None),
  never "not open". A holder list names only the processes we can read: empty proves
  nothing.
"""

from __future__ import annotations

import os
from typing import Any


def _read(path: str) -> bytes:
    """A small /proc file, whole (the Linux backend's own reader is for the hot path)."""
    with open(path, "rb", buffering=0) as fh:
        return fh.read()


CHANNEL_DETAIL = True  # this backend sees fds and peers


def fd_links(pid: int, only: tuple[int, ...] | None = None,
             limit: int | None = None,
             known: dict[int, str] | None = None) -> dict[int, str] | None:
    base = f"/proc/{pid}/fd"
    if only is not None:
        names = [str(fd) for fd in only]
    else:
        try:
            names = os.listdir(base)
        except OSError:
            return None
        if limit is not None and len(names) > limit:
            return None
    out: dict[int, str] = {}
    for n in names:
        if known and int(n) in known:
            out[int(n)] = known[int(n)]
            continue
        try:
            out[int(n)] = os.readlink(f"{base}/{n}")
        except FileNotFoundError:
            continue  # not open (or closed meanwhile)
        except PermissionError:
            if only is not None:
                return None
            continue
        except (OSError, ValueError):
            continue
    return out


_MODES = {os.O_RDONLY: "r", os.O_WRONLY: "w", os.O_RDWR: "rw"}


def fd_mode(pid: int, fd: int) -> str | None:
    # The link's own mode bits say how the fd was opened (procfs sets S_IRUSR for
    # FMODE_READ, S_IWUSR for FMODE_WRITE): one lstat, not an open/read/close of
    # fdinfo for every pipe of every process adopted by init. A read-write answer, or
    # one that says neither (a procfs that does not fill the bits), is confirmed by
    # fdinfo's flags.
    path = f"/proc/{pid}/fd/{fd}"
    try:
        bits = os.lstat(path).st_mode & 0o600
    except OSError:
        return None
    if bits == 0o400:
        return "r"
    if bits == 0o200:
        return "w"
    try:
        data = _read(f"/proc/{pid}/fdinfo/{fd}")
        at = data.index(b"flags:")
        flags = int(data[at + 6 : data.index(b"\n", at)], 8)
    except (OSError, ValueError):
        return None
    return _MODES.get(flags & 3)


def pipe_peer(pid: int, fd: int, ino: int, side: str) -> str:
    # Opening an anonymous pipe through /proc gives a fresh end of the same pipe
    # (fifo_open never blocks or fails for pipefs). poll() with no events requested
    # then reports POLLHUP on a read end iff no write end is open anywhere, and POLLERR
    # on a write end iff no read end is (pipe_poll). Nothing is read or written.
    import select

    flags = (os.O_RDONLY if side == "r" else os.O_WRONLY) | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        f = os.open(f"/proc/{pid}/fd/{fd}", flags)
    except OSError:
        return "unknown"
    try:
        if os.fstat(f).st_ino != ino:  # the fd was replaced between readlink and open
            return "unknown"
        p = select.poll()
        p.register(f, 0)
        bit = select.POLLHUP if side == "r" else select.POLLERR
        gone = any(ev & bit for _, ev in p.poll(0))
    finally:
        os.close(f)
    return "no" if gone else "yes"


def fd_info(pid: int, fd: int) -> dict[str, str] | None:
    """/proc/PID/fdinfo/FD's first lines (pos, flags, mnt_id, ino) as text."""
    try:
        data = _read(f"/proc/{pid}/fdinfo/{fd}").decode("ascii", "replace")
    except OSError:
        return None
    out: dict[str, str] = {}
    for line in data.splitlines():
        key, sep, value = line.partition(":")
        if sep and key in ("pos", "flags", "mnt_id", "ino"):
            out[key] = value.strip()
    return out


def root_pid_namespace() -> bool | None:
    # Kernel threads are visible only from the initial pid namespace: kthreadd is pid 2
    # there, with the PF_KTHREAD flag. In any child namespace pid 2 is a user process
    # (or absent).
    try:
        data = _read("/proc/2/stat")
    except FileNotFoundError:
        return False
    except OSError:
        return None
    try:
        flags = int(data.rsplit(b")", 1)[1].split()[6])
    except (IndexError, ValueError):
        return None
    return bool(flags & 0x00200000)


def pipe_holders(ino: int, skip: set[int], mode: str = "w") -> list[int]:
    return link_holders(f"pipe:[{ino}]", skip, mode)


def link_holders(target: str, skip: set[int], mode: str | None = None) -> list[int]:
    # One pass over every readable /proc/*/fd: only run in rare cases (a parent gone,
    # yet a writer left; a far end to name), so its cost stays off the common path.
    out: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in skip:
            continue
        links = fd_links(int(name))
        for fd, link in (links or {}).items():
            if link != target:
                continue
            if mode is None:
                out.append(int(name))
                break
            m = fd_mode(int(name), fd)
            if m is not None and (mode in m or m == "rw"):
                out.append(int(name))
                break
    return out


NLMSG_ERROR = 2
SOCK_DIAG_BY_FAMILY = 20
NETLINK_SOCK_DIAG = 4
UDIAG_SHOW_PEER = 0x04
UNIX_DIAG_PEER = 2
UNIX_DIAG_SHUTDOWN = 6


class UnixDiag:
    """Ask the kernel (NETLINK_SOCK_DIAG) for a UNIX socket's peer: needs no privilege."""

    def __init__(self) -> None:
        self._sock: Any = None  # opened on first use
        self._seq = 0

    def peer(self, ino: int) -> tuple[int | None, int | None] | None:
        """(peer inode, 0 if the peer closed, None if unconnected; this socket's shutdown
        mask, None if the kernel does not say); None if not a UNIX socket or the kernel
        refused.

        The mask is the socket's own `sk_shutdown` (UNIX_DIAG_SHUTDOWN, Linux >= 3.10),
        which a stream peer's shutdown(2) also sets: RCV_SHUTDOWN (1) once nothing more
        can arrive (the peer shut down writing, or this side reading), SEND_SHUTDOWN (2)
        once nothing more can be sent (the peer shut down reading, or this side writing).
        """
        import socket
        import struct

        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW,
                                           NETLINK_SOCK_DIAG)
                self._sock.settimeout(1.0)
            self._seq += 1
            req = struct.pack("=BBHIIIII", socket.AF_UNIX, 0, 0, 0xFFFFFFFF, ino,
                              UDIAG_SHOW_PEER, 0xFFFFFFFF, 0xFFFFFFFF)
            self._sock.sendto(struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, 1,
                                          self._seq, 0) + req, (0, 0))
            data = self._sock.recv(65536)
        except (OSError, AttributeError):
            return None
        length, typ = struct.unpack_from("=IH", data)  # nlmsghdr: len, type
        if typ == NLMSG_ERROR or typ != SOCK_DIAG_BY_FAMILY or length > len(data):
            return None
        off, peer, shut = 32, None, None
        while off + 4 <= length:
            alen, atype = struct.unpack_from("=HH", data, off)
            if alen < 4:
                break
            if atype == UNIX_DIAG_PEER and alen >= 8:
                peer = struct.unpack_from("=I", data, off + 4)[0]
            elif atype == UNIX_DIAG_SHUTDOWN and alen >= 5:
                shut = data[off + 4]
            off += (alen + 3) & ~3
        return peer, shut

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
