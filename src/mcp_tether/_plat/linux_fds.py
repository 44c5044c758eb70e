"""The Linux backend's channel checks: open fds, pipe peers, sockets through sock_diag.

Guarantees:
- Reading never disturbs a process: a pipe's far end is checked by opening a fresh end
  through /proc and polling it with no events (nothing is read or written); sockets are
  asked about through NETLINK_SOCK_DIAG, which needs no privilege.
- Ends (`_plat.ends`) are named from /proc's links: a pipe end is its link and the fd's
  mode (`pipe:[N]:r`, `pipe:[N]:w`; the pipe's two ends share the channel `pipe:[N]`), a
  socket its link (`socket:[N]`), anything else its link text.
- Answers are "yes" / "no" / "unknown"; an fd that cannot be read is unknown (None),
  never "not open". A holder list names only the processes we can read: empty proves
  nothing.

The readers under the checks (an fd's mode and fdinfo, a pipe's far end, sock_diag, the
TCP table) are `linux_fdread`'s, which the simulated libproc shares.
"""

from __future__ import annotations

import os

from mcp_tether._plat.ends import (
    CLOSED,
    OPEN,
    UNCONNECTED,
    UNKNOWN,
    End,
    Far,
    FdState,
    Sock,
    kind_of_path,
    tcp_text,
)
from mcp_tether._plat.linux_fdread import (
    ACCESS,
    TcpRow,
    UnixDiag,
    fd_info,
    fd_mode,
    pipe_peer,
    read_whole,
    tcp_table,
)

CHANNEL_DETAIL = True  # this backend sees fds and peers


