"""Channel evidence: is the client side of a process's stdio protocol channel gone?

Guarantees:
- The protocol channel is fd 0 and fd 1 when fd 0 is a pipe or a socket. Otherwise it
  is the private copies the `mcp` SDK (>= 2, `server/stdio.py`) makes, and only when the
  process shows how that SDK makes them (`sdk_diverted`): fd 0 is `/dev/null` opened
  read-only and fd 1 the same open file as fd 2 (the diversions), and the copies are
  close-on-exec (`F_DUPFD_CLOEXEC`) in a Python process: one socket at two fds (one
  socketpair both ways, copied twice) or two sockets (a Node host gives a socketpair
  per stream), or one pipe read end (the input) below one pipe write end (the output:
  stdin is claimed first, each at the lowest free fd), and nothing else whose other
  side is outside the process. A host's pipes to its children have neither shape (its
  child's input is its write end, made first), nor has the one socket, at one fd, a
  host keeps of a socketpair it gave a child both ways.
- Pipes: a fresh end opened through /proc and polled with no events (POLLHUP: no writer
  anywhere; POLLERR: no reader anywhere). UNIX sockets (Node hosts use socketpairs): the
  kernel's sock_diag peer (0 once the peer closed) and shutdown state, judged per
  direction: a socket is a channel of its own for each way it is used (fd 0: input, fd 1:
  output; one socket at both is two channels), and a direction is gone only when the
  peer closed or that direction is shut down (a peer's shutdown(SHUT_WR), Node's
  `stdin.end()`, ends the input, not the output). Shutdown state the kernel does not
  give is "unknown". Nothing is read, written or signalled.
- "No writer" is claimed only when every input channel has none ("no reader" likewise
  for every output); otherwise the answer carries "yes" or "unknown", never a guess.
- A pipe's or a socket's answer is a property of the pipe or socket, not of the process
  holding it: `Peers` asks the kernel once per inode per scan (a thousand leaked
  servers of one host often share a pipe).
"""

from __future__ import annotations

import os
import re

from mcp_tether.proc import table
from mcp_tether.scan.model import Channel

__all__ = ["Peers", "read_channels", "stdin_kind", "holds_peer", "client_side_gone",
           "sdk_diverted", "RCV_SHUTDOWN", "SEND_SHUTDOWN"]

RCV_SHUTDOWN = 1  # a socket's sk_shutdown bits, as sock_diag reports them
SEND_SHUTDOWN = 2
# A would-be client with more open fds than this is not searched (a host that big is
# recognised by name; reading thousands of links would dominate the scan).
HOLDER_FD_LIMIT = 4096
_CHANNEL_PREFIXES = ("pipe:[", "socket:[")
_PYTHON_EXE = re.compile(r"^(python|pypy)[0-9.]*$")
_O_ACCMODE = 3
_O_CLOEXEC = 0o2000000


class Peers:
    """The other side of pipes and UNIX sockets, for one scan: each inode is asked about
    once. An "unknown" pipe answer (the fd was replaced under us) is not remembered."""

    def __init__(self) -> None:
        self._kernel = table.UnixDiag()
        self._sockets: dict[int, tuple[int | None, int | None] | None] = {}
        self._pipes: dict[tuple[int, str], str] = {}
        self._links: dict[tuple[str, str], list[int]] = {}

    def socket(self, ino: int) -> tuple[int | None, int | None] | None:
        """`UnixDiag.peer`: (peer inode or 0 or None, the socket's shutdown mask)."""
        if ino not in self._sockets:
            self._sockets[ino] = self._kernel.peer(ino)
        return self._sockets[ino]

    def pipe(self, pid: int, fd: int, ino: int, side: str) -> str:
        """`table.pipe_peer`, through `pid`'s `fd` the first time `ino` is asked about."""
        got = self._pipes.get((ino, side))
        if got is None:
            got = table.pipe_peer(pid, fd, ino, side)
            if got != "unknown":
                self._pipes[(ino, side)] = got
        return got

    def holders(self, ino: int, skip: set[int], mode: str = "w") -> list[int]:
        """`table.pipe_holders` (a pass over every process's fds) once per pipe: a
        thousand leaks whose one writer is still held would otherwise be a million reads."""
        return self.holders_of(f"pipe:[{ino}]", skip, mode)

    def holders_of(self, link: str, skip: set[int], mode: str | None) -> list[int]:
        key = (link, mode or "")
        if key not in self._links:
            self._links[key] = table.link_holders(link, set(), mode)
        return [pid for pid in self._links[key] if pid not in skip]

    def far_holders(self, c: Channel, skip: set[int]) -> list[int] | None:
        """Whom we can see holding the other side of channel `c` (not in `skip`)."""
        if c.kind == "pipe":
            return self.holders_of(f"pipe:[{c.inode}]", skip, "w" if c.side == "in" else "r")
        got = self.socket(c.inode)
        if got is None or not got[0]:
            return None
        return self.holders_of(f"socket:[{got[0]}]", skip, None)

    def close(self) -> None:
        self._kernel.close()


