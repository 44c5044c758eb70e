"""Linux backend of `proc.table`: /proc read directly, sockets through sock_diag.

Speed matters here (`ps` must stay near `ps -e`): one stat read per process, and
procfs hands over a whole file in one read(2). argv is read only when asked for.
"""

from __future__ import annotations

import os

from mcp_tether import platform
from mcp_tether.proc._record import ProcRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

CHANNEL_DETAIL = True
_PAGE = os.sysconf("SC_PAGE_SIZE")
_PF_KTHREAD = 0x00200000


def _read_all(path: str, size: int = 65536) -> bytes:
    # procfs hands over everything available up to `size` in one read: read again only
    # when the buffer came back full (saves a syscall per file on every process).
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.read(fd, size)
        if len(data) < size:
            return data
        chunks = [data]
        while True:
            b = os.read(fd, size)
            if not b:
                return b"".join(chunks)
            chunks.append(b)
    finally:
        os.close(fd)


def read_record(pid: int, want_argv: Callable[[str], bool] | None) -> ProcRecord | None:
    """One process; None if gone, a kernel thread or a zombie. PermissionError if the
    process exists but may not be read."""
    try:
        data = _read_all(f"/proc/{pid}/stat", 4096)
    except (FileNotFoundError, ProcessLookupError):
        return None
    return _parse(pid, data, want_argv)


def _parse(pid: int, data: bytes, want_argv: Callable[[str], bool] | None) -> ProcRecord | None:
    # Inline rather than split_stat: fields up to rss only (split(None, 22) allocates 23
    # words, not 50), on every process of the machine.
    rpar = data.rindex(b")")
    comm = data[data.index(b"(") + 1 : rpar].decode(errors="replace")
    f = data[rpar + 2 :].split(None, 22)
    # f[k] is stat field k+3: state 3, ppid 4, pgrp 5, session 6, flags 9, utime 14,
    # stime 15, starttime 22, rss 24.
    state = f[0]
    if int(f[6]) & _PF_KTHREAD or state in (b"Z", b"X", b"x"):
        return None
    argv = None
    if want_argv is None or want_argv(comm):
        argv = read_argv(pid)
        if argv is None:
            return None
    return ProcRecord(pid, int(f[1]), int(f[2]), int(f[3]), state.decode(), float(f[19]),
                      comm, int(f[11]) + int(f[12]), int(f[21]) * _PAGE, argv)


def fill(out: dict[int, ProcRecord], want_argv: Callable[[str], bool] | None) -> int:
    """Every process into `out`; the number that may not be read. The hot loop of `ps`:
    one open/read/close of stat per process, names judged once per distinct comm."""
    if want_argv is not None:
        want_argv = _memo(want_argv)
    unreadable = 0
    open_, read, close, flags = os.open, os.read, os.close, os.O_RDONLY | os.O_CLOEXEC
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fd = open_(f"/proc/{name}/stat", flags)
            try:
                data = read(fd, 4096)
            finally:
                close(fd)
            p = _parse(int(name), data, want_argv)
        except PermissionError:
            unreadable += 1
            continue
        except (OSError, ValueError, IndexError):
            continue  # vanished mid-read, or a stat we cannot parse
        if p is not None:
            out[p.pid] = p
    return unreadable


def _memo(want: Callable[[str], bool]) -> Callable[[str], bool]:
    seen: dict[str, bool] = {}

    def memo(comm: str) -> bool:
        got = seen.get(comm)
        if got is None:
            got = seen[comm] = want(comm)
        return got

    return memo


def read_argv(pid: int) -> list[str] | None:
    try:
        raw = _read_all(f"/proc/{pid}/cmdline")
    except (FileNotFoundError, ProcessLookupError):
        return None
    if not raw:
        return []
    # One decode, then split: not a decode per word.
    parts = raw.decode(errors="replace").split("\0")
    if parts[-1] == "":
        parts.pop()
    # A process that rewrote its title (node's process.title: `npm exec X`) shows one
    # space-joined string without the trailing NUL.
    return parts


def read_link(pid: int, what: str) -> str:
    try:
        return os.readlink(f"/proc/{pid}/{what}")
    except OSError:
        return ""


def owner(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def clock() -> float:
    """The instant ages are counted to: seconds since boot, as start times are."""
    try:
        return float(_read_all("/proc/uptime", 256).split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0


def age_seconds(rec: ProcRecord, now: float | None = None) -> float:
    return max(0.0, (clock() if now is None else now) - rec.start / platform.clock_ticks())


# ----- open files and channels -------------------------------------------------------


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
        data = _read_all(f"/proc/{pid}/fdinfo/{fd}", 4096)
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
        data = _read_all(f"/proc/{pid}/fdinfo/{fd}", 4096).decode("ascii", "replace")
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
        data = _read_all("/proc/2/stat", 4096)
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

    def peer(self, ino: int) -> tuple[int | None, int] | None:
        """(peer inode, 0 if the peer closed, None if unconnected; the peer's shutdown
        mask); None if not a UNIX socket or the kernel refused."""
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
        off, peer, shut = 32, None, 0
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
