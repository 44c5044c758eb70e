"""`mcp-tether run -- CMD...`: a guard that makes any stdio server die with its client.

Guarantees:
- Zero copy. The server inherits the guard's fds 0, 1, 2 (and anything else the host
  passed); the guard never reads or writes them and never writes a byte to stdout. Its
  own fds (signal pipe, pidfds) are close-on-exec.
- The server runs in a session (and so a process group) of its own, with
  PR_SET_PDEATHSIG(SIGKILL) set in the child before exec, and the guard is a child
  subreaper: descendants that escape the group (setsid + double fork) reparent to it.
- The client is gone when any of these happens, seen by one poll(2) loop:
  1. stdin hangs up (POLLHUP on a pipe; POLLRDHUP on a socket, so a half-close counts),
     seen without reading: the server shares that stdin and sees EOF by itself;
  2. the guard's parent dies (pidfd on the parent, getppid() as the fallback);
  3. SIGTERM, SIGINT or SIGHUP reach the guard (handlers only wake the loop).
- Then the shutdown ladder (`mcp_tether.ladder.run_ladder`) runs on the server's group
  plus every escaped descendant: after a hang-up, `--grace` for the server to exit on
  its own; after a parent death with stdin still open, no grace (no EOF will come);
  after a signal, the signal is forwarded to the group first and `--grace` follows; then
  SIGTERM, `--term-grace`, SIGKILL. A second SIGINT sends SIGKILL at once.
- When the server exits by itself, what is left of its tree gets the same ladder from
  SIGTERM on. The guard exits with the server's status (its code, 128+N after signal N)
  and never returns before the server is reaped; every child of the guard is reaped.
- Missing command: exit 127; not executable: 126 (one line on stderr, nothing started).

Trade-off of PR_SET_PDEATHSIG on the server: if the guard itself is SIGKILLed (or
crashes), the kernel SIGKILLs the server at once, with no grace and no chance to flush.
Only the server process is covered: its own children (in its group or escaped from it,
e.g. the real server behind an `sh -c` or `npx` wrapper) lose their subreaper with the
guard, are reparented to init and survive unless they notice by themselves (EOF on the
shared stdin). Without it, a SIGKILLed guard would leave the whole server behind, which
is the bug this command exists to fix. The guard does not set PDEATHSIG on itself: the
kernel would kill it before it could run the ladder (and the signal fires when the
parent *thread* exits, which hosts that spawn from a worker thread do all the time). It
watches the parent process instead.

Cost of the session: with CONFIG_SCHED_AUTOGROUP (most desktop kernels) a new session is
also a new scheduling group; on a loaded machine that measured as slower client<->server
ping-pong, exactly as when a client starts the server with start_new_session itself (the
Python SDK does). The guard itself is idle in poll(2) while bytes flow (0 CPU ticks in
bench/bench_guard.py, which prints the new-session baseline beside the guarded figure).

Import-light on purpose (it is on every guarded server's launch path): stdlib and
mcp_tether.{errors,log,platform,proc,ladder,watch} only, and the ladder only after the
fork, while the server starts. Not thread-safe: call `run_guarded` from the main thread
(signal handlers and the wakeup fd live there).
"""

from __future__ import annotations

import argparse
import errno
import os
import select
import signal
import sys
import time

from mcp_tether import log, platform
from mcp_tether.errors import CommandNotExecutable, CommandNotFound, TetherError, UsageError
from mcp_tether.proc import (
    ExitWaiter,
    ProcessId,
    ProcInfo,
    descendants,
    read_info,
    signal_group,
    signal_process,
    snapshot,
)
from mcp_tether.watch import HANGUP_MASK, ParentWatch, hangup_events

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs ms here
if TYPE_CHECKING:
    from mcp_tether.ladder import Rung

__all__ = ["GuardResult", "run_guarded", "configure", "command"]

# Signals that mean "stop" when sent to the guard; forwarded to the server's group.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Without a pidfd on the parent, how often the loop re-checks getppid().
PPID_POLL = 0.1
# `command()` ends the process itself once the run is over (see `_exit_at_once`);
# set to False to call it in-process (run_guarded never exits).
EXIT_AT_ONCE = True

