"""What a tree kill leaves: the processes a server detached on purpose for its user.

The guard (`mcp-tether run`), the helper (`mcp_tether.run`) and, through the guard, the
host client end a server's whole tree; `decide` says which members of it are not the
server's leak but its user's, read through the platform seam (`backend.terminal`,
`backend.channels()`), so that another backend answers the same questions. The Node
package's lib/process/leave.cjs keeps the same definition.

Guarantees:
- A member is left, and named, for one of three reasons (`Left.why`):
  1. "opted-out": its environment's MCP_TETHER_OUTSIDE names this tree (the token of the
     root or of a member: the process that started it through `outside_tether`).
  2. "terminal": it is detached (a session of its own that is neither the server's nor
     the root's, and no controlling terminal), its parent is not a member (reparented
     away: a multiplexer's server daemonizes), it holds the master side of
     pseudo-terminals and listens on a unix socket, where a user attaches (tmux, screen,
     dtach, abduco).
  3. "in-use": it is detached, and the far end of one of its pipes, or of a connection
     it accepted (a unix socket, TCP within this machine), is held by a live process
     that is not a member, not the root and not one of the root's ancestors (the host
     and its launchers), or by a member left for another reason. A channel any end of
     which the root or an ancestor holds is never evidence (the stdio every child
     inherits, the protocol channel, fds a host leaked), nor one it has no far end on.
  And "under": a member whose parent, or whose detached session, was left goes with it
  (the shells in a multiplexer's panes, a shared daemon's workers).
- A member that holds the protocol channel (the root's stdin or stdout) is the server,
  or the server behind a launcher: never left as "terminal" or "in-use".
- Not detached means not left but by the opt-out: a `nohup`ed child, a shell the server
  runs on a pseudo-terminal it holds itself (`script`, `pty.fork`, node-pty: the shell
  has that terminal as its controlling one) and every leak that detaches without a user
  of its own (daemonized grandchildren, setsid helpers, double forks, pid-hoppers) end
  with the tree.
- Unknown is never an exemption: a member whose environment, terminal or fds cannot be
  read is the server's own (it is a member by its parentage, which was read; leaving it
  because a process made itself unreadable would be the loophole).
- Reads the few members that can be left, in the seam's channel words (`fd_ends`,
  `far_ends()`: a pipe's far end, what a socket is for, who holds an end), so every
  backend that answers them keeps the rule (Linux, macOS); one that cannot (portable)
  leaves nothing but the opted-out. The one pass over every process's fds (`holders`)
  runs only when a detached member holds a channel the root does not.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from mcp_tether._plat.ends import CHANNEL_KINDS, OPEN, End
from mcp_tether.platform import backend
from mcp_tether.proc import mark
from mcp_tether.proc.identity import DIFFERENT, ProcessId, ProcRecord, compare, read_info

if TYPE_CHECKING:
    from mcp_tether._plat.contract import FarEnds

__all__ = ["Left", "Root", "decide", "OPTED_OUT", "TERMINAL", "IN_USE", "UNDER"]

OPTED_OUT = "opted-out"
TERMINAL = "terminal"
IN_USE = "in-use"
UNDER = "under"


class Left:
    """One member a tree kill leaves: the process, why (`OPTED_OUT`...), and a detail (the
    attach point, the user, the process it went with)."""

    __slots__ = ("info", "why", "detail")

    def __init__(self, info: ProcRecord, why: str, detail: str = "") -> None:
        self.info = info
        self.why = why
        self.detail = detail

    @property
    def ident(self) -> ProcessId:
        return self.info.ident

    @property
    def command(self) -> str:
        """Its command line (untrusted: escape it for the output it goes to)."""
        return " ".join(self.info.argv) or self.info.comm

    def reason(self) -> str:
        """Why it was left, in words (the detail is untrusted text)."""
        if self.why == OPTED_OUT:
            return "kept out of the tether on purpose (MCP_TETHER_OUTSIDE)"
        if self.why == TERMINAL:
            return f"a terminal session a user can attach to ({self.detail})"
        if self.why == IN_USE:
            return f"in use by {self.detail}"
        return f"goes with {self.detail}"

    def __repr__(self) -> str:
        return f"Left({self.info.pid}, {self.why!r}, {self.detail!r})"


class Root:
    """What the rule reads of the process ending the tree (the guard; the server itself
    under the helper): its record, the ends it holds (fds 0 and 1: the protocol channel)
    and its ancestors now (the host and its launchers). Read when first asked, or at once
    with `Root.read`: the guard's watcher reads them while the guard lives, and decides
    after the guard died."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._info: ProcRecord | None = None
        self._read = False
        self._ends: dict[int, End] | None = None
        self._ancestors: list[ProcessId] | None = None

    @classmethod
    def read(cls, pid: int) -> Root:
        root = cls(pid)
        root.info()
        root.ends()
        root.boundary()
        return root

    def info(self) -> ProcRecord | None:
        if not self._read:
            self._info, self._read = read_info(self.pid), True
        return self._info

    def ends(self) -> dict[int, End]:
        if self._ends is None:
            self._ends = backend.channels().fd_ends(self.pid) or {}
        return self._ends

    def boundary(self) -> set[int]:
        """The root and its ancestors (those of them still the same processes)."""
        if self._ancestors is None:
            self._ancestors = _ancestors(self.pid)
            return {i.pid for i in self._ancestors}
        return {i.pid for i in self._ancestors if compare(i) != DIFFERENT}


