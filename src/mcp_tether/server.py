"""The library helper: a Python MCP server that exits promptly and cleanly when its client goes.

```python
import mcp_tether

@mcp_tether.on_shutdown
def close_pool() -> None: ...

mcp_tether.run(mcp)                      # MCPServer (mcp 2.x), FastMCP (mcp 1.x, fastmcp)

with mcp_tether.tethered() as t:         # any other stdio program, the low-level Server
    t.add_cleanup(pool.close)
    anyio.run(main)
```

Guarantees, once `run()` is called or the `tethered()` block is entered:
- Triggers: the transport ending (`server.run()` returned, the block exited), stdin hung
  up (every writer gone) and the transport not ending by itself within `EOF_GRACE`,
  stdin at /dev/null from the start and the transport not ending within `EOF_GRACE`,
  the parent process dying (a pidfd on Linux, else getppid() polled every
  `PARENT_POLL_INTERVAL`), and SIGTERM, SIGINT, SIGHUP. The parent watch catches the
  leaked write end, where EOF never comes.
- fd 0 and `sys.stdin` are never read: a private duplicate of fd 0, taken before the SDK
  diverts it (mcp 2.x points fd 0 at /dev/null while serving), is only ever poll()ed for
  a hang-up, with POLLIN unrequested. A TTY or a file on stdin is not watched; /dev/null
  counts as closed from the start.
- Signal handlers only record and wake the watcher thread (through `signal.set_wakeup_fd`
  when nobody else owns it, so the wake-up does not wait for the main thread to run
  Python code, and through a plain write from the handler as well); the watcher thread
  shuts down, so this works while the main thread sits in `anyio.run` or in the
  interpreter's join of a non-daemon thread.
- Shutdown runs once, whichever triggers race: cleanup hooks in reverse registration
  order (sync or async: an async one runs in a fresh event loop in the cleanup thread),
  all within one `deadline`; a hook still running at the deadline is abandoned with any
  hooks after it, a hook that raises is logged and the rest still run. Then stdout and
  stderr are flushed where that is possible (closed streams are skipped; mcp 1.x closes
  sys.stdout), one line goes to stderr, and `os._exit()`: no thread, executor, pool or
  task group can hold the process. Status 0 after the transport ended or the parent
  died, 128+N after signal N, 1 when `server.run()` raised.
- `drain=D` seconds: after a signal or parent death the process keeps serving for up to
  D seconds before cleanup, ending early if the transport ends by itself; in-flight
  requests that finish in that window are answered (if anyone still reads). After a
  stdin hang-up the transport gets max(D, EOF_GRACE). Without it, in-flight work is
  dropped, as the spec allows.
- No early exit: a connected idle server lives on; nothing is polled on a timer except
  getppid() where no pidfd exists.

PR_SET_PDEATHSIG is deliberately not used: it fires when the parent *thread* that
spawned us exits (a host's worker thread), which is not the client going away.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import stat
import sys
import threading
import time
import traceback
from collections.abc import Callable
from itertools import count
from types import FrameType, TracebackType
from typing import Any, NoReturn, TypeVar

from mcp_tether import log
from mcp_tether.watch import ParentWatch, hangup_events

__all__ = [
    "on_shutdown",
    "run",
    "tethered",
    "Tether",
    "DEFAULT_DEADLINE",
    "EOF_GRACE",
    "PARENT_POLL_INTERVAL",
]

DEFAULT_DEADLINE = 1.0  # seconds for all cleanup hooks together
# After stdin hung up, how long the transport may take to end by itself (answering what
# was still in the pipe) before we end it: a lifespan task group that is never cancelled
# would otherwise hold `run()` forever.
EOF_GRACE = 0.5
FLUSH_TIMEOUT = 0.1  # a flush into a full pipe nobody reads must not hold the exit
PARENT_POLL_INTERVAL = 0.2  # getppid() fallback only; pidfds need no timer

SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name)
)
_STOP = 0  # byte on the wake pipe that ends the watcher (signal numbers are >= 1)

F = TypeVar("F", bound=Callable[..., Any])

_seq = count()
_hooks: list[tuple[int, Callable[[], Any]]] = []
_registry_lock = threading.Lock()
_active: Tether | None = None


def on_shutdown(fn: F) -> F:
    """Register `fn` (sync, or async) to run once at shutdown; usable as a decorator.

    Hooks run in reverse order of registration, with those added by `Tether.add_cleanup`.
    """
    if not callable(fn):
        raise TypeError(f"on_shutdown needs a callable, got {fn!r}")
    with _registry_lock:
        _hooks.append((next(_seq), fn))
    return fn


def _hook_name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _call_hook(fn: Callable[[], Any]) -> None:
    result = fn()
    if hasattr(result, "__await__"):
        import asyncio  # deferred: most servers imported it already; the guard never does

        async def _await() -> Any:
            return await result

        asyncio.run(_await())


def _is_null_device(fd: int) -> bool:
    try:
        st, null = os.fstat(fd), os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == null.st_rdev


def _flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (ValueError, OSError, AttributeError):
            pass  # closed (mcp 1.x closes sys.stdout after run()) or broken: nothing to save


class Tether:
    """One process's tether to its client: watchers, signal handlers and a run-once exit.

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
    ) -> None:
        if not deadline > 0:
            raise ValueError(f"deadline must be > 0 seconds, got {deadline!r}")
        if drain is not None and drain < 0:
            raise ValueError(f"drain must be >= 0 seconds, got {drain!r}")
        self.deadline = float(deadline)
        self.drain = drain
        self.stdio = stdio
        self._exit = exit
        self._hooks: list[tuple[int, Callable[[], Any]]] = []
        self._once = threading.Lock()
        self._exited = threading.Event()
        self._transport_done = threading.Event()
        self._started = False
        self._wake_r = self._wake_w = -1
        self._old_wakeup = -1
        self._owns_wakeup = False
        self._old_handlers: dict[int, Any] = {}
        self._parent: ParentWatch | None = None
        self._stdin_fd: int | None = None
        self._stdin_events = 0
        self._stdin_null = False  # started with stdin at /dev/null: EOF from the outset
        self._watcher: threading.Thread | None = None
        # What happened, for tests and for anyone embedding this.
        self.reason: str | None = None
        self.status: int | None = None
        self.cleanup_ms: float | None = None
        self.failed: list[str] = []
        self.abandoned: list[str] = []

    # -- registration -------------------------------------------------------------------

    def add_cleanup(self, fn: F) -> F:
        """Register `fn` (sync or async) to run once at shutdown; returns it."""
        if not callable(fn):
            raise TypeError(f"add_cleanup needs a callable, got {fn!r}")
        with _registry_lock:
            self._hooks.append((next(_seq), fn))
        return fn

    # -- starting and stopping ------------------------------------------------------------

    def start(self) -> None:
        """Arm the watchers and the signal handlers. Only one Tether per process."""
        global _active
        with _registry_lock:
            if _active is not None:
                raise RuntimeError("mcp_tether: a tether is already active in this process")
            _active = self
        self._started = True
        self._wake_r, self._wake_w = os.pipe()  # non-inheritable (PEP 446)
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)  # a full pipe must never block a handler
        if self.stdio:
            # The parent we were started under, if it was noted at `import mcp_tether` in
            # this same process (not in a parent we forked from): it may be gone already.
            import mcp_tether

            pid, ppid = mcp_tether._STARTED_UNDER
            self._parent = ParentWatch(ppid if pid == os.getpid() else None)
            events = hangup_events(0)
            if events is not None:
                import fcntl  # POSIX only, like hangup_events answering non-None

                # Above 2 and close-on-exec: a server's children must not inherit it.
                self._stdin_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
                self._stdin_events = events
            else:
                self._stdin_null = _is_null_device(0)
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                self._old_handlers[sig] = signal.signal(sig, self._on_signal)
            try:
                self._old_wakeup = signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
            except (ValueError, OSError):
                self._old_wakeup = -1
            else:
                self._owns_wakeup = self._old_wakeup == -1
                if not self._owns_wakeup:  # someone else's loop owns it: leave it theirs
                    signal.set_wakeup_fd(self._old_wakeup)
        else:
            log.debug("not on the main thread: signals are not watched")
        self._watcher = threading.Thread(target=self._watch, name="mcp-tether-watch", daemon=True)
        self._watcher.start()
        log.debug(
            f"tethered: parent {self._parent.ppid if self._parent else '-'}"
            f" ({'pidfd' if self._parent and self._parent.fd is not None else 'getppid'}),"
            f" stdin {'watched' if self._stdin_fd is not None else 'not watched'}"
        )

    def close(self) -> None:
        """Disarm without exiting (tests; or after a recorder `exit` returned)."""
        global _active
        if not self._started:
            return
        self._started = False
        if threading.current_thread() is threading.main_thread():
            for sig, old in self._old_handlers.items():
                if signal.getsignal(sig) == self._on_signal:
                    signal.signal(sig, old)
            if self._owns_wakeup:
                with contextlib.suppress(ValueError):
                    signal.set_wakeup_fd(-1)
        self._wake(_STOP)
        if self._watcher is not None and self._watcher is not threading.current_thread():
            self._watcher.join()
        for fd in (self._wake_r, self._wake_w, self._stdin_fd):
            if fd is not None and fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1
        self._stdin_fd = None
        if self._parent is not None:
            self._parent.close()
        with _registry_lock:
            if _active is self:
                _active = None

    def __enter__(self) -> Tether:
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

    # -- triggers --------------------------------------------------------------------------

    def _wake(self, byte: int) -> None:
        # OSError: full (the watcher is already awake) or closed (shutting down).
        with contextlib.suppress(OSError):
            os.write(self._wake_w, bytes([byte]))

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        # Record and wake only: the watcher thread acts. The C-level wakeup fd usually
        # got there first; a second byte for the same signal is harmless.
        self._wake(signum)

    def transport_ended(self, exc: BaseException | None = None) -> None:
        """The main thread's path: `server.run()` returned (or raised); shut down now."""
        self._transport_done.set()
        if exc is None:
            # With stdin unwatchable (a file, /dev/null, a TTY's Ctrl-D) the SDK's reader
            # ending is the only EOF there is; a watched stdin still open means the
            # program stopped of its own accord.
            if self.stdio and (self._stdin_fd is None or self._stdin_hung_up()):
                self.shutdown("client gone (stdin closed)", 0)
            else:
                self.shutdown("server stopped", 0)
        elif isinstance(exc, SystemExit):
            code = exc.code
            if code is None or isinstance(code, int):
                self.shutdown("exiting (SystemExit)", code or 0)
            else:
                log.say(str(code))
                self.shutdown("exiting (SystemExit)", 1)
        elif isinstance(exc, KeyboardInterrupt):
            self.shutdown("exiting (SIGINT)", 128 + signal.SIGINT)
        else:
            log.say("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
            self.shutdown(f"server failed ({type(exc).__name__})", 1)

    def _stdin_hung_up(self) -> bool:
        if self._stdin_fd is None:
            return False
        p = select.poll()
        p.register(self._stdin_fd, self._stdin_events)
        return bool(p.poll(0))

    def _watch(self) -> None:
        """The watcher thread: wait for a trigger, give the transport its grace, shut down."""
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        parent = self._parent
        if parent is not None and parent.fd is not None:
            poller.register(parent.fd, select.POLLIN)
        poll_ppid = parent is not None and parent.fd is None and parent.ppid > 1
        if self._stdin_fd is not None:
            poller.register(self._stdin_fd, self._stdin_events)
        pending: tuple[str, int] | None = None
        pending_until = 0.0
        if self._stdin_null:  # nobody can ever send a request: same as a hang-up at once
            pending = ("client gone (stdin closed)", 0)
            pending_until = time.monotonic() + max(self.drain or 0.0, EOF_GRACE)

        def trigger(reason: str, status: int, grace: float) -> None:
            nonlocal pending, pending_until
            until = time.monotonic() + grace
            if pending is None:
                pending, pending_until = (reason, status), until
            else:  # a later trigger can only shorten the wait, never change the story
                pending_until = min(pending_until, until)

        drain = self.drain or 0.0
        if parent is not None and parent.gone():  # died before we were armed
            poll_ppid = False
            trigger("client gone (parent died)", 0, drain)
        while True:
            timeout: float | None = None
            if pending is not None:
                timeout = max(0.0, pending_until - time.monotonic())
            if poll_ppid:
                timeout = (
                    PARENT_POLL_INTERVAL if timeout is None else min(timeout, PARENT_POLL_INTERVAL)
                )
            try:
                events = poller.poll(None if timeout is None else int(timeout * 1000 + 0.999))
            except InterruptedError:  # pragma: no cover - PEP 475 retries; belt and braces
                continue
            for fd, _ev in events:
                if fd == self._wake_r:
                    try:
                        data = os.read(self._wake_r, 512)
                    except BlockingIOError:
                        data = b""
                    for byte in data:
                        if byte == _STOP:
                            return
                        if byte in SIGNALS and signal.getsignal(byte) == self._on_signal:
                            trigger(f"exiting ({signal.Signals(byte).name})", 128 + byte, drain)
                elif parent is not None and fd == parent.fd:
                    poller.unregister(fd)
                    trigger("client gone (parent died)", 0, drain)
                elif fd == self._stdin_fd:
                    poller.unregister(fd)  # level-triggered: it would spin
                    trigger("client gone (stdin closed)", 0, max(drain, EOF_GRACE))
            if poll_ppid and parent is not None and parent.gone():
                poll_ppid = False
                trigger("client gone (parent died)", 0, drain)
            if pending is not None and time.monotonic() >= pending_until:
                if self._transport_done.is_set():
                    return  # the main thread ended by itself and is shutting down
                self.shutdown(*pending)
                return

    # -- the one shutdown ------------------------------------------------------------------

    def shutdown(self, reason: str, status: int = 0) -> None:
        """Run the hooks once within the deadline, flush, say why, and exit with `status`.

        Whoever comes second does not return on the main thread (the winner is about to
        exit and no user code may run meanwhile); on another thread it returns at once.
        """
        if not self._once.acquire(blocking=False):
            if threading.current_thread() is threading.main_thread():
                self._exited.wait()
            return
        t0 = time.monotonic()
        self.reason, self.status = reason, status
        self._run_hooks()
        self.cleanup_ms = (time.monotonic() - t0) * 1000
        flusher = threading.Thread(target=_flush_std_streams, name="mcp-tether-flush", daemon=True)
        flusher.start()
        flusher.join(FLUSH_TIMEOUT)
        line = f"mcp-tether: {reason}, cleanup {self.cleanup_ms:.0f} ms"
        if self.failed:
            line += f"; failed: {', '.join(self.failed)}"
        if self.abandoned:
            line += f"; abandoned at the {self.deadline:g} s deadline: {', '.join(self.abandoned)}"
        log.say(line)
        try:
            self._exit(status)
        finally:
            self._exited.set()

    def _run_hooks(self) -> None:
        with _registry_lock:
            hooks = [fn for _, fn in sorted(_hooks + self._hooks, key=lambda h: h[0])]
        hooks.reverse()
        if not hooks:
            return
        progress = {"next": 0}

        def work() -> None:
            for i, fn in enumerate(hooks):
                progress["next"] = i
                try:
                    _call_hook(fn)
                except BaseException as exc:  # noqa: BLE001 - a hook must not stop the rest
                    self.failed.append(_hook_name(fn))
                    log.say(
                        f"mcp-tether: cleanup hook {_hook_name(fn)} raised:\n"
                        + "".join(
                            traceback.format_exception(type(exc), exc, exc.__traceback__)
                        ).rstrip()
                    )
            progress["next"] = len(hooks)

        worker = threading.Thread(target=work, name="mcp-tether-cleanup", daemon=True)
        worker.start()
        worker.join(self.deadline)
        if worker.is_alive():
            self.abandoned = [_hook_name(fn) for fn in hooks[progress["next"] :]]


def tethered(deadline: float = DEFAULT_DEADLINE, *, drain: float | None = None) -> Tether:
    """Context manager for any stdio program: `with tethered() as t: t.add_cleanup(...)`.

    Leaving the block (the program's transport ended) shuts down and exits the process:
    code after the `with` statement never runs. An exception leaving the block is
    printed and exits with status 1; `SystemExit(n)` exits with n.
    """
    return Tether(deadline=deadline, drain=drain, stdio=True)


def run(
    server: Any,
    *,
    deadline: float = DEFAULT_DEADLINE,
    drain: float | None = None,
    transport: str = "stdio",
    **run_kwargs: Any,
) -> NoReturn:
    """Serve with `server.run(transport=..., **run_kwargs)`, then shut down; never returns.

    For `MCPServer` (mcp 2.x), `FastMCP` (mcp 1.x, and the standalone `fastmcp`). A
    low-level `Server` has an async `run(read, write, options)`: use `tethered()`.
    Parent death and stdin are watched for the stdio transport only.
    """
    import inspect  # deferred: only this entry point needs it

    runner = getattr(server, "run", None)
    if runner is None or inspect.iscoroutinefunction(runner):
        raise TypeError(
            f"mcp_tether.run() needs a server with a synchronous run() (MCPServer, FastMCP);"
            f" for {type(server).__name__} wrap your own anyio.run(...) in mcp_tether.tethered()"
        )
    tether = Tether(deadline=deadline, drain=drain, stdio=transport == "stdio")
    tether.start()
    try:
        runner(transport=transport, **run_kwargs)
    except BaseException as exc:  # noqa: BLE001 - every way out goes through the one exit
        tether.transport_ended(exc)
    else:
        tether.transport_ended(None)
    # Only with a recorder `exit`; a real one never returns.
    tether.close()
    raise SystemExit(tether.status or 0)
