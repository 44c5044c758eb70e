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


# ----- how a process waits: its epoll sets, its threads' syscalls, its I/O counters ----

_EVENTPOLL = "anon_inode:[eventpoll]"
_IO_URING = "anon_inode:[io_uring]"
# Syscall numbers by machine: the read family (arg0 is the fd read), the poll family
# (the watched set is in the caller's memory: unreadable here), the epoll waits (the
# watched set is in the epoll's fdinfo) and io_uring_enter (reads may be queued there).
_SYSCALLS = {
    "x86_64": {"read": (0, 17, 19, 295, 327, 45, 47, 299), "poll": (7, 23, 270, 271),
               "epoll": (232, 281, 441), "uring": (426,)},
    "aarch64": {"read": (63, 67, 65, 69, 286, 207, 212, 243), "poll": (72, 73),
                "epoll": (22, 441), "uring": (426,)},
}
_KINDS = {nr: kind for kind, nrs in _SYSCALLS.get(os.uname().machine, {}).items()
          for nr in nrs}


def epoll_items(pid: int, links: dict[int, str] | None = None
                ) -> tuple[list[tuple[int, int, tuple[int, int] | None]], bool] | None:
    """Every item of every epoll set `pid` holds: (tfd, events, the watched file's
    (st_dev, st_ino) or None), and whether it holds an io_uring (reads may wait there,
    unseen). None: its fds cannot be read.

    tfd is the fd number the item was added under, in `pid`'s table; it may since have
    been closed while a dup keeps the file watched, so callers match the open file by
    `ino:`/`sdev:` (printed by kernels >= 3.19), by tfd's link only where they are missing."""
    if links is None:
        links = fd_links(pid)
    if links is None:
        return None
    items: list[tuple[int, int, tuple[int, int] | None]] = []
    uring = False
    for fd, link in links.items():
        uring |= link == _IO_URING
        if link != _EVENTPOLL:
            continue
        try:
            data = _read(f"/proc/{pid}/fdinfo/{fd}").decode("ascii", "replace")
        except OSError:
            return None
        for line in data.splitlines():
            if not line.startswith("tfd:"):
                continue
            f = line.split()
            try:
                tfd, events = int(f[1]), int(f[3], 16)
                ino = next((int(x[4:], 16) for x in f if x.startswith("ino:")), None)
                sdev = next((int(x[5:], 16) for x in f if x.startswith("sdev:")), None)
            except (IndexError, ValueError):
                return None
            # sdev is the kernel's own dev_t (major << 20 | minor), not stat's encoding
            key = (os.makedev(sdev >> 20, sdev & 0xFFFFF), ino) \
                if ino is not None and sdev is not None else None
            items.append((tfd, events, key))
    return items, uring


def fd_file(pid: int, fd: int) -> tuple[int, int] | None:
    """(st_dev, st_ino) of the file `pid`'s `fd` refers to; None if unreadable."""
    try:
        st = os.stat(f"/proc/{pid}/fd/{fd}")  # follows the magic link to the open file
    except OSError:
        return None
    return st.st_dev, st.st_ino


def thread_waits(pid: int) -> list[tuple[int, str, int | None]] | None:
    """Each thread of `pid`: (tid, what it waits in, the fd for "read").

    What: "read" (blocked in the read family on that fd), "epoll", "poll" (poll or
    select: what it watches cannot be read), "uring", "running" (on a CPU, or runnable
    in user space), "other" (any other syscall, or none). None: cannot tell (another
    user's process without the privilege to trace it, or a machine not in the table)."""
    if not _KINDS:
        return None
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    out: list[tuple[int, str, int | None]] = []
    for t in tids:
        try:
            text = _read(f"/proc/{pid}/task/{t}/syscall").decode("ascii", "replace").split()
        except FileNotFoundError:
            continue  # the thread ended meanwhile
        except OSError:
            return None
        if not text:
            return None
        if text[0] == "running":
            out.append((int(t), "running", None))
            continue
        try:
            nr = int(text[0])
            kind = _KINDS.get(nr, "other")
            fd = int(text[1], 16) if kind == "read" else None
        except (IndexError, ValueError):
            return None
        out.append((int(t), kind, fd))
    return out


