"""One guarded run: spawn the server, watch for the client's end, climb the ladder.

Everything process-level goes through the core: `proc.spawn` (session, PDEATHSIG,
127/126 before anything runs), `proc.inbox.SignalInbox` (handlers record, this loop
acts), `proc.end.Tree` (the whole tree, ended until no child is left to reap) and
`proc.reap`. See the package docstring for the guarantees of `run_guarded`.
"""

from __future__ import annotations

import os
import select
import signal
import time

from mcp_tether import container, log, platform
from mcp_tether.errors import UsageError
from mcp_tether.guard.result import (
    PARENT_DEATH,
    SERVER_EXIT,
    SIGNALLED,
    STDIN_HANGUP,
    GuardResult,
)
from mcp_tether.proc import ProcessId, mark, read_info
from mcp_tether.proc.end import Tree, last_pid, pidfds
from mcp_tether.proc.inbox import SignalInbox
from mcp_tether.proc.reap import exit_status, wait_child
from mcp_tether.proc.spawn import Spawned, spawn
from mcp_tether.watch import HANGUP_MASK, ParentWatch, hangup_events, is_null_device

TYPE_CHECKING = False
if TYPE_CHECKING:
    from mcp_tether.container import ContainerFollow
    from mcp_tether.ladder import LadderResult, Rung

__all__ = ["run_guarded", "STOP_SIGNALS", "FATAL_SIGNALS"]

# Signals that mean "stop" when sent to the guard; forwarded to the server's group.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Every other signal whose default action would end the guard at once and that a
# handler can take (signal(7): "Term" and "Core"), for a stray kill of the supervisor:
# dying of it would leave the server to PDEATHSIG and its escaped descendants to init.
# Caught, each one runs the ladder from SIGTERM (it is not forwarded: SIGUSR1 opens
# Node's inspector, SIGQUIT makes a JVM dump its threads) before the guard goes.
# Left out: SIGPIPE (Python ignores it from the start), SIGKILL/SIGSTOP (cannot be
# caught), and the faults a program raises on itself (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
# SIGTRAP, SIGSYS, SIGABRT): a handler that only records would return into the fault.
FATAL_SIGNALS = platform.signals(
    "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM", "SIGPROF", "SIGIO", "SIGPWR",
    "SIGSTKFLT", "SIGXCPU", "SIGXFSZ", realtime=True)
# Without a pidfd on the parent, how often the loop re-checks getppid().
PPID_POLL = 0.1
# Test-only (tests/test_guard.py): a path; the guard writes "GUARD_PID SERVER_PID" there
# right after it spawned the server and before it names the server to its watcher, then
# waits there (at most PAUSE_MAX s) for the test to SIGKILL it in that window.
PAUSE_ENV = "MCP_TETHER_TEST_PAUSE_AFTER_SPAWN"
PAUSE_MAX = 120.0


class _Trigger:
    """What ended the watch: the reason, whether stdin had hung up, when (None for a
    server exit: nothing triggered the ladder) and the stop signal (SIGNALLED only)."""

    __slots__ = ("reason", "hung_up", "at", "signal")

    def __init__(self, reason: str, hung_up: bool, sig: int | None) -> None:
        self.reason = reason
        self.hung_up = hung_up
        self.at = None if reason == SERVER_EXIT else time.monotonic()
        self.signal = sig