def decide(
    members: Iterable[ProcRecord],
    *,
    root: int | Root,
    server_sid: int | None,
    known: Iterable[ProcessId] = (),
) -> dict[ProcessId, Left]:
    """The members of a tree to leave (see the module doc), by identity.

    root: the process ending the tree (the guard; the server itself under the helper),
    or what was read of it (`Root.read`). server_sid: the server's session. known:
    identities of members met before (a server that has exited), whose token may still
    name the tree."""
    live = [m for m in members if not m.exited]
    if not live:
        return {}
    root = root if isinstance(root, Root) else Root(root)
    me = root.info()
    root_sid = None if me is None else me.sid
    ours = {mark.token(i.pid, i.start) for i in known}
    ours |= {mark.token(m.pid, m.start) for m in live}
    if me is not None:
        ours.add(mark.token(me.pid, me.start))
    left: dict[int, Left] = {}
    ch = backend.channels()
    for m in live:
        env = ch.environ(m.pid)
        if env is not None and ours & set(mark.tokens(env.get(mark.OUTSIDE))):
            left[m.pid] = Left(m, OPTED_OUT)
    detached = [m for m in live if m.pid not in left and m.sid not in (server_sid, root_sid)
                and backend.terminal(m.pid) == 0]
    if detached:
        _detached(detached, live, left, root)
    _spread(live, left, (server_sid, root_sid))
    return {v.ident: v for v in left.values()}


def _detached(detached: list[ProcRecord], live: list[ProcRecord], left: dict[int, Left],
              root: Root) -> None:
    """Rules 2 and 3 on the detached members (the module doc), asked in the seam's channel
    words: each member's ends (`fd_ends`), what a socket is for and what a pipe's far end
    is (`far_ends()`), and who holds an end (`holders`)."""
    ch = backend.channels()
    root_ends = root.ends()
    protocol = {e.channel for fd, e in root_ends.items() if fd in (0, 1)
                and e.kind in CHANNEL_KINDS}
    held = {e.channel for e in root_ends.values()} | {e.id for e in root_ends.values()}
    ends: dict[int, dict[int, End]] = {}
    for m in detached:
        got = ch.fd_ends(m.pid)
        if got is not None and not protocol & {e.channel for e in got.values()}:
            ends[m.pid] = got
    by_pid = {m.pid: m for m in live}
    look = ch.far_ends()
    try:
        for m in detached:
            mine = ends.get(m.pid, {})
            if m.ppid in by_pid or not any(e.kind == "pty" for e in mine.values()):
                continue
            at = next((s.address or e.name for fd, e in mine.items() if e.kind == "socket"
                       and (s := look.socket(m.pid, fd, e))[:2] == ("unix", "listen")), None)
            if at is not None:
                left[m.pid] = Left(m, TERMINAL, f"pseudo-terminal masters; listening at {at}")
        channels = [(m, what, e, far) for m in detached if m.pid not in left
                    for what, e, far in _channels(look, m.pid, ends.get(m.pid, {}))
                    if not {e.id, e.channel, far} & held]
        if channels:
            _in_use(channels, by_pid, left, look, root.boundary())
    finally:
        look.close()