def io_counters(pid: int) -> tuple[int, int, int, int] | None:
    """(rchar, wchar, syscr, syscw) of `pid` from /proc/PID/io; None if unreadable
    (another user's process without the right to trace it, or gone)."""
    try:
        data = _read(f"/proc/{pid}/io").decode("ascii", "replace")
    except OSError:
        return None
    got = dict(line.split(":", 1) for line in data.splitlines() if ":" in line)
    try:
        return (int(got["rchar"]), int(got["wchar"]), int(got["syscr"]), int(got["syscw"]))
    except (KeyError, ValueError):
        return None


def environ(pid: int) -> dict[str, str] | None:
    """The environment `pid` was started with (/proc/PID/environ); None if unreadable."""
    try:
        data = _read(f"/proc/{pid}/environ")
    except OSError:
        return None
    out: dict[str, str] = {}
    for item in data.split(b"\0"):
        name, eq, value = item.partition(b"=")
        if eq and name:
            out[name.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
    return out


# ----- endpoints: what a process's terminals, pipes and sockets connect it to ----------

PTY_MASTERS = ("/dev/ptmx", "/dev/pts/ptmx")  # the multiplexer device's two names
_ACCEPTCON = 0x10000  # /proc/net/unix Flags: a listening socket (__SO_ACCEPTCON)
_UNIX_CONNECTED = 3  # /proc/net/unix St: SS_CONNECTED
_TCP_ESTABLISHED, _TCP_LISTEN = 0x01, 0x0A

Endpoint = tuple[str, str, str, "str | None", str]  # see `endpoints`


def endpoints(pid: int) -> list[Endpoint] | None:
    """Each pseudo-terminal master, pipe and socket `pid` holds: (kind, role, near, far,
    name).

    kind "pty": role "master", near the device's name. kind "pipe": role "r" or "w" (the
    end it holds); near and far are the pipe's link (`pipe:[N]`: one inode, both ends).
    kind "unix" / "tcp": role "listen", "accepted" (the server side of a connection: a
    connected stream socket bearing the name of a listening one) or "client"; near is
    its link (`socket:[N]`), far the peer's (unix: sock_diag; tcp: the socket of this
    machine whose local and remote addresses are ours swapped), None when there is
    none on this machine; name, the address a unix socket is bound to ("" if none), or
    a listening TCP socket's (`127.0.0.1:8080`, `[::1]:8080`).
    Links are what `endpoint_holders` matches. None: the fds
    cannot be read (another user's process, gone)."""
    links = fd_links(pid)
    if links is None:
        return None
    out: set[Endpoint] = set()
    socks: dict[int, str] = {}
    for fd, link in links.items():
        if link in PTY_MASTERS:
            out.add(("pty", "master", link, None, link))
        elif link.startswith("pipe:["):
            mode = fd_mode(pid, fd)
            for end in (mode or ""):  # "rw" (a pipe reopened read-write): both ends
                out.add(("pipe", end, link, link, ""))
        elif link.startswith("socket:["):
            socks[int(link[8:-1])] = link
    if socks:
        out.update(_unix_endpoints(pid, socks))
        out.update(_tcp_endpoints(pid, socks))
    return sorted(out, key=lambda e: (e[0], e[1], e[2]))


def _unix_table(pid: int) -> dict[int, tuple[int, int, str]]:
    """inode -> (flags, state, name) of every unix socket in `pid`'s network namespace."""
    try:
        data = _read(f"/proc/{pid}/net/unix").decode("utf-8", "surrogateescape")
    except OSError:
        return {}
    out: dict[int, tuple[int, int, str]] = {}
    for line in data.splitlines()[1:]:
        f = line.split(None, 7)  # Num RefCount Protocol Flags Type St Inode [Path]
        try:
            out[int(f[6])] = (int(f[3], 16), int(f[5], 16), f[7] if len(f) > 7 else "")
        except (IndexError, ValueError):
            continue
    return out


def _unix_endpoints(pid: int, socks: dict[int, str]) -> list[Endpoint]:
    table = _unix_table(pid)
    listening = {name for flags, _st, name in table.values() if flags & _ACCEPTCON and name}
    out: list[Endpoint] = []
    diag: UnixDiag | None = None
    try:
        for ino, link in socks.items():
            row = table.get(ino)
            if row is None:
                continue
            flags, state, name = row
            if flags & _ACCEPTCON:
                out.append(("unix", "listen", link, None, name))
                continue
            if state != _UNIX_CONNECTED or name not in listening:
                out.append(("unix", "client", link, None, name))
                continue
            diag = diag or UnixDiag()
            got = diag.peer(ino)
            peer = got[0] if got is not None else None
            out.append(("unix", "accepted", link, f"socket:[{peer}]" if peer else None, name))
    finally:
        if diag is not None:
            diag.close()
    return out


def _tcp_address(text: str) -> tuple[bytes, int]:
    """/proc/net/tcp's `HEX:PORT` as (address bytes, port): each 32-bit word is in host
    order; an IPv4-mapped IPv6 address reads as its IPv4 one."""
    host, _, port = text.partition(":")
    raw = bytes.fromhex(host)
    raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    if len(raw) == 16 and raw[:12] == b"\0" * 10 + b"\xff\xff":
        raw = raw[12:]
    return raw, int(port, 16)


def _tcp_text(address: tuple[bytes, int]) -> str:
    """`_tcp_address`'s answer as people write it: `127.0.0.1:8080`, `[::1]:8080`."""
    import ipaddress

    ip = ipaddress.ip_address(address[0])
    return f"[{ip}]:{address[1]}" if ip.version == 6 else f"{ip}:{address[1]}"


def _tcp_table(pid: int) -> list[tuple[int, int, tuple[bytes, int], tuple[bytes, int]]]:
    """(inode, state, local, remote) of every TCP socket in `pid`'s network namespace."""
    rows = []
    for name in ("tcp", "tcp6"):
        try:
            data = _read(f"/proc/{pid}/net/{name}").decode("ascii", "replace")
        except OSError:
            continue
        for line in data.splitlines()[1:]:
            f = line.split()
            try:
                rows.append((int(f[9]), int(f[3], 16), _tcp_address(f[1]), _tcp_address(f[2])))
            except (IndexError, ValueError):
                continue
    return rows


def _tcp_endpoints(pid: int, socks: dict[int, str]) -> list[Endpoint]:
    rows = _tcp_table(pid)
    mine = [r for r in rows if r[0] in socks]
    if not mine:
        return []
    listening = {local for _ino, st, local, _remote in rows if st == _TCP_LISTEN}
    by_ends = {(local, remote): ino for ino, st, local, remote in rows
               if st == _TCP_ESTABLISHED and ino}
    out: list[Endpoint] = []
    for ino, st, local, remote in mine:
        link = socks[ino]
        if st == _TCP_LISTEN:
            out.append(("tcp", "listen", link, None, _tcp_text(local)))
        elif st == _TCP_ESTABLISHED:
            # A listener on every address (0.0.0.0 or ::, which takes IPv4 too) counts.
            if local in listening or (bytes(4), local[1]) in listening \
                    or (bytes(16), local[1]) in listening:
                peer = by_ends.get((remote, local))
                out.append(("tcp", "accepted", link, f"socket:[{peer}]" if peer else None, ""))
            else:
                out.append(("tcp", "client", link, None, ""))
    return out


def endpoint_holders(targets: set[str]) -> dict[str, dict[int, str]]:
    """For each link text of `targets` (`pipe:[N]`, `socket:[N]`), every process that
    holds it and how: "r", "w" or "rw" for a pipe (the ends it holds), "" for a socket.
    One pass over every readable /proc/*/fd: a process whose fds cannot be read is not
    named (an empty answer proves nothing)."""
    out: dict[str, dict[int, str]] = {t: {} for t in targets}
    if not targets:
        return out
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        links = fd_links(pid)
        for fd, link in (links or {}).items():
            if link not in out:
                continue
            how = out[link].get(pid, "")
            if link.startswith("pipe:["):
                mode = fd_mode(pid, fd) or ""
                how = "".join(m for m in "rw" if m in how or m in mode)
            out[link][pid] = how
    return out