class _Session:
    """The state of one run; also the hooks the Tree calls (on_reap, on_signal)."""

    def __init__(self, argv: list[str], inbox: SignalInbox) -> None:
        self.argv = argv
        self.inbox = inbox
        self.server: Spawned | None = None
        self.status: int | None = None  # the server's raw wait status, once reaped
        self.exited_at: float | None = None
        self.pending: list[int] = []  # stop signals seen while watching
        self.sigints = 0
        self.hurried = False
        self.stopping = False
        self.tree: Tree | None = None
        self.since: int | None = None  # the last pid before the server's (`start`)
        self.token: str | None = None  # the tree's mark (`start`)
        self.holders: dict[int, ProcessId] = {}  # pid -> ident, holding our stdio
        self.handed_over: set[ProcessId] = set()  # every holder ever seen
        self.holder_status: int | None = None  # raw status of the last holder we reaped

    # -- start-up ---------------------------------------------------------------------
    def start(self, run_argv: list[str], *, gate: bool) -> Spawned:
        """Spawn the server in a session of its own (gate: it execs only at
        `server.go()`, `proc.spawn`); `track` next."""
        self.since = last_pid()  # every process of the server's tree will have a newer pid
        # The tree's mark: what the server keeps out of it (`outside_tether`) names it.
        self.token = mark.own_token()
        env = None if self.token is None else mark.with_token(os.environ, self.token)
        server = self.server = spawn(run_argv, env=env, new_session=True,
                                     pdeathsig=signal.SIGKILL, gate=gate)
        log.debug(f"server {server.pid} started: {' '.join(self.argv)}")
        return server

    def track(self) -> Tree:
        """The Tree that will end the started server's tree (read once it has exec'd)."""
        assert self.server is not None
        # Without a subreaper, the mark is how a daemon that left the group is found.
        tree = self.tree = Tree(group=self.server.pid, inbox=self.inbox,
                                on_reap=self.on_reap, on_signal=self.on_signal,
                                since=self.since,
                                marks=() if self.token is None else (self.token,))
        info = read_info(self.server.pid)
        if info is not None:
            tree.note(info)
        return tree

    # -- hooks -------------------------------------------------------------------------
    def on_reap(self, pid: int, status: int) -> None:
        if self.server is not None and pid == self.server.pid and self.status is None:
            self.status = status
            self.exited_at = time.monotonic()
            log.debug(f"server {pid} exited, status {exit_status(status)}")
            return
        if pid in self.holders:
            self.holder_status = status
        log.debug(f"reaped {pid} ({exit_status(status)})")

    def on_signal(self, sig: int) -> None:
        """A signal that reached the guard while the ladder runs."""
        if sig not in STOP_SIGNALS:
            return
        assert self.tree is not None
        if sig == signal.SIGINT:
            self.sigints += 1
        if sig == signal.SIGINT and self.sigints >= 2 and not self.hurried:
            log.debug("second SIGINT: SIGKILL at once")
            self.hurried = True
            self.tree.signal(signal.SIGKILL)
        elif not self.hurried:
            log.debug(f"forwarding {signal.Signals(sig).name}")
            self.tree.signal(sig)

    def drain(self) -> None:
        """Take recorded signals; reap (SIGCHLD or not: reaping is cheap and exact)."""
        for sig in self.inbox.drain():
            if sig in STOP_SIGNALS or sig in FATAL_SIGNALS:
                self.pending.append(sig)
        assert self.tree is not None
        self.tree.reap()

    # -- the launcher case -------------------------------------------------------------
    def stdio_holders(self, stdin_fd: int) -> dict[int, ProcessId]:
        """Live descendants that hold the guard's stdin or stdout (pipes/sockets only)."""
        assert self.tree is not None
        if self.tree.empty():  # no child left: no descendant at all, nothing to scan
            return {}
        from mcp_tether.proc.fds import holds, stdio_key  # only after a server exit

        keys = {k for k in (stdio_key(stdin_fd), stdio_key(1)) if k is not None}
        if not keys:
            return {}
        out: dict[int, ProcessId] = {}
        for info in self.tree.members_now():
            # Unknown (a backend that cannot see fds) counts as holding: ending what may
            # be the real server behind a launcher is the one mistake not to make.
            if holds(info.pid, keys) is not False:
                out[info.pid] = info.ident
        return out

    # -- watching ----------------------------------------------------------------------
    def watch(self, parents: list[ParentWatch], stdin_fd: int) -> tuple[str, bool]:
        """Block until the client is gone, a stop signal comes, or the server (and every
        descendant still holding our stdio) has exited. A stdin at /dev/null is at EOF
        from the start: the client is gone before it began (the ladder runs at once)."""
        if is_null_device(stdin_fd):
            return STDIN_HANGUP, True
        poller = select.poll()
        poller.register(self.inbox.fileno(), select.POLLIN)
        hup_events = hangup_events(stdin_fd)
        if hup_events is not None:
            poller.register(stdin_fd, hup_events)
        parent_fds = {p.fd for p in parents if p.fd is not None}
        for fd in parent_fds:
            poller.register(fd, select.POLLIN)
        blind = any(p.fd is None and p.ppid_check for p in parents)
        timeout_ms = int(PPID_POLL * 1000) if blind else None
        watched: list[int] = []  # pidfds of holders
        try:
            while True:
                if any(p.gone() for p in parents):
                    return PARENT_DEATH, _hung_up(stdin_fd, hup_events)
                events = dict(poller.poll(timeout_ms))
                self.drain()
                if hup_events is not None and events.get(stdin_fd, 0) & HANGUP_MASK:
                    return STDIN_HANGUP, True
                if self.pending:
                    return SIGNALLED, _hung_up(stdin_fd, hup_events)
                if parent_fds & events.keys():
                    return PARENT_DEATH, _hung_up(stdin_fd, hup_events)
                if self.status is None:
                    continue
                self.holders = self.stdio_holders(stdin_fd)
                if not self.holders:
                    return SERVER_EXIT, _hung_up(stdin_fd, hup_events)
                if not self.handed_over:
                    log.info(f"server exited ({exit_status(self.status)}); guarding "
                             f"{len(self.holders)} process(es) still on its stdio")
                self.handed_over.update(self.holders.values())
                for fd in watched:
                    poller.unregister(fd)
                    os.close(fd)
                watched = pidfds(self.holders)
                for fd in watched:
                    poller.register(fd, select.POLLIN)
                if not watched:  # no pidfds: look again now and then
                    timeout_ms = int(PPID_POLL * 1000)
        finally:
            for fd in watched:
                os.close(fd)

    def wait_for_trigger(self, parents: list[ParentWatch], stdin_fd: int) -> _Trigger:
        """Watch until something ends the run; what it was."""
        reason, hung_up = self.watch(parents, stdin_fd)
        trigger = _Trigger(reason, hung_up, self.pending[0] if reason == SIGNALLED else None)
        log.debug(f"stopping: {reason}, stdin {'hung up' if hung_up else 'open'}")
        return trigger

    # -- stopping ----------------------------------------------------------------------
    def leave_users(self) -> None:
        """Before any rung: take out of the tree what the server detached on purpose for
        its user (`proc.leave`). They are never signalled nor waited for, and are named."""
        assert self.tree is not None and self.server is not None
        if self.tree.empty():
            return
        members = self.tree.members_now()
        if all(m.pid == self.server.pid for m in members):
            return  # the server alone: it is never its user's
        from mcp_tether.proc.leave import decide  # only when the server has a tree

        self.tree.leave(decide(members, root=os.getpid(), server_sid=self.server.pid,
                               known=self.tree.seen))

    def begin_stop(self, reason: str, stdin_fd: int) -> None:
        """The ladder is next: take over from a launcher that left just before the
        client did, then forward the stop signals seen while watching."""
        self.stopping = True
        if reason != SERVER_EXIT and self.status is not None and not self.handed_over:
            # The launcher left just before the client did: whoever holds our stdio now
            # is the real server, whose status we mirror (as if we had seen it first).
            self.holders = self.stdio_holders(stdin_fd)
            self.handed_over.update(self.holders.values())
        for sig in self.pending:  # forward stop signals to the group (and escapees) first
            self.on_signal(sig)
        self.pending.clear()

    def reap_server(self, rungs: list[Rung]) -> None:
        """Never return before the server is reaped: it was SIGKILLed (or is leaving)."""
        assert self.server is not None and self.tree is not None
        if self.status is None:
            if any(r.outcome == "denied" for r in rungs):
                log.warning(f"server {self.server.pid} could not be signalled (permission)")
            else:
                self.on_reap(self.server.pid, wait_child(self.server.pid))
        self.tree.reap()