# Why the guard started to stop.
SERVER_EXIT = "server-exit"
STDIN_HANGUP = "stdin-hangup"
PARENT_DEATH = "parent-death"
SIGNALLED = "signal"


class GuardResult:
    """What one guarded run did. Instants are time.monotonic() values.

    A plain class: @dataclass pulls in inspect and ast, milliseconds on every guarded
    server's launch path.
    """

    def __init__(
        self,
        *,
        argv: list[str],
        exit_status: int,
        reason: str,
        server_pid: int,
        started_at: float,
        ended_at: float,
        triggered_at: float | None = None,
        server_exited_at: float | None = None,
        signal: int | None = None,
        server_signal: int | None = None,
        stdin_open: bool = True,
        rungs: list[Rung] | None = None,
        others: list[ProcessId] | None = None,
        escapees: list[ProcessId] | None = None,
        survivors: list[ProcessId] | None = None,
        hurried: bool = False,
    ) -> None:
        self.argv = argv
        self.exit_status = exit_status  # the server's: its code, or 128+N after signal N
        self.reason = reason  # SERVER_EXIT | STDIN_HANGUP | PARENT_DEATH | SIGNALLED
        self.server_pid = server_pid
        self.started_at = started_at  # just before the fork
        self.ended_at = ended_at  # every descendant gone (or given up on)
        self.triggered_at = triggered_at  # client gone / signal seen; None for SERVER_EXIT
        self.server_exited_at = server_exited_at  # when the guard reaped it
        self.signal = signal  # the signal that triggered, for SIGNALLED
        self.server_signal = server_signal  # the signal the server died of, if it did
        self.stdin_open = stdin_open  # False when stdin had hung up when the ladder began
        self.rungs: list[Rung] = rungs or []
        self.others: list[ProcessId] = others or []  # the server's tree besides itself
        self.escapees: list[ProcessId] = escapees or []  # of those, outside its group
        self.survivors: list[ProcessId] = survivors or []  # alive at the end: a failure
        self.hurried = hurried  # a second SIGINT sent SIGKILL at once

    def __repr__(self) -> str:
        return f"GuardResult({self.reason!r}, status {self.exit_status}: {self.summary()!r})"

    @property
    def elapsed(self) -> float:
        """Seconds from the trigger (or the start) until everything was gone."""
        return self.ended_at - (self.triggered_at or self.started_at)

    @property
    def server_ended_by(self) -> str:
        """"self" if the server left on its own, else the rung ("sigterm", "sigkill")."""
        if self.hurried:
            return "sigkill"
        if self.server_exited_at is None:
            return "unknown"
        by = "self"
        for rung in self.rungs:
            if rung.action in ("sigterm", "sigkill") and rung.sent_at <= self.server_exited_at:
                by = rung.action
        return by

    def summary(self) -> str:
        """One line for stderr: why the guard stopped, and how the server ended."""
        t0 = self.triggered_at if self.triggered_at is not None else self.started_at
        parts: list[str] = []
        if self.reason == STDIN_HANGUP:
            parts.append("client gone (stdin hang-up)")
        elif self.reason == PARENT_DEATH:
            parts.append(
                "client gone (parent died"
                + (", stdin still open)" if self.stdin_open else ", stdin hang-up)")
            )
        elif self.reason == SIGNALLED:
            name = signal.Signals(self.signal).name if self.signal else "signal"
            parts.append(f"got {name}, forwarded to the server")
        else:
            parts.append(f"server {self._status_text()}")
        if self.reason != SERVER_EXIT:
            by = self.server_ended_by
            if self.server_exited_at is None:
                parts.append("server did not exit")
            elif self.hurried:
                gone = _ms(t0, self.server_exited_at)
                parts.append(f"SIGKILL at once on a second SIGINT, exited after {gone}")
            elif by == "self":
                parts.append(f"server exited by itself after {_ms(t0, self.server_exited_at)}")
            else:
                sent = next(r.sent_at for r in reversed(self.rungs) if r.action == by)
                parts.append(f"{by.upper()} after {_ms(t0, sent)}")
            if self.server_exited_at is not None:
                parts[-1] += f" ({self._status_text()})"
        if self.others:
            ended = [r for r in self.rungs if r.outcome in ("exited", "gone")]
            last = ended[-1].action if ended else "close-stdin"
            how = "" if last == "close-stdin" else f" by {last.upper()}"
            n = len(self.others)
            esc = f" ({len(self.escapees)} outside its group)" if self.escapees else ""
            parts.append(f"{n} more process{'es' if n > 1 else ''} of its tree{esc} ended{how}")
        if self.survivors:
            pids = " ".join(str(p.pid) for p in self.survivors)
            parts.append(f"STILL ALIVE: {pids}")
        return "; ".join(parts)

    def _status_text(self) -> str:
        if self.server_signal is not None:
            name = signal.Signals(self.server_signal).name
            return f"died of {name}, status {self.exit_status}"
        return f"exited with status {self.exit_status}"


