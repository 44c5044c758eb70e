"""Channel evidence: is the client side of a process's stdio protocol channel gone?

Guarantees:
- The protocol channel is fd 0 and fd 1 when fd 0 is a pipe or a socket. When fd 0 is
  not (mcp 2.x points fd 0 at /dev/null and fd 1 at stderr, serving from private
  copies), it is every other pipe or connected UNIX socket whose other side lies outside
  the process (a self-pipe or an internal socketpair is not a channel).
- Pipes: a fresh end opened through /proc and polled with no events (POLLHUP: no writer
  anywhere; POLLERR: no reader anywhere). UNIX sockets (Node hosts use socketpairs): the
  kernel's sock_diag peer, 0 once the peer closed, or the peer's shutdown of writing.
  Nothing is read, written or signalled.
- "No writer" is claimed only when every input channel has none ("no reader" likewise
  for every output); otherwise the answer carries "yes" or "unknown", never a guess.
- A pipe's or a socket's answer is a property of the pipe or socket, not of the process
  holding it: `Peers` asks the kernel once per inode per scan (a thousand leaked
  servers of one host often share a pipe).
"""

from __future__ import annotations

from mcp_tether.proc import table
from mcp_tether.scan.model import Channel

__all__ = ["Peers", "read_channels", "stdin_kind", "holds_peer", "client_side_gone",
           "RCV_SHUTDOWN"]

RCV_SHUTDOWN = 1
# A would-be client with more open fds than this is not searched (a host that big is
# recognised by name; reading thousands of links would dominate the scan).
HOLDER_FD_LIMIT = 4096
_CHANNEL_PREFIXES = ("pipe:[", "socket:[")


class Peers:
    """The other side of pipes and UNIX sockets, for one scan: each inode is asked about
    once. An "unknown" pipe answer (the fd was replaced under us) is not remembered."""

    def __init__(self) -> None:
        self._kernel = table.UnixDiag()
        self._sockets: dict[int, tuple[int | None, int] | None] = {}
        self._pipes: dict[tuple[int, str], str] = {}
        self._holders: dict[tuple[int, str], list[int]] = {}

    def socket(self, ino: int) -> tuple[int | None, int] | None:
        """`UnixDiag.peer`: (peer inode or 0 or None, the peer's shutdown mask)."""
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
        key = (ino, mode)
        if key not in self._holders:
            self._holders[key] = table.pipe_holders(ino, set(), mode)
        return [pid for pid in self._holders[key] if pid not in skip]

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


def _socket(fd: int, ino: int, peers: Peers, own: set[int]) -> Channel | None:
    got = peers.socket(ino)
    if got is None:
        return Channel(fd, "socket", "both", ino, "unknown", "not a UNIX socket")
    peer, shut = got
    if peer is None:
        return None  # unconnected (a listener, a datagram socket): not a channel
    if peer in own:
        return None  # an internal socketpair (asyncio's self-pipe): not a channel
    if peer == 0:
        return Channel(fd, "socket", "both", ino, "no", "UNIX socket peer closed")
    if shut & RCV_SHUTDOWN:
        return Channel(fd, "socket", "both", ino, "no", "UNIX socket peer shut down writing")
    return Channel(fd, "socket", "both", ino, "yes", f"UNIX socket peer socket:[{peer}]")


def _pipe(pid: int, fd: int, ino: int, side: str, peers: Peers) -> Channel:
    peer = peers.pipe(pid, fd, ino, "r" if side == "in" else "w")
    what = "writer" if side == "in" else "reader"
    detail = {"no": f"no {what} left", "yes": "", "unknown": f"{what} unknown"}[peer]
    return Channel(fd, "pipe", side, ino, peer, detail)


def read_channels(pid: int, peers: Peers,
                  links: dict[int, str] | None = None) -> tuple[str, list[Channel], bool]:
    """(what fd 0 is, the channel's descriptors, whether they are private copies)."""
    if links is None:
        links = table.fd_links(pid)
    if links is None:
        return "unknown", [], False
    kind0 = stdin_kind(links.get(0))
    if kind0 in ("pipe", "socket"):
        out: list[Channel] = []
        seen: set[str] = set()
        for fd in (0, 1):
            link = links.get(fd)
            if link is None or not link.startswith(_CHANNEL_PREFIXES) or link in seen:
                continue
            seen.add(link)
            if link.startswith("pipe:["):
                out.append(_pipe(pid, fd, _ino(link), "in" if fd == 0 else "out", peers))
            else:
                ch = _socket(fd, _ino(link), peers, set())
                if ch is not None:
                    out.append(ch)
        return kind0, out, False
    return kind0, _private(pid, links, peers), True


def _private(pid: int, links: dict[int, str], peers: Peers) -> list[Channel]:
    """Pipes and connected UNIX sockets past fd 0 whose other side is not this process."""
    pipes: dict[int, list[tuple[int, str | None]]] = {}
    socks: dict[int, int] = {}
    for fd, link in links.items():
        if fd == 0 or not link.startswith(_CHANNEL_PREFIXES):
            continue
        if link.startswith("pipe:["):
            pipes.setdefault(_ino(link), []).append((fd, table.fd_mode(pid, fd)))
        else:
            socks.setdefault(_ino(link), fd)
    out: list[Channel] = []
    for ino, ends in pipes.items():
        modes = {m for _, m in ends}
        if None in modes or "rw" in modes or len(modes) != 1:
            continue  # both ends here (a self-pipe), or unknown: not a channel
        fd = ends[0][0]
        out.append(_pipe(pid, fd, ino, "in" if "r" in modes else "out", peers))
    own = set(socks)
    for ino, fd in socks.items():
        ch = _socket(fd, ino, peers, own)
        if ch is not None and ch.peer != "unknown":
            out.append(ch)
    return sorted(out, key=lambda c: c.fd)


def client_side_gone(channels: list[Channel]) -> bool:
    """Every input has no writer left, or every output no reader left."""
    ins = [c for c in channels if c.side in ("in", "both")]
    outs = [c for c in channels if c.side in ("out", "both")]
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