def _channels(look: FarEnds, pid: int, ends: dict[int, End]
              ) -> list[tuple[str, End, str]]:
    """(what, the end, its far end's id) of each pipe `pid` holds whose far end is open,
    and of each connection it accepted whose other side is a socket of this machine."""
    out: list[tuple[str, End, str]] = []
    for fd, e in ends.items():
        if e.kind == "pipe":
            for side in ("in", "out"):  # a read end's far end is a write end; and back
                if (side == "in") == ("r" in (e.mode or "")) or e.mode == "rw":
                    far = look.far(pid, fd, e, side)
                    if far.state == OPEN and far.id is not None:
                        out.append(("a pipe", e, far.id))
        elif e.kind == "socket":
            s = look.socket(pid, fd, e)
            if s.role == "accepted" and s.peer is not None:
                what = "a unix socket" if s.family == "unix" else "a TCP connection"
                out.append((what, e, s.peer))
    return out


def _in_use(channels: list[tuple[ProcRecord, str, End, str]], by_pid: dict[int, ProcRecord],
            left: dict[int, Left], look: FarEnds, boundary: set[int]) -> None:
    """Rule 3: a member whose far end a live process outside the tree holds (module doc)."""
    grew = True
    while grew:  # a process used by one left for another reason is the user's too
        grew = False
        for m, what, e, far in channels:
            if m.pid in left:
                continue
            near_h = set(look.holders(e.id, set()))
            if e.also:
                near_h |= set(look.holders(e.also, set()))
            far_h = look.holders(far, set())
            if boundary & (near_h | set(far_h)):
                continue  # the host's (or the root's) channel: never evidence
            users = sorted(p for p in far_h if p != m.pid and (p not in by_pid or p in left))
            if users:
                left[m.pid] = Left(m, IN_USE, _user(users[0], what))
                grew = True


def _user(pid: int, what: str) -> str:
    info = read_info(pid)
    return f"{pid} ({info.comm if info is not None else '?'}) over {what}"


def _ancestors(root: int) -> list[ProcessId]:
    """The root and its ancestors now, up to init: the host and its launchers."""
    out: list[ProcessId] = []
    pid: int | None = root
    while pid and pid not in {i.pid for i in out}:
        info = read_info(pid)
        if info is None:
            break
        out.append(info.ident)
        pid = info.ppid
    return out


def _spread(live: list[ProcRecord], left: dict[int, Left], inside: tuple[int | None, ...]
            ) -> None:
    """Members under a left one, or in a detached session a left one is in, go with it."""
    sessions = {v.info.sid: v.info.pid for v in left.values() if v.info.sid not in inside}
    grew = True
    while grew:
        grew = False
        for m in live:
            if m.pid in left:
                continue
            if m.ppid in left:
                left[m.pid] = Left(m, UNDER, f"{m.ppid} (its parent)")
            elif m.sid in sessions:
                left[m.pid] = Left(m, UNDER, f"{sessions[m.sid]} (its session)")
            else:
                continue
            grew = True
            if m.sid not in inside:
                sessions.setdefault(m.sid, m.pid)
