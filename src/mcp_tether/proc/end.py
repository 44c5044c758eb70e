"""Ending a whole process tree, for a caller that is its child subreaper.

Guarantees (Linux, caller a child subreaper, and the only one reaping its children):
- "Tree empty" means `has_children()` is False: no child of ours is left, running or
  zombie. Every orphan of the tree reparents to us before its parent turns zombie, so
  nothing of the tree can be alive anywhere else. A snapshot of the tree is never taken
  as proof: a pid-hopper (forks, exits, in a loop, with or without setsid) slips
  between two snapshots, it cannot slip out of "we still have a child".
- `Tree.signal(sig)` sends `sig` to the server's process group (proven ours by a known
  live member) and then to every live descendant outside it, each through a pidfd
  opened before its identity is checked (`proc.signals.pin`). Our own unreaped
  children are signalled by pid without a check: a pid cannot be reused before its
  parent reaps it, and we are that parent.
- While a SIGTERM or SIGKILL rung lasts, `Tree.wait()` keeps looking for processes it
  has not signalled yet and sends them the rung's signal at once, as each is read,
  until the tree is empty or the timeout passes. Otherwise (before any rung, or after a
  forwarded SIGINT/SIGHUP) it scans nothing: it sleeps on the SIGCHLD inbox (every
  change that can empty the tree is the exit of one of our own children).
- On the SIGKILL rung, `wait()` gives up only on a tree that has stopped changing: each
  newcomer found restarts the rung's timeout (a process stuck in uninterruptible sleep
  forks nothing; a pid-hopper does, so we keep going until it is caught). A group
  member found then is killed with its whole group in one kill(2).
- Every reaped child is handed to `on_reap(pid, raw_status)`, so the caller learns its
  server's status; nothing else reaps.
- `end_tree()` climbs the ladder (`mcp_tether.ladder.run_ladder`) on such a tree.
- `leave(left)` takes processes out of the tree for good (`proc.leave.decide`: what the
  server detached on purpose for its user): from then on no signal reaches them (nor
  what they fork, nor the group while one of them is in it: its members are then
  signalled one by one), and "tree empty" means no child is left but them: they outlive
  us, and init (or the next subreaper up) takes them when we exit.
Without a subreaper (macOS; the portable backend; Linux with MCP_TETHER_NO_SUBREAPER set,
for tests) the same calls fall back to group + scan: our descendants, plus every process
met before (or `known` to the caller) that is still alive, wherever it was reparented,
plus every live process whose environment carries one of the tree's `marks` (its
MCP_TETHER_TREE tokens, `proc.mark`: a daemon that setsid'd and double-forked before any
look saw it still carries the environment it inherited), and their descendants. Each is
a member by identity, signalled through `proc.signals` (identity re-checked right before
the signal) like any other. A process whose environment cannot be read (another user's,
a backend that shows none: the portable one), or that dropped the mark from it, and that
left the tree before any look saw it, is out of sight. `Tree.exact` says which.
"""

from __future__ import annotations

import os
import select
import signal
import time

from mcp_tether import platform
from mcp_tether.platform import backend
from mcp_tether.proc.identity import ProcessId, ProcRecord, read_info
from mcp_tether.proc.reap import has_children, reap_children
from mcp_tether.proc.signals import DENIED, GONE, SENT, pin, send, signal_group
from mcp_tether.proc.tree import children_map, descendants, snapshot

TYPE_CHECKING = False  # typing/collections.abc stay off the guard's start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from mcp_tether.ladder import LadderResult
    from mcp_tether.proc.inbox import SignalInbox
    from mcp_tether.proc.leave import Left

__all__ = ["Tree", "end_tree", "last_pid", "pidfds"]

# While signalling, how often to look for processes forked since the last look.
RESCAN_MIN = 0.002
RESCAN_MAX = 0.1
# Past this many pids allocated since the last look, read all of /proc instead.
FULL_SCAN_SPAN = 4096
# Rungs whose signal must reach processes forked while the rung lasts. A forwarded
# SIGINT/SIGHUP goes to what is there (a shell's Ctrl-C does no more).
CHASED = (signal.SIGTERM, signal.SIGKILL)


