"""What one fd of a process is on Linux, as /proc and sock_diag say: the readers under the
Linux backend's channel checks (`linux_fds`) and the simulated libproc (`darwin_sim`).

Guarantees:
- Reading never disturbs a process: a pipe's far end is checked by opening a fresh end
  through /proc and polling it with no events (nothing is read or written); sockets are
  asked about through NETLINK_SOCK_DIAG, which needs no privilege.
- An fd that cannot be read is None (a pipe's far end "unknown"), never "not open".
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["ACCESS", "TcpRow", "UnixDiag", "fd_info", "fd_mode", "pipe_peer", "read_whole",
           "tcp_table"]


def read_whole(path: str) -> bytes:
    """A small /proc file, whole (the Linux backend's own reader is for the hot path)."""
    with open(path, "rb", buffering=0) as fh:
        return fh.read()


# fdinfo's flags & O_ACCMODE -> how the fd was opened
ACCESS = {os.O_RDONLY: "r", os.O_WRONLY: "w", os.O_RDWR: "rw"}


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
        data = read_whole(f"/proc/{pid}/fdinfo/{fd}")
        at = data.index(b"flags:")
        flags = int(data[at + 6 : data.index(b"\n", at)], 8)
    except (OSError, ValueError):
        return None
    return ACCESS.get(flags & 3)


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
        data = read_whole(f"/proc/{pid}/fdinfo/{fd}").decode("ascii", "replace")
    except OSError:
        return None
    out: dict[str, str] = {}
    for line in data.splitlines():
        key, sep, value = line.partition(":")
        if sep and key in ("pos", "flags", "mnt_id", "ino"):
            out[key] = value.strip()
    return out


NLMSG_ERROR = 2
SOCK_DIAG_BY_FAMILY = 20
NETLINK_SOCK_DIAG = 4
UDIAG_SHOW_NAME, UDIAG_SHOW_PEER = 0x01, 0x04
UNIX_DIAG_NAME, UNIX_DIAG_PEER, UNIX_DIAG_SHUTDOWN = 0, 2, 6


class UnixDiag:
    """Ask the kernel (NETLINK_SOCK_DIAG) for a UNIX socket's peer: needs no privilege."""

    def __init__(self) -> None:
        self._sock: Any = None  # opened on first use
        self._seq = 0

    def peer(self, ino: int) -> tuple[int | None, int | None] | None:
        """(peer inode, 0 if the peer closed, None if unconnected; this socket's shutdown
        mask, None if the kernel does not say); None if not a UNIX socket or the kernel
        refused (`info`)."""
        got = self.info(ino)
        return None if got is None else (got[0], got[1])

    def info(self, ino: int) -> tuple[int | None, int | None, int, str] | None:
        """`peer`'s two answers, then the socket's state (10, TCP_LISTEN, for a listener)
        and the name it is bound to ("" none; an abstract one as /proc/net/unix shows it,
        "@..."); None if not a UNIX socket or the kernel refused.

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
                              UDIAG_SHOW_PEER | UDIAG_SHOW_NAME, 0xFFFFFFFF, 0xFFFFFFFF)
            self._sock.sendto(struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, 1,
                                          self._seq, 0) + req, (0, 0))
            data = self._sock.recv(65536)
        except (OSError, AttributeError):
            return None
        length, typ = struct.unpack_from("=IH", data)  # nlmsghdr: len, type
        if typ == NLMSG_ERROR or typ != SOCK_DIAG_BY_FAMILY or length > len(data):
            return None
        state = data[18]  # unix_diag_msg: family, type, state, pad, ino, cookie
        off, peer, shut, name = 32, None, None, ""
        while off + 4 <= length:
            alen, atype = struct.unpack_from("=HH", data, off)
            if alen < 4:
                break
            if atype == UNIX_DIAG_PEER and alen >= 8:
                peer = struct.unpack_from("=I", data, off + 4)[0]
            elif atype == UNIX_DIAG_SHUTDOWN and alen >= 5:
                shut = data[off + 4]
            elif atype == UNIX_DIAG_NAME and alen > 4:
                raw = data[off + 4 : off + alen]
                name = ("@" + raw[1:].decode("utf-8", "surrogateescape") if raw[:1] == b"\0"
                        else raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape"))
            off += (alen + 3) & ~3
        return peer, shut, state, name

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


_Addr = tuple[bytes, int]
TcpRow = tuple[int, int, _Addr, _Addr]  # (inode, state, local, remote)


def _tcp_address(text: str) -> _Addr:
    """/proc/net/tcp's `HEX:PORT` as (address bytes, port): each 32-bit word is in host
    order; an IPv4-mapped IPv6 address reads as its IPv4 one."""
    host, _, port = text.partition(":")
    raw = bytes.fromhex(host)
    raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    if len(raw) == 16 and raw[:12] == b"\0" * 10 + b"\xff\xff":
        raw = raw[12:]
    return raw, int(port, 16)


def tcp_table(pid: int) -> list[TcpRow]:
    """(inode, state, local, remote) of every TCP socket in `pid`'s network namespace."""
    rows = []
    for name in ("tcp", "tcp6"):
        try:
            data = read_whole(f"/proc/{pid}/net/{name}").decode("ascii", "replace")
        except OSError:
            continue
        for line in data.splitlines()[1:]:
            f = line.split()
            try:
                rows.append((int(f[9]), int(f[3], 16), _tcp_address(f[1]), _tcp_address(f[2])))
            except (IndexError, ValueError):
                continue
    return rows