def _hung_up(fd: int, events: int | None) -> bool:
    if events is None:
        return False
    p = select.poll()
    p.register(fd, events)
    return any(ev & HANGUP_MASK for _fd, ev in p.poll(0))


def run_guarded(
    argv: list[str],
    grace: float | None = None,
    term_grace: float | None = None,
    *,
    kill_wait: float | None = None,
    stdin_fd: int = 0,
    front: bool = False,
) -> GuardResult:
    """Run argv as a guarded server until it or its client is gone; see the package doc.

    grace / term_grace / kill_wait default to the ladder's constants (2 s, 2 s, 5 s).
    Raises CommandNotFound / CommandNotExecutable before anything runs. The calling
    process is a child subreaper while this runs and must be the main thread; signal
    handlers are restored on return.
    front=True (the `run` command): fork a thin front first (`proc.front`) that keeps
    the caller's pid and mirrors our exit status, so that a SIGKILL of that pid is a
    parent death this process survives and answers with the ladder. The calling
    process then continues in the child; only for a process that exits after the run
    (it returns with the signals it watched blocked: the run is over, nothing is left
    for them to stop, and the caller still has its report and summary to write).
    """
    if not argv:
        raise UsageError("no command to run")
    host = ParentWatch()  # first: the earlier we pin the parent, the less we miss
    parents = [host]
    if front:
        from mcp_tether.proc.front import split

        front_pid = split()
        if front_pid is not None:  # we are the supervisor now; our parent is the front
            host.beyond()
            parents.insert(0, ParentWatch(expected_ppid=front_pid))
    try:
        signals = (*STOP_SIGNALS, *FATAL_SIGNALS, signal.SIGCHLD)
        with platform.subreaper(), SignalInbox(signals) as inbox:
            try:
                return _run(list(argv), inbox, parents, grace, term_grace, kill_wait,
                            stdin_fd)
            finally:
                if front:
                    # This process ends right after the run. Once the inbox restores the
                    # default actions, a late stop signal (the host's SIGTERM, forwarded
                    # by the front while it waits for us) would kill it before its
                    # report and summary line: keep them blocked until it exits.
                    signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    finally:
        for p in parents:
            p.close()