class Tree:
    """The descendants of this process (its child subreaper), and how to end them.

    group:   the server's process group (its pid, as `spawn(new_session=True)` makes it),
             signalled as one first; None if there is none.
    since:   `last_pid()` read before the tree's root was spawned, if known: then no
             look ever needs a full pass over /proc.
    marks:   the tree's tokens (`proc.mark.token`) that its members carry in
             MCP_TETHER_TREE: without a subreaper, how escapees are found (module doc).
    born:    the start time no member is older than (default: this process's own);
             only younger processes' environments are read for `marks`.
    inbox:   a `SignalInbox` recording SIGCHLD (and whatever else the caller wants);
             `wait()` sleeps on it and hands non-SIGCHLD signals to `on_signal`.
    on_reap: called with (pid, raw wait status) for every child reaped here.
    """

    def __init__(
        self,
        *,
        group: int | None = None,
        inbox: SignalInbox | None = None,
        on_reap: Callable[[int, int], None] | None = None,
        on_signal: Callable[[int], None] | None = None,
        close_stdin: Callable[[], None] | None = None,
        since: int | None = None,
        known: Iterable[ProcessId] = (),
        marks: Iterable[str] = (),
        born: float | None = None,
    ) -> None:
        self.me = os.getpid()
        self.group = group
        self.inbox = inbox
        self.on_reap = on_reap
        self.on_signal = on_signal
        self._close_stdin = close_stdin
        self.exact = platform.is_subreaper()
        self.known = set(known)  # members identified by the caller (its own scans)
        self.marks = frozenset(marks)
        self._marked: dict[ProcessId, bool] = {}  # environments read once per process
        self._unread: set[ProcessId] = set()  # environments unreadable at one look
        if born is None:  # no member is older than the tree's root: this process
            mine = read_info(self.me)
            born = None if mine is None else mine.start
        self._born = born
        self.seen: dict[ProcessId, ProcRecord] = {}  # every process ever met in the tree
        self.escapees: set[ProcessId] = set()  # of those, outside `group`
        self.sig: int | None = None  # the current rung's signal, once one was sent
        self._sent: set[ProcessId] = set()  # got `sig` already
        self._group_sent = False  # `sig` went to the whole group once in this rung
        self.reaped: list[tuple[int, int]] = []
        # ns_last_pid at the last look. `since` (read before the tree's root was forked)
        # lets even the first look skip the full pass: every member is newer than it.
        self._last: int | None = since
        self._members: dict[int, ProcRecord] = {}  # live members at the last look
        self.left: dict[ProcessId, Left] = {}  # out of the tree for good (`leave`)
        self._spared: set[ProcessId] = set()  # our own helpers, never of the tree
        self._left_pids: dict[int, ProcessId] = {}
        self._group_ok = True  # no left process in `group`: kill(-group) is ours alone

    # -- reaping ---------------------------------------------------------------------
    def reap(self) -> None:
        for pid, status in reap_children():
            self.reaped.append((pid, status))
            if self.on_reap is not None:
                self.on_reap(pid, status)

    def empty(self) -> bool:
        """Reap what has exited; True when no child is left (see the module doc)."""
        self.reap()
        if self.exact:
            return not (self._other_child() if self._skipping else has_children())
        members = self.scan(signal_new=False)
        # A child that became a zombie between the reap above and the scan is not a
        # member any more, yet still ours to reap: reap again, or it is left a zombie.
        self.reap()
        return not members

    def _other_child(self) -> bool:
        """A child of ours, running or not yet reaped, that was not left."""
        kids = backend.children(self.me)
        if kids is None:
            kids = [p.pid for p in snapshot().values() if p.ppid == self.me]
        for kid in kids:
            info = read_info(kid)
            if info is not None and info.ident not in self.left \
                    and info.ident not in self._spared and (
                    info.exited or not self._is_left(info)):
                return True
        return False

    # -- what is left for the user ------------------------------------------------------
    def leave(self, left: dict[ProcessId, Left]) -> None:
        """Take `left` out of the tree for good (see the module doc)."""
        for ident, why in left.items():
            self.left[ident] = why
            self._left_pids[ident.pid] = ident
            self.seen.pop(ident, None)
            self.escapees.discard(ident)
            self.known.discard(ident)
            self._members.pop(ident.pid, None)
            if self.group is not None and why.info.pgid == self.group:
                self._group_ok = False

    def spare(self, ident: ProcessId) -> None:
        """`ident` is a child of ours that is not of the tree (the guard's watcher): never
        a member, never signalled, not waited for."""
        self._spared.add(ident)

    @property
    def _skipping(self) -> bool:
        return bool(self.left or self._spared)

    def _is_left(self, info: ProcRecord) -> bool:
        """`info` was left (or spared), or a left process forked it since: it goes with
        its parent."""
        if not self._skipping:
            return False
        if info.ident in self.left or info.ident in self._spared:
            return True
        parent = self._left_pids.get(info.ppid)
        if parent is None:
            return False
        now = read_info(parent.pid)
        if now is None or now.start != parent.start:
            return False  # the parent is gone: this one was reparented to its subreaper
        from mcp_tether.proc.leave import UNDER, Left  # loaded by whoever decided

        self.leave({info.ident: Left(info, UNDER, f"{parent.pid} (its parent)")})
        return True

    def _descendants(self, snap: dict[int, ProcRecord]) -> list[ProcRecord]:
        """Our live descendants in `snap`, but for what was left and what is under it."""
        if not self._skipping:
            return descendants(self.me, snap)
        kids = children_map(snap)
        out: list[ProcRecord] = []
        stack, met = [self.me], {self.me}
        while stack:
            for child in kids.get(stack.pop(), ()):
                if child.pid in met:
                    continue
                met.add(child.pid)
                if self._is_left(child):
                    for under in descendants(child.pid, snap):
                        met.add(under.pid)
                        self._is_left(under)  # recorded: it goes with `child`
                    continue
                stack.append(child.pid)
                if not child.exited:
                    out.append(child)
        return out

    # -- finding members ---------------------------------------------------------------
    def note(self, info: ProcRecord) -> None:
        """Count `info` as a member (the server, known before any scan)."""
        if info.ident not in self.seen:
            self.seen[info.ident] = info
            if self.group is not None and info.pgid != self.group:
                self.escapees.add(info.ident)

    def _send(self, info: ProcRecord) -> str:
        """`self.sig` to one member now, unless it already had it."""
        assert self.sig is not None
        ident = info.ident
        if ident in self._sent:
            return GONE
        self._sent.add(ident)
        # A group member: one atomic kill(2) for its whole group, proven ours by this
        # member, so a hopper that stays in the group cannot fork between two signals.
        # Once per rung for SIGTERM (no member gets it twice), every time for SIGKILL.
        if (
            self.group is not None
            and self._group_ok
            and info.pgid == self.group
            and (self.sig == signal.SIGKILL or not self._group_sent)
            and signal_group(self.group, self.sig, [ident]) == SENT
        ):
            self._group_sent = True
            return SENT
        if info.ppid == self.me:
            # Our own child: its pid stays its own until *we* reap it (not done yet).
            return send(os.kill, info.pid, self.sig)
        pinned = pin(ident)
        if pinned is None:
            return GONE
        with pinned:
            return pinned.signal(self.sig)

    def _by_zombie(self, info: ProcRecord) -> None:
        """Our own zombie child still in the group proves the group is ours (its pid
        cannot be reused before we reap it): signal the group through it. This is what
        catches a hopper that stays in the group: its live hop is never there to be
        read, the hop before it is."""
        if (
            info.ppid == self.me
            and self.group is not None
            and self._group_ok
            and info.pgid == self.group
            and (self.sig == signal.SIGKILL or not self._group_sent)
            and signal_group(self.group, self.sig or signal.SIGTERM, [info.ident]) == SENT
        ):
            self._group_sent = True

    def scan(self, *, signal_new: bool = True) -> list[ProcRecord]:
        """Live descendants now. While a rung is chased, each newcomer gets its signal
        as soon as it is read.

        The first look reads the whole table. Later looks read only the members known so
        far and the pids allocated since the last look (`ns_last_pid`, where the backend
        knows it; otherwise every look reads the whole table): a process can
        only join the tree by being forked, and a fork takes a fresh pid. So a look
        costs what the tree does, not what the machine runs (thousands of processes
        make a full pass slower than a pid-hopper's hop)."""
        hurry = signal_new and self.sig in CHASED
        if hurry and self.exact:
            self._chase_children()
        last = last_pid()
        prev, self._last = self._last, last
        if prev is None or last is None or (last - prev) % backend.PID_MAX >= FULL_SCAN_SPAN:
            members = self._full_scan(hurry)
        else:
            members = self._new_pids_scan(prev, last, hurry)
            if not members and self.exact and _has_live_child():
                # Nothing found, yet a child of ours runs: a member this way of looking
                # missed (it never looks at an old pid again). Read everything once.
                members = self._full_scan(hurry)
        self._members = {p.pid: p for p in members}
        return members

    def _chase_children(self) -> None:
        """As a subreaper, every live child of ours but the left and the spared is a
        member (an orphaned hop is reparented to us): signal each now, from the kernel's
        short list of our children. A look over /proc is slower than a pid-hopper's hop
        where the machine is loaded or the namespace busy (it reads a listing the hop has
        left by then); this list names the live hop while it lives."""
        for kid in backend.children(self.me) or ():
            info = read_info(kid)
            if info is None or info.exited or info.ppid != self.me or (
                    self._skipping and self._is_left(info)):
                continue
            self.note(info)
            self._send(info)

    def _full_scan(self, hurry: bool) -> list[ProcRecord]:
        # Parents proven ours in this very scan: us, and members read (so far) with an
        # identity we have met before or just proved. A pid of a dead member reused by a
        # stranger is not in it: its start time differs.
        ours = {self.me}
        snap: dict[int, ProcRecord] = {}
        for pid in backend.pids():
            read = read_info(pid)
            if read is None:
                continue
            info = snap[read.pid] = read
            if info.exited:
                if hurry:
                    self._by_zombie(info)
                continue
            if self._skipping and self._is_left(info):
                continue
            if info.ppid in ours or info.ident in self.seen:
                ours.add(info.pid)
                if hurry:
                    self.note(info)
                    self._send(info)
        members = self._descendants(snap)
        if not self.exact:
            # No subreaper: a member whose parent died was reparented elsewhere; it is
            # still ours by identity, and so is what it forks, and so is a process that
            # carries our mark (it left before any look saw it).
            have = {p.pid for p in members}
            for info in list(snap.values()):
                if info.exited or info.pid in have or (
                        info.ident not in self.seen and info.ident not in self.known
                        and not self.marked(info)):
                    continue
                for p in (info, *descendants(info.pid, snap)):
                    if p.pid not in have and not self._is_left(p):
                        have.add(p.pid)
                        members.append(p)
        for info in members:
            self.note(info)
            if hurry:
                self._send(info)
        return members

    def _new_pids_scan(self, prev: int, last: int, hurry: bool) -> list[ProcRecord]:
        members: dict[int, ProcRecord] = {}
        # Members (and, below, processes of the tree) read as exited but still in the
        # table: parents of the tree all the same. Their children are ours and reparent
        # to us; while the rest of a multi-threaded process is still leaving (its leader
        # thread exits first and reads as a zombie), they are reparented to one of its
        # threads instead and /proc keeps showing the zombie's pid as their parent. Not
        # counting them would miss those children for good: later looks read only
        # members and pids newer than this look.
        exited: set[int] = set()
        for pid, old in self._members.items():
            info = read_info(pid)
            if info is not None and info.start == old.start:
                if not info.exited:
                    members[pid] = info
                else:
                    exited.add(pid)
        ours = {self.me, *members, *exited}
        pending: list[ProcRecord] = []
        gone: set[int] = set()  # read as exited or missing in this look
        zombies: list[ProcRecord] = []  # of those, still in the table
        n = (last - prev) % backend.PID_MAX
        # Newest first: a pid-hopper's live hop is among the last pids handed out, and
        # reading upwards from `prev` reaches it only after it has hopped again (on a
        # machine where reading /proc is slow, every time: nothing would ever be found).
        for k in range(n, 0, -1):
            pid = (prev + k - 1) % backend.PID_MAX + 1
            info = read_info(pid)  # a thread id reads too: `_is_process` tells them apart
            if info is not None and info.exited and hurry:
                self._by_zombie(info)
            if info is None or info.exited:
                gone.add(pid)
                if info is not None:
                    zombies.append(info)
                continue
            if pid in members or (self._skipping and self._is_left(info)):
                continue
            if info.ppid in ours and backend.is_process(pid):
                members[pid] = info
                ours.add(pid)
                self.note(info)
                if hurry:
                    self._send(info)
            else:
                pending.append(info)
        # A process read while its parent was still there, the parent gone since: it has
        # been reparented to us (its subreaper) by now, so read it again.
        pending = [q for q in (read_info(p.pid) if p.ppid in gone else p for p in pending)
                   if q is not None and not q.exited]
        if self._skipping:  # forked by a left process (read before it, newest first)
            pending = [q for q in pending if not self._is_left(q)]
        if not self.exact and self.marks:  # no subreaper: an orphan found by its mark
            for info in pending:
                if info.pid not in ours and self.marked(info) and backend.is_process(info.pid):
                    members[info.pid] = info
                    ours.add(info.pid)
                    self.note(info)
                    if hurry:
                        self._send(info)
        grown = True
        while grown:  # a child read before its parent (newest first, or a wrap-around)
            grown = False
            for z in zombies:
                if z.pid not in ours and z.ppid in ours:
                    ours.add(z.pid)  # a parent of the tree, not a member (see above)
                    grown = True
            for info in pending:
                if info.pid not in ours and info.ppid in ours and backend.is_process(info.pid):
                    members[info.pid] = info
                    ours.add(info.pid)
                    self.note(info)
                    if hurry:
                        self._send(info)
                    grown = True
        return list(members.values())

    def marked(self, info: ProcRecord) -> bool:
        """`info` carries one of the tree's marks in its environment: read once per
        process, and only for one started after this process (no member is older) and
        other than it or a process already left."""
        if not self.marks or info.pid == self.me or info.exited:
            return False
        got = self._marked.get(info.ident)
        if got is None:
            got = False
            if self._born is None or info.start >= self._born:
                from mcp_tether.proc import mark  # stdlib only, on the guard's path

                env = backend.channels().environ(info.pid)
                if not env and info.ident not in self._unread:
                    # Unreadable or empty now (seen for a daemon 3 ms old whose /proc
                    # entry read fine right after, and under load for a live process):
                    # not a member for this look, asked once more at the next one
                    # (another user's stays unreadable: then no).
                    self._unread.add(info.ident)
                    return False
                got = env is not None and bool(self.marks & set(mark.tokens(env.get(mark.TREE))))
            self._marked[info.ident] = got
        return got and not self._is_left(info)

    @property
    def by_marks(self) -> bool:
        """Without a subreaper, escapees are found by the tree's marks: there are marks,
        and this backend reads environments (the portable one does not)."""
        return bool(self.marks) and backend.channels().environ(self.me) is not None

    def members_now(self) -> list[ProcRecord]:
        """Live descendants now, signalling nobody."""
        return self.scan(signal_new=False)

    # -- the LadderTarget interface ------------------------------------------------------
    def close_stdin(self) -> None:
        if self._close_stdin is not None:
            self._close_stdin()

    def signal(self, sig: int) -> str:
        """`sig` to the group, then to every live descendant; see the module doc."""
        if sig != self.sig:
            self.sig = sig
            self._sent = set()
            self._group_sent = False
        outcomes: list[str] = []
        group_sent = False
        if self.group is not None and self._group_ok:
            # The group first, in one atomic kill(2), proven ours by a known member.
            known = [i for i, p in self.seen.items() if p.pgid == self.group]
            group_sent = signal_group(self.group, sig, known) == SENT
        members = self.scan(signal_new=False)
        if self.group is not None and self._group_ok and not group_sent:
            fresh = [p.ident for p in members if p.pgid == self.group]
            group_sent = bool(fresh) and signal_group(self.group, sig, fresh) == SENT
        if group_sent:
            self._group_sent = True
            outcomes.append(SENT)
        for info in members:
            if group_sent and info.pgid == self.group:
                self._sent.add(info.ident)  # had it through the group: not twice
            else:
                outcomes.append(self._send(info))
        if SENT in outcomes:
            return SENT
        return DENIED if DENIED in outcomes else GONE

    def wait(self, timeout: float) -> float | None:
        """Until the tree is empty (its monotonic instant) or `timeout` passed (None)."""
        deadline = time.monotonic() + timeout
        pause = RESCAN_MIN
        while True:
            if self.empty():
                return time.monotonic()
            fds: list[int] = []
            if self.sig in CHASED or not self.exact or self.inbox is None:
                known = len(self.seen)
                members = self.scan()
                if self.sig == signal.SIGKILL and len(self.seen) > known:
                    # Still forking, so not stuck: the last rung's time starts again.
                    deadline = max(deadline, time.monotonic() + timeout)
                fds = pidfds([m.pid for m in members[:64]])
                nap = pause
                pause = min(pause * 2, RESCAN_MAX)
            else:
                nap = timeout  # SIGCHLD wakes us: nothing else can empty the tree
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                _close_all(fds)
                return None
            try:
                self._sleep(min(nap, remaining), fds)
            finally:
                _close_all(fds)

    def kill_all(self, wait: float, attempts: int = 3) -> bool:
        """SIGKILL the whole tree and reap it, again while something is left (a fork
        between the look and the kill), at most `attempts` times; True when empty."""
        for _attempt in range(attempts):
            if self.empty():
                return True
            self.signal(signal.SIGKILL)
            self.wait(wait)
        return self.empty()

    def _sleep(self, seconds: float, fds: list[int]) -> None:
        poller = select.poll()
        for fd in fds:
            poller.register(fd, select.POLLIN)
        if self.inbox is not None:
            poller.register(self.inbox.fileno(), select.POLLIN)
        poller.poll(max(0, int(seconds * 1000 + 0.999)))
        if self.inbox is not None:
            for sig in self.inbox.drain():
                if sig != signal.SIGCHLD and self.on_signal is not None:
                    self.on_signal(sig)