def _ms(a: float, b: float) -> str:
    return f"{max(0.0, b - a) * 1000:.0f} ms"


def _status(waitstatus: int) -> int:
    code = os.waitstatus_to_exitcode(waitstatus)
    return 128 - code if code < 0 else code


class _Guard:
    """One guarded run: spawn, watch, ladder, reap. Also the ladder's target."""

    def __init__(self, argv: list[str], subreaper: bool) -> None:
        self.argv = argv
        self.subreaper = subreaper  # escaped descendants reparent to us
        self.childless = False
        self.me = os.getpid()
        self.server: ProcessId | None = None
        self.server_pid = 0
        self.waitstatus: int | None = None
        self.server_exited_at: float | None = None
        self.known: set[ProcessId] = set()  # every process ever seen in the server's tree
        self.others: set[ProcessId] = set()
        self.escapees: set[ProcessId] = set()
        self.pending_signals: list[int] = []
        self.sigints = 0
        self.hurried = False
        self.stopping = False
        self._sig_r = self._sig_w = -1

    # -- signals: handlers record (via the wakeup fd), the loop acts -----------------
    def install_signals(self) -> dict[int, object]:
        self._sig_r, self._sig_w = os.pipe()  # both O_CLOEXEC (PEP 446)
        os.set_blocking(self._sig_r, False)
        os.set_blocking(self._sig_w, False)
        old: dict[int, object] = {}
        for sig in (*STOP_SIGNALS, signal.SIGCHLD):
            # A Python-level handler is needed for the C handler to write the wakeup fd;
            # it does nothing itself (uvicorn/tini style: the main loop acts).
            old[sig] = signal.signal(sig, _noop)
        old[-1] = signal.set_wakeup_fd(self._sig_w, warn_on_full_buffer=False)
        return old

    def restore_signals(self, old: dict[int, object]) -> None:
        signal.set_wakeup_fd(old.pop(-1))  # type: ignore[arg-type]  # an int fd
        for sig, handler in old.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]  # what signal() gave back
        for fd in (self._sig_r, self._sig_w):
            os.close(fd)

    def drain(self) -> None:
        """Read recorded signals, reap children; act on signals only once stopping."""
        try:
            data = os.read(self._sig_r, 4096)
        except BlockingIOError:
            data = b""
        while len(data) == 4096:
            try:
                more = os.read(self._sig_r, 4096)
            except BlockingIOError:
                break
            data += more
            if len(more) < 4096:
                break
        for sig in data:
            if sig in STOP_SIGNALS:
                self.pending_signals.append(sig)
        self.reap()
        if self.stopping:
            for sig in self.pending_signals:
                self.on_signal_while_stopping(sig)
            self.pending_signals.clear()

    def reap(self) -> None:
        """waitpid every exited child: the server and orphans reparented to us.

        Also learns whether we have any child left at all (`childless`): as the subreaper
        of the server's tree, no child means no descendant, and no /proc scan is needed.
        """
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.childless = True
                return
            if pid == 0:
                self.childless = False
                return
            if pid == self.server_pid and self.waitstatus is None:
                self.waitstatus = st
                self.server_exited_at = time.monotonic()
                log.debug(f"server {pid} exited, status {_status(st)}")
            else:
                log.debug(f"reaped {pid}")

    def on_signal_while_stopping(self, sig: int) -> None:
        if sig == signal.SIGINT:
            self.sigints += 1
        if sig == signal.SIGINT and self.sigints >= 2 and not self.hurried:
            log.debug("second SIGINT: SIGKILL at once")
            self.hurried = True
            self.signal(signal.SIGKILL)
        elif not self.hurried:
            log.debug(f"forwarding {signal.Signals(sig).name}")
            self.signal(sig)

    # -- spawning ----------------------------------------------------------------
    def spawn(self) -> None:
        """fork + exec with setsid and PDEATHSIG; exec errors come back through a pipe."""
        err_r, err_w = os.pipe()
        blocked = {*STOP_SIGNALS, signal.SIGCHLD}
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        try:
            try:
                pid = os.fork()
            except OSError as exc:  # EAGAIN/ENOMEM: translated here, where we know what failed
                os.close(err_r)
                os.close(err_w)
                raise TetherError(f"cannot start {self.argv[0]}: {exc.strerror}") from exc
            if pid == 0:  # child: Python until exec, never back into the guard's code
                code = 0
                try:
                    os.close(err_r)
                    os.setsid()
                    # Handlers go back to default before unblocking, so that a signal
                    # meant for the server in this window is not taken for the guard's.
                    for sig in blocked:
                        signal.signal(sig, signal.SIG_DFL)
                    for name in ("SIGPIPE", "SIGXFSZ"):  # Python ignores them; exec keeps that
                        if hasattr(signal, name):
                            signal.signal(getattr(signal, name), signal.SIG_DFL)
                    signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
                    platform.set_pdeathsig(signal.SIGKILL)
                    # Re-check after setting it: the guard may have died before the call.
                    if os.getppid() != self.me:
                        os._exit(128 + signal.SIGKILL)
                    os.execvp(self.argv[0], self.argv)
                except OSError as exc:
                    code = exc.errno or errno.EIO
                except BaseException:  # noqa: BLE001  # anything: report, never unwind
                    code = errno.EIO
                try:
                    os.write(err_w, str(code).encode())
                finally:
                    os._exit(127)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        os.close(err_w)
        with os.fdopen(err_r, "rb") as fh:
            report = fh.read()  # EOF at exec (close-on-exec), or an errno
        if report:
            os.waitpid(pid, 0)
            code = int(report)
            name = self.argv[0]
            if code in (errno.ENOENT, errno.ENOTDIR):
                raise CommandNotFound(name)
            raise CommandNotExecutable(name, os.strerror(code).lower())
        self.server_pid = pid
        info = read_info(pid)
        if info is not None:
            self.server = info.ident
            self.known.add(info.ident)
        log.debug(f"server {pid} started: {' '.join(self.argv)}")

    # -- the server's tree --------------------------------------------------------
    def alive(self) -> list[ProcInfo]:
        """Live processes of the server's tree: descendants of the guard (we are their
        subreaper) plus members of the server's group proven ours by a known member."""
        self.reap()
        if self.childless and self.subreaper:
            # Orphans reparent to us before their parent turns zombie, and we reaped
            # every zombie: no child now means no descendant (and no group member: a
            # group lives in one session, and the whole session descends from us).
            return []
        snap = snapshot()
        tree = {p.pid: p for p in descendants(self.me, snap)}
        group = [p for p in snap.values() if p.pgid == self.server_pid and not p.exited]
        if any(p.ident in self.known or p.pid in tree for p in group):
            for p in group:
                tree.setdefault(p.pid, p)
        for p in tree.values():
            self.known.add(p.ident)
            if p.ident != self.server:
                self.others.add(p.ident)
        return list(tree.values())

    # -- LadderTarget -------------------------------------------------------------
    def close_stdin(self) -> None:
        """Nothing to do: the client closed it; the server sees the same EOF we saw."""

    def signal(self, sig: int) -> str:
        # The group first, proven ours by a process we know is in it (no scan needed):
        # the server starts to die while we look for what escaped the group.
        group = signal_group(self.server_pid, sig, self.known)
        procs = self.alive()
        members = [p.ident for p in procs if p.pgid == self.server_pid]
        if group != "sent" and members:  # members we had not met before prove it now
            group = signal_group(self.server_pid, sig, members)
        outcomes = [group]
        for p in procs:
            if p.pgid != self.server_pid:
                self.escapees.add(p.ident)
                outcomes.append(signal_process(p.ident, sig))
        log.debug(f"{signal.Signals(sig).name} to group {self.server_pid} and "
                  f"{len(procs) - len(members)} escapee(s): {outcomes}")
        if "sent" in outcomes:
            return "sent"
        return "denied" if "denied" in outcomes else "gone"

    def wait(self, timeout: float) -> float | None:
        """Until the server is reaped and nothing of its tree is alive, or timeout."""
        deadline = time.monotonic() + timeout
        while True:
            self.drain()
            procs: list[ProcInfo] = []
            if self.waitstatus is not None:
                # Scan only once the server is gone: while it runs the tree cannot be
                # empty, and a scan would compete for CPU with a server leaving on EOF.
                procs = self.alive()
                if not procs:
                    return time.monotonic()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if not procs:  # the server's exit arrives as SIGCHLD on the signal pipe
                select.select([self._sig_r], [], [], remaining)
                continue
            # Sleep until one of them exits or a signal arrives (SIGCHLD included). A
            # process forked meanwhile is found by the next scan, which runs at the
            # latest when everything watched now has exited.
            with ExitWaiter(p.ident for p in procs) as waiter:
                waiter.wait(remaining, extra_fds=[self._sig_r])

    # -- the main loop --------------------------------------------------------------
    def watch(self, parent: ParentWatch, stdin_fd: int) -> tuple[str, bool]:
        """Block until the client is gone, a stop signal comes, or the server exits."""
        poller = select.poll()
        poller.register(self._sig_r, select.POLLIN)
        hup_events = hangup_events(stdin_fd)
        if hup_events is not None:
            poller.register(stdin_fd, hup_events)
        if parent.fd is not None:
            poller.register(parent.fd, select.POLLIN)
        timeout_ms = None if parent.fd is not None else int(PPID_POLL * 1000)
        hung_up = False
        while True:
            if parent.gone():
                return PARENT_DEATH, hung_up or _hung_up(stdin_fd, hup_events)
            events = dict(poller.poll(timeout_ms))
            self.drain()
            if hup_events is not None and events.get(stdin_fd, 0) & HANGUP_MASK:
                return STDIN_HANGUP, True
            if self.pending_signals:
                return SIGNALLED, _hung_up(stdin_fd, hup_events)
            if parent.fd is not None and parent.fd in events:
                return PARENT_DEATH, _hung_up(stdin_fd, hup_events)
            if self.waitstatus is not None:
                return SERVER_EXIT, _hung_up(stdin_fd, hup_events)