def _run(
    argv: list[str],
    inbox: SignalInbox,
    parents: list[ParentWatch],
    grace: float | None,
    term_grace: float | None,
    kill_wait: float | None,
    stdin_fd: int,
) -> GuardResult:
    """The run in the order of its ladder: start the server (following its container),
    watch for the trigger, leave what the server detached for its user, take over from
    a launcher and forward stop signals, choose the first rung, climb, reap the server,
    and say what happened."""
    s = _Session(argv, inbox)
    started = time.monotonic()
    follow = _follow_container(argv)
    watcher = None
    if not platform.has_pdeathsig():  # nothing would end the tree if we were SIGKILLed
        from mcp_tether.proc import watcher as _watcher

        watcher = _watcher.start(term_grace=term_grace, kill_wait=kill_wait)
    try:
        # With a watcher, the server's child waits at a gate until the watcher knows its
        # name: were we SIGKILLed before, the child would exit unexec'd (the gate's EOF)
        # instead of running on unnamed, where no environment can be read (portable).
        server = s.start(argv if follow is None else follow.argv, gate=watcher is not None)
        try:
            if PAUSE_ENV in os.environ:
                _pause_for_test(os.environ[PAUSE_ENV], server)
            if watcher is not None:
                watcher.server(server.ident)
        except BaseException:
            server.cancel()  # it never runs
            raise
        server.go()  # exec errors (127/126) come from here when gated
    except BaseException:
        if watcher is not None:
            watcher.stand_down()  # nothing started: nothing for it to end
        raise
    tree = s.track()
    if watcher is not None:
        tree.spare(watcher.ident)  # our child, not the server's tree
    # Imported only now, while the server starts up in parallel: the ladder module is
    # the heaviest import on this path and nothing before the fork needs it.
    from mcp_tether import ladder as _ladder

    try:
        trigger = s.wait_for_trigger(parents, stdin_fd)
        s.leave_users()
        s.begin_stop(trigger.reason, stdin_fd)
        grace_now, close_stdin = _first_rung(
            trigger, _ladder.GRACE_AFTER_EOF if grace is None else grace)
        target = tree if follow is None else container.WithContainer(tree, follow)
        ladder = _ladder.run_ladder(
            target, close_stdin=close_stdin, grace=grace_now,
            term_grace=_ladder.TERM_GRACE if term_grace is None else term_grace,
            kill_wait=_ladder.KILL_WAIT if kill_wait is None else kill_wait)
        s.reap_server(ladder.rungs)
        survivors = [p.ident for p in tree.members_now()] if ladder.survived else []
        if watcher is not None:
            watcher.stand_down()
    finally:
        if watcher is not None:
            watcher.abandon()
        server.close()
        if follow is not None:
            follow.end()
    return _result(s, started, trigger, ladder, survivors, _mirrored_status(s, follow))