def _ino(link: str) -> int:
    return int(link[link.index("[") + 1 : -1])


def stdin_kind(link: str | None) -> str:
    if link is None:
        return "closed"
    if link.startswith("pipe:["):
        return "pipe"
    if link.startswith("socket:["):
        return "socket"
    if link == "/dev/null":
        return "null"
    if link.startswith(("/dev/pts/", "/dev/tty")):
        return "tty"
    return "file"


_SHUT = {"in": (RCV_SHUTDOWN, "shut down for reading (the peer shut down writing)"),
         "out": (SEND_SHUTDOWN, "shut down for writing (the peer shut down reading)")}


def _socket(fd: int, ino: int, side: str, peers: Peers, own: set[int]) -> Channel | None:
    """One direction (`side` in: what the process reads; out: what it writes) of a
    UNIX socket, or None when the socket is no channel."""
    got = peers.socket(ino)
    if got is None:
        return Channel(fd, "socket", side, ino, "unknown", "not a UNIX socket")
    peer, shut = got
    if peer is None:
        return None  # unconnected (a listener, a datagram socket): not a channel
    if peer in own:
        return None  # an internal socketpair (asyncio's self-pipe): not a channel
    if peer == 0:
        return Channel(fd, "socket", side, ino, "no", "UNIX socket peer closed")
    bit, what = _SHUT[side]
    if shut is None:
        return Channel(fd, "socket", side, ino, "unknown",
                       "UNIX socket shutdown state not readable")
    if shut & bit:
        return Channel(fd, "socket", side, ino, "no", "UNIX socket " + what)
    return Channel(fd, "socket", side, ino, "yes", f"UNIX socket peer socket:[{peer}]")


def _pipe(pid: int, fd: int, ino: int, side: str, peers: Peers) -> Channel:
    peer = peers.pipe(pid, fd, ino, "r" if side == "in" else "w")
    what = "writer" if side == "in" else "reader"
    detail = {"no": f"no {what} left", "yes": "", "unknown": f"{what} unknown"}[peer]
    return Channel(fd, "pipe", side, ino, peer, detail)


def read_channels(pid: int, peers: Peers, links: dict[int, str] | None = None,
                  exe: str | None = None) -> tuple[str, list[Channel], bool]:
    """(what fd 0 is, the channel's descriptors, whether they are private copies).

    `exe`: the process's executable, when known: only Python runs the `mcp` SDK."""
    if links is None:
        links = table.fd_links(pid)
    if links is None:
        return "unknown", [], False
    kind0 = stdin_kind(links.get(0))
    if kind0 in ("pipe", "socket"):
        out: list[Channel] = []
        for fd in (0, 1):
            link = links.get(fd)
            if link is None or not link.startswith(_CHANNEL_PREFIXES):
                continue
            side = "in" if fd == 0 else "out"
            if link.startswith("pipe:["):
                if fd == 1 and link == links.get(0):
                    continue  # one pipe at both: what it reads, judged once
                out.append(_pipe(pid, fd, _ino(link), side, peers))
            else:  # one socket at both fds is two channels, one per direction
                ch = _socket(fd, _ino(link), side, peers, set())
                if ch is not None:
                    out.append(ch)
        return kind0, out, False
    if exe and not _PYTHON_EXE.match(os.path.basename(exe)):
        return kind0, [], False
    if not any(fd > 2 and link.startswith(_CHANNEL_PREFIXES) for fd, link in links.items()):
        return kind0, [], False  # nothing that could be a copy: no fdinfo to read
    if not sdk_diverted(pid, links):
        return kind0, [], False
    return kind0, _private(pid, links, peers), True


def _flags(pid: int, fd: int) -> int | None:
    info = table.fd_info(pid, fd)
    try:
        return int(info["flags"], 8) if info else None
    except (KeyError, ValueError):
        return None


def sdk_diverted(pid: int, links: dict[int, str]) -> bool:
    """fd 0 and fd 1 as the `mcp` SDK leaves them while it serves from private copies:
    fd 0 `/dev/null` opened read-only, fd 1 a duplicate of fd 2 (`os.dup(2)`)."""
    if links.get(0) != "/dev/null" or 1 not in links or links.get(1) != links.get(2):
        return False
    f0 = _flags(pid, 0)
    if f0 is None or f0 & _O_ACCMODE != os.O_RDONLY:
        return False
    i1, i2 = table.fd_info(pid, 1), table.fd_info(pid, 2)
    if not i1 or not i2:
        return False
    for info in (i1, i2):  # close-on-exec is the descriptor's, not the open file's
        info["flags"] = str(int(info.get("flags", "0"), 8) & ~_O_CLOEXEC)
    return i1 == i2