def _hung_up(fd: int, events: int | None) -> bool:
    if events is None:
        return False
    p = select.poll()
    p.register(fd, events)
    return any(ev & HANGUP_MASK for _fd, ev in p.poll(0))


def _noop(signum: int, frame: object) -> None:
    """Python-level handler: the wakeup fd already carries the signal to the loop."""


def run_guarded(
    argv: list[str],
    grace: float | None = None,
    term_grace: float | None = None,
    *,
    kill_wait: float | None = None,
    stdin_fd: int = 0,
) -> GuardResult:
    """Run argv as a guarded server until it or its client is gone; see the module doc.

    grace / term_grace / kill_wait default to the ladder's constants (2 s, 2 s, 5 s).
    Raises CommandNotFound / CommandNotExecutable before anything runs. The calling
    process becomes a child subreaper (for as long as it lives) and must be the main
    thread; signal handlers are restored on return.
    """
    if not argv:
        raise UsageError("no command to run")
    parent = ParentWatch()  # first: the earlier we pin the parent, the less we miss
    subreaper = platform.set_subreaper()  # also loads prctl before the fork
    guard = _Guard(list(argv), subreaper)
    old = guard.install_signals()
    try:
        started = time.monotonic()
        guard.spawn()
        # Imported only now, while the server starts up in parallel: the ladder module
        # is the heaviest import on this path and nothing before the fork needs it.
        from mcp_tether import ladder as _ladder

        grace = _ladder.GRACE_AFTER_EOF if grace is None else grace
        term_grace = _ladder.TERM_GRACE if term_grace is None else term_grace
        kill_wait = _ladder.KILL_WAIT if kill_wait is None else kill_wait
        reason, hung_up = guard.watch(parent, stdin_fd)
        triggered = None if reason == SERVER_EXIT else time.monotonic()
        trigger_sig = guard.pending_signals[0] if reason == SIGNALLED else None
        log.debug(f"stopping: {reason}, stdin {'hung up' if hung_up else 'open'}")
        guard.stopping = True
        if reason == SIGNALLED:
            guard.drain()  # forwards the pending signal(s) to the group first
        if reason == SERVER_EXIT:
            grace_now, close_stdin = 0.0, False
        elif hung_up:
            # Whatever the trigger, the server has (or will) read EOF: let it leave.
            grace_now, close_stdin = grace, True
        else:
            grace_now, close_stdin = (grace if reason == SIGNALLED else 0.0), False
        ladder = _ladder.run_ladder(
            guard,
            close_stdin=close_stdin,
            grace=grace_now,
            term_grace=term_grace,
            kill_wait=kill_wait,
        )
        if guard.waitstatus is None:
            # Never return before the server is reaped: it was SIGKILLed (or is leaving).
            denied = any(r.outcome == "denied" for r in ladder.rungs)
            if denied:
                log.warning(f"server {guard.server_pid} could not be signalled (permission)")
            else:
                _, st = os.waitpid(guard.server_pid, 0)
                guard.waitstatus = st
                guard.server_exited_at = time.monotonic()
        guard.reap()
        survivors = [] if not ladder.survived else [p.ident for p in guard.alive()]
        status = 1 if guard.waitstatus is None else _status(guard.waitstatus)
        return GuardResult(
            argv=list(argv),
            exit_status=status,
            reason=reason,
            server_pid=guard.server_pid,
            started_at=started,
            ended_at=time.monotonic(),
            triggered_at=triggered,
            server_exited_at=guard.server_exited_at,
            signal=trigger_sig,
            stdin_open=not hung_up,
            rungs=ladder.rungs,
            others=sorted(guard.others),
            escapees=sorted(guard.escapees),
            survivors=survivors,
            hurried=guard.hurried,
            server_signal=(
                os.WTERMSIG(guard.waitstatus)
                if guard.waitstatus is not None and os.WIFSIGNALED(guard.waitstatus)
                else None
            ),
        )
    finally:
        guard.restore_signals(old)
        parent.close()