def _pause_for_test(path: str, server: Spawned) -> None:
    """Test-only (`PAUSE_ENV`): say where we are, then stand still in the window between
    the server's spawn and its naming to the watcher, for a test to SIGKILL us there."""
    with open(path + ".tmp", "w") as fh:
        fh.write(f"{os.getpid()} {server.pid}")
    os.rename(path + ".tmp", path)
    time.sleep(PAUSE_MAX)


def _follow_container(argv: list[str]) -> ContainerFollow | None:
    """A container run: its processes live under the engine, not under us; follow the
    container (cidfile + labels added to argv) so the ladder reaches it too."""
    return container.follow_for(argv) if container.maybe_container_run(argv) else None


def _first_rung(trigger: _Trigger, grace: float) -> tuple[float, bool]:
    """The ladder's first rung for this trigger: (its grace, close the server's stdin?)."""
    if trigger.reason == SERVER_EXIT:
        return 0.0, False
    if trigger.hung_up:
        # Whatever the trigger, the server has (or will) read EOF: let it leave.
        return grace, True
    # A forwarded stop signal gets its grace; a stray signal to the guard (not
    # forwarded) is like a parent death with stdin open: nothing else will come.
    return (grace if trigger.signal in STOP_SIGNALS else 0.0), False


def _mirrored_status(s: _Session, follow: ContainerFollow | None) -> int:
    """The guard's exit status, a shell's mirror of the server's: its own (1 if never
    reaped), the container's when the engine client died first, the real server's when
    a launcher handed over."""
    own = None if s.status is None else exit_status(s.status)
    status = 1 if own is None else own
    if follow is not None and follow.exit_code is not None and (
            s.status is None or os.WIFSIGNALED(s.status)):
        status = follow.exit_code  # the engine client died first: the container's own
    if s.handed_over and own == 0 and s.holder_status is not None:
        status = exit_status(s.holder_status)  # the real server's, behind the launcher
    return status


def _result(
    s: _Session,
    started: float,
    trigger: _Trigger,
    ladder: LadderResult,
    survivors: list[ProcessId],
    status: int,
) -> GuardResult:
    """What the run did, for the report and the summary line."""
    assert s.server is not None and s.tree is not None
    return GuardResult(
        argv=s.argv,
        exit_status=status,
        reason=trigger.reason,
        server_pid=s.server.pid,
        started_at=started,
        ended_at=time.monotonic(),
        triggered_at=trigger.at,
        server_exited_at=s.exited_at,
        signal=trigger.signal,
        stdin_open=not trigger.hung_up,
        rungs=ladder.rungs,
        others=sorted(i for i in s.tree.seen if i != s.server.ident),
        escapees=sorted(s.tree.escapees),
        survivors=survivors,
        hurried=s.hurried,
        server_signal=(
            os.WTERMSIG(s.status) if s.status is not None and os.WIFSIGNALED(s.status)
            else None
        ),
        holders=sorted(s.handed_over),
        server_status=None if s.status is None else exit_status(s.status),
        left=sorted(s.tree.left.values(), key=lambda v: v.ident),
    )