def last_pid() -> int | None:
    """The last pid the kernel handed out in our pid namespace (None: cannot know).

    Read it before spawning a tree's root and pass it as `Tree(since=...)`."""
    return backend.last_pid()


def _has_live_child() -> bool:
    """A child of ours that has not exited (zombies do not count)."""
    kids = backend.children(os.getpid())
    if kids is None:
        return has_children()  # cannot list them: any child, zombies too
    for kid in kids:
        info = read_info(kid)
        if info is not None and not info.exited:
            return True
    return False


def pidfds(pids: Iterable[int]) -> list[int]:
    """Exit descriptors of `pids` (`platform.exit_fd`), readable when one exits (a change
    worth a look: not every one is our child, so SIGCHLD alone would not say so); none
    where the backend has none (then the caller's naps are short)."""
    fds: list[int] = []
    for pid in pids:
        try:
            fd = platform.exit_fd(pid)
        except OSError:
            continue
        if fd is not None:
            fds.append(fd)
    return fds


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)
    fds.clear()


def end_tree(
    tree: Tree,
    *,
    close_stdin: bool = False,
    grace: float = 0.0,
    term_grace: float | None = None,
    kill_wait: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> LadderResult:
    """Climb the ladder on `tree` until it is empty: [close stdin, grace,] SIGTERM,
    `term_grace`, SIGKILL, up to `kill_wait` to see it gone (ladder defaults: 2 s, 5 s).

    Every rung's signal also reaches processes forked while the rung lasts. The result
    says which rung emptied the tree; `survived` is True only if something is left
    after `kill_wait` (a process in uninterruptible sleep, or one we may not signal).
    """
    from mcp_tether import ladder  # deferred: not on the guard's pre-fork path

    return ladder.run_ladder(
        tree,
        close_stdin=close_stdin,
        grace=grace,
        term_grace=ladder.TERM_GRACE if term_grace is None else term_grace,
        kill_wait=ladder.KILL_WAIT if kill_wait is None else kill_wait,
        clock=clock,
    )