def _private(pid: int, links: dict[int, str], peers: Peers) -> list[Channel]:
    """Pipes and connected UNIX sockets past fd 0 whose other side is not this process."""
    pipes: dict[int, list[tuple[int, str | None]]] = {}
    socks: dict[int, list[int]] = {}
    for fd, link in sorted(links.items()):
        if fd <= 2 or not link.startswith(_CHANNEL_PREFIXES):
            continue
        if link.startswith("pipe:["):
            pipes.setdefault(_ino(link), []).append((fd, table.fd_mode(pid, fd)))
        else:
            socks.setdefault(_ino(link), []).append(fd)
    pipe_chans: list[Channel] = []
    for ino, ends in pipes.items():
        modes = {m for _, m in ends}
        if None in modes or "rw" in modes or len(modes) != 1:
            continue  # both ends here (a self-pipe), or unknown: not a channel
        fd = min(f for f, _ in ends)
        pipe_chans.append(_pipe(pid, fd, ino, "in" if "r" in modes else "out", peers))
    own = set(socks)
    ext: dict[int, list[int]] = {}  # connected UNIX sockets whose peer is not this process
    for ino, fds in socks.items():
        got = peers.socket(ino)
        if got is not None and got[0] is not None and got[0] not in own:
            ext[ino] = fds  # (not a listener, nor an internal pair like asyncio's self-pipe)
    # The copies are made stdin first, each at the lowest free fd: one socket copied
    # twice is both directions (the input at the lower fd); two sockets are one per
    # stream (Node hosts), the input below the output. One socket at one fd is no
    # copy of a stdio channel: it is what a host holds of one socketpair it gave a
    # child both ways (a service-style host whose server crashed must not look leaked).
    if len(ext) == 1:
        [fds] = ext.values()
        wanted = list(zip(fds[:2], ("in", "out"), strict=True)) if len(fds) >= 2 else []
    elif len(ext) == 2:
        wanted = [(fds[0], side) for fds, side in
                  zip(sorted(ext.values()), ("in", "out"), strict=True)]
    else:
        wanted = []
    by_fd = {fd: ino for ino, fds in ext.items() for fd in fds}
    sock_chans = [ch for fd, side in wanted
                  if (ch := _socket(fd, by_fd[fd], side, peers, own)) is not None]
    # The SDK's shape: one or two sockets, or one input pipe below one output pipe; each
    # copy close-on-exec. Anything else (a host's pipes to its children, a daemon's
    # connections) is not a stdio channel.
    if ext and not pipe_chans:
        out = sock_chans
    elif len(pipe_chans) == 2 and not ext:
        a, b = sorted(pipe_chans, key=lambda c: c.fd)
        out = [a, b] if (a.side, b.side) == ("in", "out") else []
    else:
        out = []
    for c in out:
        f = _flags(pid, c.fd)
        if f is None or not f & _O_CLOEXEC:
            return []
    return out


def client_side_gone(channels: list[Channel]) -> bool:
    """Every input has no writer left, or every output no reader left."""
    ins = [c for c in channels if c.side == "in"]
    outs = [c for c in channels if c.side == "out"]
    return (bool(ins) and all(c.peer == "no" for c in ins)) or (
        bool(outs) and all(c.peer == "no" for c in outs))


def holds_peer(pid: int, channels: list[Channel], peers: Peers,
               links: dict[int, str] | None = None) -> bool:
    """Does `pid` hold the other side of one of these channels (is it the client)?

    A wrapper that passes its stdin through holds the same side (same pipe, same
    mode; the same socket): that is not the other side.
    """
    if links is None:
        links = table.fd_links(pid, limit=HOLDER_FD_LIMIT)
    if not links:
        return False
    by_link: dict[str, list[int]] = {}
    for fd, link in links.items():
        by_link.setdefault(link, []).append(fd)
    for c in channels:
        if c.kind == "pipe":
            want = "w" if c.side == "in" else "r"
            for fd in by_link.get(f"pipe:[{c.inode}]", ()):
                mode = table.fd_mode(pid, fd)
                if mode is not None and want in mode:
                    return True
        elif c.kind == "socket":
            got = peers.socket(c.inode)
            if got is not None and got[0] and f"socket:[{got[0]}]" in by_link:
                return True
    return False
