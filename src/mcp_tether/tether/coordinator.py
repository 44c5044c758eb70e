"""`ShutdownCoordinator`: notices the client going, then ends the server its own way, once.

Triggers (once armed): the server's serving returned by itself (stdin EOF reached the
SDK, or it stopped), stdin hung up (every writer gone; POLLRDHUP on a socket, so a
half-close counts), stdin at /dev/null from the start, the parent process dying (pidfd,
else getppid() polled), SIGTERM, SIGINT, SIGHUP. fd 0 is never read: a private
duplicate is only poll()ed for a hang-up. Signals arrive through `proc.SignalInbox`
(handlers only record); one watcher thread acts, so this works while the main thread
sits in the event loop or in the interpreter's join of a non-daemon thread.

The one shutdown, whichever triggers race, all on the watcher thread:
1. End the server through its own path (when it is bound: `run()` binds it, `tethered()`
   after `bind()`): its read stream ends as at EOF, after the in-flight requests are
   answered (`drain`), so the SDK's session stops and its lifespan unwinds normally.
   After a stdin hang-up the SDK is first given `EOF_GRACE` to read what is left and
   see the EOF itself. Still unwinding after its share of the deadline (an equal share
   with each hook, at most half): the serving scope is cancelled (awaits in the
   lifespan then raise), last resort.
2. Cleanup hooks, newest first, each in its share of the rest of the deadline; async
   ones on the server's loop while it is alive (see `hooks`).
3. The server's own children (`children`): armed, the server became the subreaper of its
   tree where the platform allows; now every live descendant is ended with the ladder
   (SIGTERM, SIGKILL, identity-checked), never the process group (it may be the host's).
4. Flush stdout/stderr (bounded), one line on stderr naming the trigger, the time, how
   a drain ended (nothing in flight, the calls answered, or its time ran out), and
   whatever failed, was cut off at its share or skipped; then `os._exit(status)`, so no
   thread, executor or task group can hold the process. Status 0 for the transport
   ending or parent death, 128+N for signal N, 1 when the server failed.

`drain` is clamped so that drain + deadline fits the host's window (2 s from stdin EOF
to SIGTERM, 2 s from SIGTERM to SIGKILL, `ladder`); a clamp is reported at start.
PR_SET_PDEATHSIG is deliberately not used: it fires when the parent *thread* exits.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import threading
import time
import traceback
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any

from mcp_tether import log, platform
from mcp_tether._launch import STARTED_UNDER
from mcp_tether.ladder import GRACE_AFTER_EOF, TERM_GRACE
from mcp_tether.tether import hooks as _hooks
from mcp_tether.tether.binding import Binding, find_lowlevel, wake_stdin_reader
from mcp_tether.tether.stdio import flush_std_streams
from mcp_tether.watch import ParentWatch, hangup_events, is_null_device

__all__ = ["ShutdownCoordinator", "DEFAULT_DEADLINE", "EOF_GRACE", "PARENT_POLL_INTERVAL"]

DEFAULT_DEADLINE = 1.0  # seconds for the server's own unwind and every hook together
# After stdin hung up, how long the SDK may take to read what is left and see the EOF
# itself before we end its transport (ending it early would drop unread requests).
EOF_GRACE = 0.5
CANCEL_GRACE = 0.1  # after the last-resort cancel, how long the unwind may still take
FLUSH_TIMEOUT = 0.1  # a flush into a full pipe nobody reads must not hold the exit
PARENT_POLL_INTERVAL = 0.2  # getppid() fallback only; pidfds need no timer
HOST_WINDOW = min(GRACE_AFTER_EOF, TERM_GRACE)  # what a host's ladder lets us run

SIGNALS = platform.signals("SIGTERM", "SIGINT", "SIGHUP")
_STOP, _SERVED = b"\x00", b"\x01"  # bytes on the watcher's own wake pipe

_active_lock = threading.Lock()
_active: ShutdownCoordinator | None = None
_fork_hook_installed = False


def _after_fork_in_child() -> None:
    """A forked child is not tethered: default signal dispositions, no shared pipes."""
    coordinator = _active
    if coordinator is not None:
        with contextlib.suppress(Exception):
            if coordinator._inbox is not None:
                coordinator._inbox.restore()


def _drained(b: Binding, in_time: bool) -> str:
    """How the drain ended, in the stderr line's words: nothing was in flight, the calls in
    flight were answered, or its time ran out with some still in flight."""
    if not in_time:
        return f"its time ran out with {len(b.in_flight)} call(s) in flight"
    if not b.held:
        return "nothing in flight"
    return f"{b.held} call(s) in flight, {b.held - (b.left or 0)} answered"


class ShutdownCoordinator:
    """One process's tether to its client (see the module docstring).

    Use it through `tethered()` or `run()`. `exit` is `os._exit`; tests may pass a
    recorder instead, so the whole shutdown can be exercised without ending the process.
    """

    def __init__(
        self,
        *,
        deadline: float = DEFAULT_DEADLINE,
        drain: float | None = None,
        stdio: bool = True,
        exit: Callable[[int], Any] = os._exit,
        children: bool | None = None,
    ) -> None:
        if not (isinstance(deadline, (int, float)) and math.isfinite(deadline) and deadline > 0):
            raise ValueError(f"deadline must be a finite number of seconds > 0, got {deadline!r}")
        if drain is not None and not (
            isinstance(drain, (int, float)) and math.isfinite(drain) and drain >= 0
        ):
            raise ValueError(f"drain must be a finite number of seconds >= 0, got {drain!r}")
        self.deadline = float(deadline)
        self.drain = float(drain or 0.0)
        room = max(0.0, HOST_WINDOW - self.deadline)
        self.drain_clamped = self.drain > room
        self.drain = min(self.drain, room)
        self.stdio = stdio
        self._exit = exit
        # End the process's own descendants at shutdown. By default only when `exit` is
        # the real one: a recorder (tests) does not end the process, and the children of
        # the process it runs in (a test runner) are not the server's to end.
        self.children = (exit is os._exit) if children is None else children
        self._adopted = False
        self.children_ended: str | None = None  # the summary, when there were any
        self.drained: str | None = None  # how the drain ended, when there was one
        self._hooks: list[_hooks.Hook] = []
        self._once = threading.Lock()
        self._exited = threading.Event()
        self._progress = threading.Condition()
        self._served = threading.Event()  # the server's serving returned (run(): all of it)
        self._served_exc: BaseException | None = None
        self._binding: Binding | None = None
        self._release: Any = None  # anyio.Event on the server's loop: the loop may end
        self._started = False
        self._wake_r = self._wake_w = -1
        self._inbox: Any = None
        self._parent: ParentWatch | None = None
        self._stdin_fd: int | None = None
        self._stdin_events = 0
        self._stdin_null = False
        self._watcher: threading.Thread | None = None
        # What happened, for tests and for anyone embedding this.
        self.reason: str | None = None
        self.status: int | None = None
        self.cleanup_ms: float | None = None
        self.unwound: str = "not bound"  # how step 1 went
        self.outcomes: list[_hooks.HookOutcome] = []

    # -- registration and binding ---------------------------------------------------------

    def add_cleanup(self, fn: Any) -> Any:
        """Register `fn` (sync or async) to run once at shutdown; returns it."""
        _hooks.register(fn, into=self._hooks)
        return fn

    def bind(self, server: Any) -> Any:
        """Let the shutdown end `server` its own way (for `tethered()`; `run()` does it).

        `server`: an mcp/fastmcp server object, or a low-level `Server`. Its connection's
        streams are tapped (see `binding`); after it returns, its loop is kept for the
        async hooks until the process exits. Returns `server`.
        """
        lowlevel = find_lowlevel(server)
        if lowlevel is None:
            raise TypeError(f"cannot bind {type(server).__name__}: no async run(read, write, ...)")
        self._binding = self._new_binding()
        self._binding.install(lowlevel, hold=self._served_then_hold)
        return server

    def _new_binding(self) -> Binding:
        return Binding(self.drain, lambda: wake_stdin_reader(self._stdin_fd), self._notify)

    def _notify(self) -> None:
        with self._progress:
            self._progress.notify_all()

    async def _served_then_hold(self, exc: BaseException | None = None) -> None:
        """On the server's loop, after serving: tell the watcher, keep the loop for hooks."""
        import anyio

        self._served_exc = exc
        self._served.set()
        self._notify()
        self._wake(_SERVED)
        if self._release is None:
            self._release = anyio.Event()
        with anyio.CancelScope(shield=True):
            await self._release.wait()

    async def serve(self, entry: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """`run()`'s coroutine: serve with `entry`, then hold the loop for the hooks."""
        import anyio

        binding = self._binding
        if binding is not None and binding.loop is None:
            binding.attach_loop()
        self._release = anyio.Event()
        failure: BaseException | None = None
        with anyio.CancelScope() as scope:
            if binding is not None:
                binding.guard(scope)
            try:
                await entry()
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:  # noqa: BLE001 - every way out is the one exit
                failure = exc
        await self._served_then_hold(failure)

    # -- arming ------------------------------------------------------------------------------

    def start(self) -> None:
        """Arm the watchers and the signal handlers. Only one coordinator per process."""
        global _active, _fork_hook_installed
        with _active_lock:
            if _active is not None:
                raise RuntimeError("mcp-tether: the helper is already armed in this process")
            _active = self
            if not _fork_hook_installed:
                _fork_hook_installed = platform.at_fork_in_child(_after_fork_in_child)
        self._started = True
        if self.children:
            from mcp_tether.tether.children import adopt

            self._adopted = adopt()
        _hooks.armed.set()
        log.use_logging()
        if self.drain_clamped:
            log.say(f"mcp-tether: drain clamped to {self.drain:g} s: drain + deadline must fit"
                    f" the host's {HOST_WINDOW:g} s before SIGTERM/SIGKILL")
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        pid0, ppid0 = STARTED_UNDER  # when the package was first imported
        self._parent = ParentWatch(ppid0 if pid0 == os.getpid() else None)
        if self.stdio:
            events = hangup_events(0)
            if events is not None:
                import fcntl  # deferred: POSIX only, and only when there is a stdin to watch

                # A private duplicate: the SDK may point fd 0 elsewhere while serving.
                self._stdin_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
                self._stdin_events = events
            else:
                self._stdin_null = is_null_device(0)
        if threading.current_thread() is threading.main_thread():
            from mcp_tether.proc.inbox import SignalInbox

            self._inbox = SignalInbox(SIGNALS)
        else:
            log.debug("not on the main thread: signals are not watched")
        self._watcher = threading.Thread(target=self._watch, name="mcp-tether-watch", daemon=True)
        self._watcher.start()
        log.debug(
            f"tethered: parent {self._parent.ppid}"
            f" ({'pidfd' if self._parent.fd is not None else 'getppid'}),"
            f" stdin {'watched' if self._stdin_fd is not None else 'not watched'}"
        )

    def close(self) -> None:
        """Disarm without exiting (tests; or after a recorder `exit` returned)."""
        global _active
        if not self._started:
            return
        self._started = False
        self._wake(_STOP)
        if self._watcher is not None and self._watcher is not threading.current_thread():
            self._watcher.join()
        if self._inbox is not None and threading.current_thread() is threading.main_thread():
            self._inbox.restore()
        for fd in (self._wake_r, self._wake_w, self._stdin_fd):
            if fd is not None and fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1
        self._stdin_fd = None
        if self._parent is not None:
            self._parent.close()
        if self._adopted:
            from mcp_tether.tether.children import release

            release()
            self._adopted = False
        with _active_lock:
            if _active is self:
                _active = None

    def __enter__(self) -> ShutdownCoordinator:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.transport_ended(exc)
        self.close()  # reached only when `exit` is a recorder that returned

    # -- triggers ----------------------------------------------------------------------------

    def _wake(self, byte: bytes) -> None:
        # OSError: full (the watcher is already awake) or closed (shutting down).
        with contextlib.suppress(OSError):
            os.write(self._wake_w, byte)

    def _story(self, exc: BaseException | None) -> tuple[str, int]:
        """Reason and status when the serving ended by itself (or raised)."""
        if exc is None:
            # With stdin unwatchable (a file, /dev/null, a TTY's Ctrl-D) the SDK's reader
            # ending is the only EOF there is; a watched stdin still open means the
            # program stopped of its own accord.
            if self.stdio and (self._stdin_fd is None or self._stdin_hung_up()):
                return "client gone (stdin closed)", 0
            return "server stopped", 0
        if isinstance(exc, SystemExit):
            code = exc.code
            if code is None or isinstance(code, int):
                return "exiting (SystemExit)", code or 0
            log.say(str(code))
            return "exiting (SystemExit)", 1
        if isinstance(exc, KeyboardInterrupt):
            return "exiting (SIGINT)", 128 + signal.SIGINT
        log.say("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
        return f"server failed ({type(exc).__name__})", 1

    def transport_ended(self, exc: BaseException | None = None) -> None:
        """The main thread's path: the program's serving returned (or raised); shut down."""
        self._served_exc = exc
        self._served.set()
        self.shutdown(*self._story(exc))

    def _stdin_hung_up(self) -> bool:
        if self._stdin_fd is None:
            return False
        p = select.poll()
        p.register(self._stdin_fd, self._stdin_events)
        return bool(p.poll(0))

    def _watch(self) -> None:
        """The watcher thread: wait for the first trigger, then run the one shutdown."""
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        inbox_fd = self._inbox.fileno() if self._inbox is not None else -1
        if inbox_fd >= 0:
            poller.register(inbox_fd, select.POLLIN)
        parent = self._parent
        if parent is not None and parent.fd is not None:
            poller.register(parent.fd, select.POLLIN)
        poll_ppid = parent is not None and parent.fd is None and parent.ppid > 1
        if self._stdin_fd is not None:
            poller.register(self._stdin_fd, self._stdin_events)
        trigger: tuple[str, int, str] | None = None
        if self._stdin_null:  # nobody can ever send a request: a hang-up from the start
            trigger = ("client gone (stdin closed)", 0, "hangup")
        if parent is not None and parent.gone():  # died before we were armed
            trigger = trigger or ("client gone (parent died)", 0, "parent")
        while trigger is None:
            events = poller.poll(int(PARENT_POLL_INTERVAL * 1000) if poll_ppid else None)
            t_event = time.monotonic()
            for fd, _ev in events:
                if fd == self._wake_r:
                    data = b""
                    with contextlib.suppress(BlockingIOError):
                        data = os.read(self._wake_r, 512)
                    if _STOP in data:
                        return
                    if _SERVED in data and trigger is None:
                        reason, status = self._story(self._served_exc)
                        trigger = (reason, status, "served")
                elif fd == inbox_fd:
                    for sig in self._inbox.drain():
                        if sig in SIGNALS and trigger is None:
                            name = signal.Signals(sig).name
                            trigger = (f"exiting ({name})", 128 + sig, "signal")
                elif parent is not None and fd == parent.fd:
                    poller.unregister(fd)
                    trigger = trigger or ("client gone (parent died)", 0, "parent")
                elif fd == self._stdin_fd:
                    poller.unregister(fd)  # level-triggered: it would spin
                    trigger = trigger or ("client gone (stdin closed)", 0, "hangup")
            if poll_ppid and trigger is None and parent is not None and parent.gone():
                trigger = ("client gone (parent died)", 0, "parent")
            if trigger is not None:
                self.shutdown(trigger[0], trigger[1], kind=trigger[2], since=t_event)
                return
        self.shutdown(trigger[0], trigger[1], kind=trigger[2])

    # -- the one shutdown --------------------------------------------------------------------

    def _wait(self, predicate: Callable[[], bool], until: float) -> bool:
        with self._progress:
            return self._progress.wait_for(predicate, max(0.0, until - time.monotonic()))

    def _unwind_server(self, kind: str, since: float, steps: int) -> float:
        """Step 1: end the bound server its own way. Returns the end of the deadline."""
        b = self._binding
        served = self._served.is_set
        if b is None or served():
            self.unwound = "not bound" if b is None else "by itself"
            return time.monotonic() + self.deadline
        drain_until = since + self.drain
        if kind == "hangup":  # the SDK reads what is left, sees EOF, ends by itself
            self._wait(lambda: served() or b.eof_seen.is_set(), since + EOF_GRACE)
        if not (served() or b.eof_seen.is_set()):
            b.request_end(drain_until)
        # The drain: over as soon as nothing is in flight (the tapped stream ends then).
        in_time = self._wait(lambda: served() or b.ended.is_set(), drain_until)
        if self.drain > 0:
            self.drained = _drained(b, in_time)
        until = time.monotonic() + self.deadline
        # Its share, but never more than half: the hooks (the author's explicit cleanup)
        # keep at least half of the deadline, and a stuck lifespan costs at most that.
        share = min(self.deadline / steps, self.deadline / 2)
        t0 = time.monotonic()
        if self._wait(served, t0 + share):
            self.unwound = "through its own path"
        else:
            b.cancel()
            if self._wait(served, min(until, time.monotonic() + CANCEL_GRACE)):
                self.unwound = f"cancelled after its {share:.2f} s share"
            elif b.lowlevel_done.is_set():
                self.unwound = "session ended; its stdio transport still waits on stdin"
            else:
                self.unwound = f"cut off: still unwinding after its {share:.2f} s share"
        return until

    def shutdown(self, reason: str, status: int = 0, *, kind: str = "direct",
                 since: float | None = None) -> None:
        """Unwind the server, run the hooks, flush, say why, exit with `status`; once.

        Whoever comes second does not return on the main thread (the winner is about to
        exit and no user code may run meanwhile); on another thread it returns at once.
        """
        if not self._once.acquire(blocking=False):
            if threading.current_thread() is threading.main_thread():
                self._exited.wait()
            return
        t0 = time.monotonic()
        self.reason, self.status = reason, status
        hooks = _hooks.registered(self._hooks)
        until = self._unwind_server(kind, t0 if since is None else since, len(hooks) + 1)
        b = self._binding
        on_loop = b.run_on_loop if b is not None and b.loop is not None else None
        self.outcomes = _hooks.run_hooks(hooks, until, on_loop)
        if self.children:  # after the hooks: they may still need the children
            from mcp_tether.tether.children import end_children

            left = HOST_WINDOW - (time.monotonic() - (t0 if since is None else since))
            self.children_ended = end_children(left)
        self.cleanup_ms = (time.monotonic() - t0) * 1000
        flusher = threading.Thread(target=flush_std_streams, name="mcp-tether-flush", daemon=True)
        flusher.start()
        flusher.join(FLUSH_TIMEOUT)
        log.say(self._line())
        try:
            self._exit(status)
        finally:
            self._exited.set()
            if b is not None and self._release is not None:
                b._call(self._release.set)  # only reached with a recorder `exit`

    def _line(self) -> str:
        line = f"mcp-tether: {self.reason}, cleanup {self.cleanup_ms:.0f} ms"
        if self.drained:
            line += f"; drain: {self.drained}"
        if self.unwound.startswith(("cut off", "cancelled", "session")):
            line += f"; server's own shutdown {self.unwound}"
        if self.children_ended:
            line += f"; {self.children_ended}"
        for word in ("failed", "cut off", "skipped"):
            names = [
                f"{o.name} ({o.why})" if o.why and word != "failed" else o.name
                for o in self.outcomes
                if o.outcome == word
            ]
            if names:
                line += f"; {word}: {', '.join(names)}"
        return line
