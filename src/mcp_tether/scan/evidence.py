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
- Each descriptor is asked the seam's three questions (`proc.table`: its end, its far
  end, who holds that), which every backend answers its own way (Linux: a fresh pipe end
  polled through /proc, sock_diag for sockets; macOS: libproc's pipe and socket peer
  handles). A pipe's far end is closed once nobody holds it. UNIX sockets (Node hosts
  use socketpairs) are judged per direction: a socket is a channel of its own for each
  way it is used (fd 0: input, fd 1: output; one socket at both is two channels), and a
  direction is gone only when the peer closed or that direction is shut down (a peer's
  shutdown(SHUT_WR), Node's `stdin.end()`, ends the input, not the output). What the
  kernel does not show is "unknown". Nothing is read, written or signalled.
- "No writer" is claimed only when every input channel has none ("no reader" likewise
  for every output); otherwise the answer carries "yes" or "unknown", never a guess.
- A pipe's or a socket's answer is a property of the end, not of the process holding
  it: `Peers` asks the kernel once per end per scan (a thousand leaked servers of one
  host often share a pipe).
"""

from __future__ import annotations

import os
import re

from mcp_tether.proc import table
from mcp_tether.proc.table import CHANNEL_KINDS, CLOSED, OPEN, UNCONNECTED, UNKNOWN, End, Far
from mcp_tether.scan.model import Channel

__all__ = ["Peers", "read_channels", "stdin_kind", "holds_peer", "client_side_gone",
           "sdk_diverted"]

# A would-be client with more open fds than this is not searched (a host that big is
# recognised by name; reading thousands of links would dominate the scan).
HOLDER_FD_LIMIT = 4096
_PYTHON_EXE = re.compile(r"^(python|pypy)[0-9.]*$")


class Peers:
    """The far ends of pipes and UNIX sockets, for one scan: each end is asked about once
    (a pipe end once per way it is used). An "unknown" answer (the fd was replaced under
    us) is not remembered."""

    def __init__(self) -> None:
        self._look = table.far_ends()
        self._far: dict[tuple[str, str], Far] = {}
        self._holders: dict[str, list[int]] = {}

    def far(self, pid: int, fd: int, end: End, side: str) -> Far:
        """`table.far_ends().far`, through `pid`'s `fd` the first time `end` is asked
        about. A socket's answer covers both ways (its `recv` and `send`)."""
        key = (end.id, side if end.kind == "pipe" else "")
        got = self._far.get(key)
        if got is None:
            got = self._look.far(pid, fd, end, side)
            if got.state != UNKNOWN:
                self._far[key] = got
        return got

    def holders(self, end_id: str, skip: set[int]) -> list[int]:
        """Who holds the end `end_id` (a pass over every process's fds) once per end: a
        thousand leaks whose one writer is still held would otherwise be a million reads."""
        if end_id not in self._holders:
            self._holders[end_id] = self._look.holders(end_id, set())
        return [pid for pid in self._holders[end_id] if pid not in skip]

    def far_holders(self, c: Channel, skip: set[int]) -> list[int] | None:
        """Whom we can see holding the other side of channel `c` (not in `skip`)."""
        return None if c.far is None else self.holders(c.far, skip)

    def close(self) -> None:
        self._look.close()


def stdin_kind(end: End | None) -> str:
    """What fd 0 is: pipe | socket | null | tty | file | closed."""
    return "closed" if end is None else end.kind


_SHUT = {"in": "shut down for reading (the peer shut down writing)",
         "out": "shut down for writing (the peer shut down reading)"}


def _socket(pid: int, fd: int, end: End, side: str, peers: Peers,
            own: set[str]) -> Channel | None:
    """One direction (`side` in: what the process reads; out: what it writes) of a
    UNIX socket, or None when the socket is no channel."""
    far = peers.far(pid, fd, end, side)
    if far.state == UNKNOWN:
        return Channel(fd, "socket", side, end.id, "unknown", far.why or "not a UNIX socket",
                       inode=end.inode)
    if far.state == UNCONNECTED:
        return None  # a listener, a datagram socket: not a channel
    if far.id is not None and far.id in own:
        return None  # an internal socketpair (asyncio's self-pipe): not a channel
    if far.state == CLOSED:
        return Channel(fd, "socket", side, end.id, "no", "UNIX socket peer closed",
                       inode=end.inode)
    flows = far.recv if side == "in" else far.send
    if flows is None:
        return Channel(fd, "socket", side, end.id, "unknown",
                       "UNIX socket shutdown state not readable", far.id, end.inode)
    if not flows:
        return Channel(fd, "socket", side, end.id, "no", "UNIX socket " + _SHUT[side],
                       far.id, end.inode)
    return Channel(fd, "socket", side, end.id, "yes", f"UNIX socket peer {far.id}", far.id,
                   end.inode)


def _pipe(pid: int, fd: int, end: End, side: str, peers: Peers) -> Channel:
    far = peers.far(pid, fd, end, side)
    peer = "yes" if far.state == OPEN else "no" if far.state == CLOSED else "unknown"
    what = "writer" if side == "in" else "reader"
    detail = {"no": f"no {what} left", "yes": "", "unknown": f"{what} unknown"}[peer]
    return Channel(fd, "pipe", side, end.id, peer, detail, far.id, end.inode)


def read_channels(pid: int, peers: Peers, ends: dict[int, End] | None = None,
                  exe: str | None = None) -> tuple[str, list[Channel], bool]:
    """(what fd 0 is, the channel's descriptors, whether they are private copies).

    `exe`: the process's executable, when known: only Python runs the `mcp` SDK."""
    if ends is None:
        ends = table.fd_ends(pid)
    if ends is None:
        return "unknown", [], False
    e0 = ends.get(0)
    kind0 = stdin_kind(e0)
    if e0 is not None and kind0 in CHANNEL_KINDS:
        out: list[Channel] = []
        for fd in (0, 1):
            e = ends.get(fd)
            if e is None or e.kind not in CHANNEL_KINDS:
                continue
            side = "in" if fd == 0 else "out"
            if e.kind == "pipe":
                if fd == 1 and e.channel == e0.channel:
                    continue  # one pipe at both: what it reads, judged once
                out.append(_pipe(pid, fd, e, side, peers))
            else:  # one socket at both fds is two channels, one per direction
                ch = _socket(pid, fd, e, side, peers, set())
                if ch is not None:
                    out.append(ch)
        return kind0, out, False
    if exe and not _PYTHON_EXE.match(os.path.basename(exe)):
        return kind0, [], False
    if not any(fd > 2 and e.kind in CHANNEL_KINDS for fd, e in ends.items()):
        return kind0, [], False  # nothing that could be a copy: no fd state to read
    if not sdk_diverted(pid, ends):
        return kind0, [], False
    return kind0, _private(pid, ends, peers), True


def sdk_diverted(pid: int, ends: dict[int, End]) -> bool:
    """fd 0 and fd 1 as the `mcp` SDK leaves them while it serves from private copies:
    fd 0 `/dev/null` opened read-only, fd 1 a duplicate of fd 2 (`os.dup(2)`)."""
    e0, e1, e2 = ends.get(0), ends.get(1), ends.get(2)
    if e0 is None or e0.kind != "null" or e1 is None or e2 is None or e1.id != e2.id:
        return False
    s0 = table.fd_state(pid, 0)
    if s0 is None or s0.access != "r":
        return False
    s1, s2 = table.fd_state(pid, 1), table.fd_state(pid, 2)
    # close-on-exec is the descriptor's, not the open file's: `file` leaves it out
    return s1 is not None and s2 is not None and s1.file == s2.file


def _private(pid: int, ends: dict[int, End], peers: Peers) -> list[Channel]:
    """Pipes and connected UNIX sockets past fd 0 whose other side is not this process."""
    pipes: dict[str, list[tuple[int, End]]] = {}
    socks: dict[str, list[tuple[int, End]]] = {}
    for fd, e in sorted(ends.items()):
        if fd <= 2 or e.kind not in CHANNEL_KINDS:
            continue
        (pipes if e.kind == "pipe" else socks).setdefault(e.channel, []).append((fd, e))
    pipe_chans: list[Channel] = []
    for held in pipes.values():
        modes = {e.mode for _, e in held}
        if None in modes or "rw" in modes or len(modes) != 1:
            continue  # both ends here (a self-pipe), or unknown: not a channel
        fd, e = held[0]
        pipe_chans.append(_pipe(pid, fd, e, "in" if "r" in modes else "out", peers))
    own = set(socks)
    ext: dict[str, list[tuple[int, End]]] = {}  # connected sockets whose peer is elsewhere
    for sid, held in socks.items():
        fd, e = held[0]
        far = peers.far(pid, fd, e, "in")
        if far.state in (OPEN, CLOSED) and far.id not in own:
            ext[sid] = held  # (not a listener, nor an internal pair like asyncio's self-pipe)
    # The copies are made stdin first, each at the lowest free fd: one socket copied
    # twice is both directions (the input at the lower fd); two sockets are one per
    # stream (Node hosts), the input below the output. One socket at one fd is no
    # copy of a stdio channel: it is what a host holds of one socketpair it gave a
    # child both ways (a service-style host whose server crashed must not look leaked).
    if len(ext) == 1:
        [held] = ext.values()
        wanted = list(zip(held[:2], ("in", "out"), strict=True)) if len(held) >= 2 else []
    elif len(ext) == 2:
        wanted = [(held[0], side) for held, side in
                  zip(sorted(ext.values(), key=lambda h: h[0][0]), ("in", "out"),
                      strict=True)]
    else:
        wanted = []
    sock_chans = [ch for (fd, e), side in wanted
                  if (ch := _socket(pid, fd, e, side, peers, own)) is not None]
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
        st = table.fd_state(pid, c.fd)
        if st is None or not st.cloexec:
            return []
    return out


def client_side_gone(channels: list[Channel]) -> bool:
    """Every input has no writer left, or every output no reader left."""
    ins = [c for c in channels if c.side == "in"]
    outs = [c for c in channels if c.side == "out"]
    return (bool(ins) and all(c.peer == "no" for c in ins)) or (
        bool(outs) and all(c.peer == "no" for c in outs))


def holds_peer(pid: int, channels: list[Channel], peers: Peers,
               ends: dict[int, End] | None = None) -> bool:
    """Does `pid` hold the other side of one of these channels (is it the client)?

    A wrapper that passes its stdin through holds the same side (the same end of the
    same pipe; the same socket): that is not the other side.
    """
    if ends is None:
        ends = table.fd_ends(pid, limit=HOLDER_FD_LIMIT)
    if not ends:
        return False
    fars = {c.far for c in channels if c.far is not None}
    return any(e.holds(far) for e in ends.values() for far in fars)