def _fd_links(pid: int, only: tuple[int, ...] | None = None,
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


def root_pid_namespace() -> bool | None:
    # Kernel threads are visible only from the initial pid namespace: kthreadd is pid 2
    # there, with the PF_KTHREAD flag. In any child namespace pid 2 is a user process
    # (or absent).
    try:
        data = read_whole("/proc/2/stat")
    except FileNotFoundError:
        return False
    except OSError:
        return None
    try:
        flags = int(data.rsplit(b")", 1)[1].split()[6])
    except (IndexError, ValueError):
        return None
    return bool(flags & 0x00200000)


def _all_links() -> dict[str, list[tuple[int, int]]]:
    """link -> every (pid, fd) open on it, of every process whose fds can be read."""
    out: dict[str, list[tuple[int, int]]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        for fd, link in (_fd_links(int(name)) or {}).items():
            if link.startswith(("pipe:[", "socket:[")):
                out.setdefault(link, []).append((int(name), fd))
    return out


# ----- ends: what an fd is open on, its far end, who holds that ----------------------------


def _end(pid: int, fd: int, link: str) -> End:
    if link.startswith("pipe:["):
        mode = fd_mode(pid, fd)  # which end: one lstat of the fd's link
        ino = _link_ino(link)
        if mode == "rw":  # a pipe reopened read-write through /proc holds both ends
            return End("pipe", f"{link}:r", link, link, mode, ino, f"{link}:w")
        return End("pipe", f"{link}:{mode}" if mode else link, link, link, mode, ino)
    if link.startswith("socket:["):
        return End("socket", link, link, link, None, _link_ino(link))
    return End(kind_of_path(link), link, link, link)


def _link_ino(link: str) -> int | None:
    try:
        return int(link[link.index("[") + 1 : link.index("]")])
    except ValueError:
        return None


def fd_ends(pid: int, only: tuple[int, ...] | None = None, limit: int | None = None,
            known: dict[int, End] | None = None) -> dict[int, End] | None:
    """fd -> the `End` it is open on; None if the fds cannot be read. `only`: just these
    fds (those not open are absent); `limit`: None past that many fds; `known`: ends this
    caller already read, taken as they are for fds still open."""
    links = _fd_links(pid, only, limit, {fd: e.name for fd, e in known.items()}
                     if known else None)
    if links is None:
        return None
    return {fd: known[fd] if known and fd in known and known[fd].name == link
            else _end(pid, fd, link) for fd, link in links.items()}


def fd_state(pid: int, fd: int) -> FdState | None:
    """How `fd` was opened (fdinfo's flags) and what open file it is (pos, flags without
    close-on-exec, mnt_id, ino: what two copies of one open file share)."""
    info = fd_info(pid, fd)
    try:
        flags = int(info["flags"], 8) if info else None
    except (KeyError, ValueError):
        flags = None
    if info is None or flags is None:
        return None
    access = ACCESS.get(flags & 3, "rw")
    return FdState(access, bool(flags & _O_CLOEXEC),
                   (info.get("pos"), flags & ~_O_CLOEXEC, info.get("mnt_id"), info.get("ino")))


_O_CLOEXEC = 0o2000000
_RCV_SHUTDOWN, _SEND_SHUTDOWN = 1, 2  # a socket's sk_shutdown bits, as sock_diag says them


# ----- what a socket is for: listening, accepted, client; its loopback peer -----------------

_ACCEPTCON = 0x10000  # /proc/net/unix Flags: a listening socket (__SO_ACCEPTCON)
_UNIX_CONNECTED = 3  # /proc/net/unix St: SS_CONNECTED
_TCP_ESTABLISHED, _TCP_LISTEN = 0x01, 0x0A

def _unix_table(pid: int) -> dict[int, tuple[int, int, str]]:
    """inode -> (flags, state, name) of every unix socket in `pid`'s network namespace."""
    try:
        data = read_whole(f"/proc/{pid}/net/unix").decode("utf-8", "surrogateescape")
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


def _tcp_role(row: TcpRow, rows: list[TcpRow]) -> tuple[str, int | None]:
    """(listen | accepted | client | "", the other side's inode on this machine) of one
    TCP socket among `rows` (its namespace's): accepted when its local address is one a
    listener has (0.0.0.0 or ::, which takes IPv4 too, counts for every address); the
    other side is the socket whose local and remote addresses are this one's swapped."""
    ino, st, local, remote = row
    if st == _TCP_LISTEN:
        return "listen", None
    if st != _TCP_ESTABLISHED:
        return "", None
    listening = {lo for _i, s, lo, _r in rows if s == _TCP_LISTEN}
    if local in listening or (bytes(4), local[1]) in listening \
            or (bytes(16), local[1]) in listening:
        peer = next((i for i, s, lo, rem in rows
                     if s == _TCP_ESTABLISHED and i and lo == remote and rem == local), None)
        return "accepted", peer
    return "client", None


def _netns(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return f"pid {pid}"  # no namespace link: the tables are read per process



class FarEnds:
    """One look at far ends (a scan's): the socket to sock_diag is opened once."""

    def __init__(self) -> None:
        self._diag = UnixDiag()
        self._links: dict[str, list[tuple[int, int]]] | None = None  # link -> (pid, fd)
        self._unix: dict[str, dict[int, tuple[int, int, str]]] = {}  # per net namespace
        self._tcp: dict[str, list[TcpRow]] = {}

    def far(self, pid: int, fd: int, end: End, side: str) -> Far:
        """The far end of `pid`'s `fd` (open on `end`), used for `side` (in: what the fd
        reads; out: what it writes). A pipe's far end is its other end: the write end of
        what the fd reads, the read end of what it writes."""
        if end.kind == "pipe" and end.inode is not None:
            want = "r" if side == "in" else "w"
            far_id = f"{end.channel}:{'w' if want == 'r' else 'r'}"
            got = pipe_peer(pid, fd, end.inode, want)
            if got == "yes":
                return Far(OPEN, far_id, True, True)
            if got == "no":
                return Far(CLOSED, far_id)
            return Far(UNKNOWN, far_id, why="the fd was replaced or cannot be opened")
        if end.kind == "socket" and end.inode is not None:
            diag = self._diag.peer(end.inode)
            if diag is None:
                return Far(UNKNOWN, why="not a UNIX socket")
            peer, shut = diag
            if peer is None:
                return Far(UNCONNECTED)
            if peer == 0:
                return Far(CLOSED)
            if shut is None:
                return Far(OPEN, f"socket:[{peer}]",
                           why="UNIX socket shutdown state not readable")
            return Far(OPEN, f"socket:[{peer}]", not shut & _RCV_SHUTDOWN,
                       not shut & _SEND_SHUTDOWN)
        return Far(UNKNOWN, why="not a pipe or a socket")

    def holders(self, end_id: str, skip: set[int]) -> list[int]:
        """Pids (not in `skip`) we can see holding the end `end_id` (a pipe's write end
        also through a read-write fd). One pass over every readable /proc/*/fd, the first
        time a look asks (only run in rare cases: a parent gone, yet a writer left; a far
        end to name). Empty proves nothing: unreadable processes and those outside our
        pid namespace are not in it."""
        if self._links is None:
            self._links = _all_links()
        mode = None
        link = end_id
        if end_id.startswith("pipe:[") and end_id.endswith(("]:r", "]:w")):
            link, mode = end_id[:-2], end_id[-1]
        out: list[int] = []
        for pid, fd in self._links.get(link, ()):
            if pid in skip or pid in out:
                continue
            if mode is not None:
                m = fd_mode(pid, fd)
                if m is None or not (mode in m or m == "rw"):
                    continue
            out.append(pid)
        return out

    def socket(self, pid: int, fd: int, end: End) -> Sock:
        """What `pid`'s socket `end` is for: /proc/PID/net/{unix,tcp,tcp6} of its network
        namespace (read once per look) and, for an accepted UNIX connection, sock_diag's
        peer. A UNIX socket is accepted when it is connected and bears the name of a
        listening one (the kernel gives an accepted socket its listener's name)."""
        ino = end.inode
        if end.kind != "socket" or ino is None:
            return Sock("", "")
        ns = _netns(pid)
        if ns not in self._unix:
            self._unix[ns] = _unix_table(pid)
        row = self._unix[ns].get(ino)
        if row is not None:
            flags, state, name = row
            if flags & _ACCEPTCON:
                return Sock("unix", "listen", name)
            listening = {n for f, _s, n in self._unix[ns].values() if f & _ACCEPTCON and n}
            if state != _UNIX_CONNECTED or name not in listening:
                return Sock("unix", "client" if state == _UNIX_CONNECTED else "", name)
            got = self._diag.peer(ino)
            peer = got[0] if got is not None else None
            return Sock("unix", "accepted", name, f"socket:[{peer}]" if peer else None)
        if ns not in self._tcp:
            self._tcp[ns] = tcp_table(pid)
        rows = self._tcp[ns]
        mine = next((r for r in rows if r[0] == ino), None)
        if mine is None:
            return Sock("", "")
        role, other = _tcp_role(mine, rows)
        if role == "listen":
            return Sock("tcp", role, tcp_text(*mine[2]))
        return Sock("tcp", role, "", f"socket:[{other}]" if other else None)

    def close(self) -> None:
        self._diag.close()


def far_ends() -> FarEnds:
    return FarEnds()


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


def epoll_items(pid: int, ends: dict[int, End] | None = None
                ) -> tuple[list[tuple[int, int, tuple[int, int] | None]], bool] | None:
    """Every item of every epoll set `pid` holds: (tfd, events, the watched file's
    (st_dev, st_ino) or None), and whether it holds an io_uring (reads may wait there,
    unseen). None: its fds cannot be read.

    tfd is the fd number the item was added under, in `pid`'s table; it may since have
    been closed while a dup keeps the file watched, so callers match the open file by
    `ino:`/`sdev:` (printed by kernels >= 3.19), by tfd's link only where they are missing."""
    links = _fd_links(pid) if ends is None else {fd: e.name for fd, e in ends.items()}
    if links is None:
        return None
    items: list[tuple[int, int, tuple[int, int] | None]] = []
    uring = False
    for fd, link in links.items():
        uring |= link == _IO_URING
        if link != _EVENTPOLL:
            continue
        try:
            data = read_whole(f"/proc/{pid}/fdinfo/{fd}").decode("ascii", "replace")
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
            text = read_whole(f"/proc/{pid}/task/{t}/syscall").decode("ascii", "replace").split()
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
        data = read_whole(f"/proc/{pid}/io").decode("ascii", "replace")
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
        data = read_whole(f"/proc/{pid}/environ")
    except OSError:
        return None
    out: dict[str, str] = {}
    for item in data.split(b"\0"):
        name, eq, value = item.partition(b"=")
        if eq and name:
            out[name.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
    return out