# -- the command -------------------------------------------------------------------
def configure(parser: argparse.ArgumentParser, name: str) -> None:
    parser.usage = f"mcp-tether {name} [--grace S] [--term-grace S] -- CMD [ARGS...]"
    parser.add_argument(
        "--grace",
        type=float,
        default=None,
        metavar="S",
        help="seconds the server gets to exit by itself after stdin hangs up (default 2)",
    )
    parser.add_argument(
        "--term-grace",
        type=float,
        default=None,
        metavar="S",
        help="seconds between SIGTERM and SIGKILL (default 2)",
    )
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="the server command and its args")


def command(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise UsageError("no command given: mcp-tether run [--grace S] -- CMD [ARGS...]")
    if min(args.grace or 0.0, args.term_grace or 0.0) < 0:
        raise UsageError("--grace and --term-grace must be >= 0")
    result = run_guarded(cmd, grace=args.grace, term_grace=args.term_grace)
    log.say(f"mcp-tether run: {result.summary()}")
    if EXIT_AT_ONCE:
        _exit_at_once(result.exit_status)
    return result.exit_status


def _exit_at_once(status: int) -> None:
    """Skip interpreter teardown (~5 ms): the host is waiting for our exit, we hold no
    buffered output (stdout is never written, log lines go through os.write) and every
    child is reaped. Same as returning `status` through cli.main, minus the wait."""
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105  # contextlib would pull functools onto the guard's start-up
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(status)
