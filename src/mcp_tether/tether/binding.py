"""The helper's hold on a running SDK server: its loop, its streams, its way to end.

`Binding` is installed on the SDK's low-level server (mcp 1.x and 2.x, and fastmcp, all
serve a connection with an async `run(read_stream, write_stream, options)`): it replaces
that bound method on the instance by one that taps both streams. With the taps it can
- count requests in flight (a request in, its response or error out; a client's
  `notifications/cancelled` settles one too);
- end the transport the SDK's own way: the tapped read stream ends as if stdin had hit
  EOF, so the SDK's session loop stops, its lifespan unwinds normally (no cancellation:
  awaits in a `finally` still work) and the SDK's stdio transport closes;
- drain: whether the end was asked for or stdin really hit EOF, the end-of-stream is
  held back while requests are in flight, until the last one is answered or the drain
  time is up. (Both mcp lines cancel in-flight handlers as soon as the read stream ends:
  mcp 2.x answers them "Connection closed". Holding the end back is what lets them
  answer.) New requests are not read meanwhile.
It also records the server's event loop, so that async cleanup hooks run on it.

Everything here that touches the loop runs on the loop's thread; the coordinator's
thread only calls `request_end`, `cancel` and `run_on_loop`, which hop over with
`call_soon_threadsafe`. asyncio only (the SDKs' default backend); elsewhere the binding
reports no loop and the coordinator falls back to ending without it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

from mcp_tether import platform

__all__ = ["Binding", "find_lowlevel"]


def find_lowlevel(server: Any) -> Any | None:
    """The object whose async `run(read, write, options)` serves one connection."""
    import inspect

    for candidate in (server, getattr(server, "_lowlevel_server", None),
                      getattr(server, "_mcp_server", None)):
        run = getattr(candidate, "run", None)
        if run is not None and inspect.iscoroutinefunction(run):
            return candidate
    return None


def _root(item: Any) -> Any:
    message = getattr(item, "message", item)  # SessionMessage -> JSONRPCMessage
    return getattr(message, "root", message)  # mcp 1.x wraps it in a RootModel


def _cancelled_id(params: Any) -> Any:
    if isinstance(params, dict):
        return params.get("requestId")
    return getattr(params, "requestId", None) or getattr(params, "request_id", None)


class Binding:
    """Taps, loop and end switch of one served connection (see the module docstring)."""

    def __init__(self, drain: float, wake_reader: Callable[[], None],
                 notify: Callable[[], None]) -> None:
        self.drain = drain
        self._wake_reader = wake_reader
        self.notify = notify  # tells the coordinator's thread that something moved
        self.loop: Any = None  # asyncio loop of the server, once serving
        self.in_flight: set[str] = set()
        self.eof_seen = threading.Event()  # the SDK's reader saw the real EOF
        self.ended = threading.Event()  # the tapped read stream has ended
        self.lowlevel_done = threading.Event()  # the low-level run (its lifespan) returned
        self._end_at: float | None = None  # monotonic: stop holding the end back
        self._end_asked = False
        self._recv_scope: Any = None
        self._idle: Any = None  # anyio.Event, set when nothing is in flight
        self._cancel_scopes: list[Any] = []
        self._write_stream: Any = None  # the SDK's own (untapped) send stream
        # The drain as data: requests in flight when the end was first asked (or stdin's
        # EOF read), and when the end went through (None: not yet).
        self.held: int | None = None
        self.left: int | None = None

    # -- installed on the SDK ---------------------------------------------------------

    def install(self, lowlevel: Any, *, hold: Callable[[], Coroutine[Any, Any, None]] | None
                = None) -> None:
        """Tap `lowlevel.run`. With `hold`, the wrapper awaits it after serving (loop kept)."""
        original = lowlevel.run
        binding = self

        async def run(read_stream: Any, write_stream: Any, *args: Any, **kwargs: Any) -> Any:
            binding.attach_loop()
            binding._write_stream = write_stream
            try:
                return await original(
                    _ReadTap(read_stream, binding), _WriteTap(write_stream, binding),
                    *args, **kwargs)
            finally:
                binding.lowlevel_done.set()
                binding.notify()
                if binding._end_asked and not binding.eof_seen.is_set():
                    # Only now (the lifespan has unwound): the SDK's stdin reader, once
                    # woken, finds its stream closed and its task fails, which cancels
                    # whatever else runs in the transport's task group.
                    read_stream.close()
                    binding._wake_reader()
                if hold is not None:
                    await hold()

        lowlevel.run = run

    def attach_loop(self) -> None:
        import anyio

        self._idle = anyio.Event()
        try:
            import asyncio

            self.loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio (trio): no loop to lend to the hooks
            self.loop = None

    def guard(self, scope: Any) -> None:
        """A cancel scope that `cancel()` cancels: the last resort for a stuck unwind."""
        self._cancel_scopes.append(scope)

    # -- from the coordinator's thread -------------------------------------------------

    def _call(self, fn: Callable[[], Any]) -> bool:
        loop = self.loop
        if loop is None or loop.is_closed():
            return False
        try:
            loop.call_soon_threadsafe(fn)
        except RuntimeError:  # closed meanwhile
            return False
        return True

    def request_end(self, drain_until: float) -> bool:
        """End the transport as EOF would, holding the end back until idle or `drain_until`."""
        return self._call(lambda: self._end(drain_until))

    def cancel(self) -> bool:
        """Cancel the serving scopes: the lifespan's awaits are cancelled; last resort."""
        return self._call(lambda: [scope.cancel() for scope in self._cancel_scopes])

    def run_on_loop(self, factory: Callable[[], Coroutine[Any, Any, Any]],
                    timeout: float) -> str | None:
        """Run a coroutine on the server's loop for up to `timeout` s; None: no loop."""
        import asyncio
        import concurrent.futures

        loop = self.loop
        if loop is None or loop.is_closed() or not loop.is_running():
            return None
        try:
            future = asyncio.run_coroutine_threadsafe(factory(), loop)
        except RuntimeError:
            return None
        try:
            return str(future.result(timeout))
        except concurrent.futures.TimeoutError:
            future.cancel()  # thread-safe: cancels the task on its loop
            return f"cut off: still running after its {timeout:.2f} s share"
        except concurrent.futures.CancelledError:
            return "cut off: cancelled"
        except BaseException as exc:  # noqa: BLE001 - SystemExit and friends, reported
            return f"failed: {type(exc).__name__}: {exc}"

    # -- on the loop -------------------------------------------------------------------

    def _end(self, drain_until: float) -> None:
        self._end_asked = True
        if self.held is None:
            self.held = len(self.in_flight)
        if self._end_at is None or drain_until < self._end_at:
            self._end_at = drain_until
        if self._recv_scope is not None:
            self._recv_scope.cancel()
        if self._idle is not None and not self.in_flight:
            self._idle.set()

    def track_in(self, item: Any) -> None:
        root = _root(item)
        method, rid = getattr(root, "method", None), getattr(root, "id", None)
        if method is not None and rid is not None:
            self.in_flight.add(str(rid))
        elif method == "notifications/cancelled":
            self._settle(_cancelled_id(getattr(root, "params", None)))

    def track_out(self, item: Any) -> None:
        root = _root(item)
        if getattr(root, "method", None) is None:
            self._settle(getattr(root, "id", None))

    def _settle(self, rid: Any) -> None:
        if rid is not None:
            self.in_flight.discard(str(rid))
        if not self.in_flight and self._idle is not None:
            self._idle.set()

    async def receive(self, inner: Any) -> Any:
        import anyio

        if self._end_at is None:
            item: Any = None
            got = False
            with anyio.CancelScope() as scope:
                self._recv_scope = scope
                try:
                    item, got = await inner.receive(), True
                except anyio.EndOfStream:
                    if self.held is None:
                        self.held = len(self.in_flight)
                    self.eof_seen.set()
                    self.notify()
                    self._end_at = time.monotonic() + self.drain
                finally:
                    self._recv_scope = None
            if got:
                if not isinstance(item, Exception):
                    self.track_in(item)
                return item
        # Ending: hold the end back while anything is in flight, at most until _end_at.
        while self.in_flight and self._idle is not None:
            left = (self._end_at or 0.0) - time.monotonic()
            if left <= 0:
                break
            self._idle = anyio.Event()
            if not self.in_flight:
                break
            with anyio.move_on_after(left):
                await self._idle.wait()
        # Answered is not yet written: a send on the SDKs' zero-buffer stream returns
        # when the transport's writer *takes* the message, and the writer then writes it
        # in a worker thread and flushes. The end of the stream leads to the transport
        # being broken or the unwind being cancelled (the coordinator's share, short on
        # a loaded machine), either of which cancels the writer between its write and
        # its flush: the drained answer never reached stdout (the drain test, fastmcp,
        # under load). So the drain also waits, within its time, for the writer.
        left = (self._end_at or 0.0) - time.monotonic()
        if self._write_stream is not None and left > 0:
            with anyio.move_on_after(left):
                await _writer_caught_up(self._write_stream)
        self.left = len(self.in_flight)
        self.ended.set()
        self.notify()
        raise anyio.EndOfStream

async def _writer_caught_up(write_stream: Any) -> None:
    """Until the SDK's stdout writer has nothing in hand: nothing buffered in its stream,
    and it waits for the next message (or has left). Unknown streams: at once. The caller
    bounds the wait (the drain's end)."""
    import anyio

    inner = getattr(write_stream, "_inner", write_stream)  # mcp 2.x: a ContextSendStream
    stats = getattr(inner, "statistics", None)
    if stats is None:
        return
    while True:
        s = stats()
        if not s.current_buffer_used and (s.tasks_waiting_receive or not s.open_receive_streams):
            return
        await anyio.sleep(0.002)  # polling the writer's state, within the caller's bound


class _Tap:
    """A stream of the SDK's, seen through the binding: closing and everything not
    overridden pass through to the inner stream."""

    def __init__(self, inner: Any, binding: Binding) -> None:
        self._inner, self._binding = inner, binding

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)  # last_context (mcp 2.x), statistics, ...

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _ReadTap(_Tap):
    """The SDK's receive stream: each request coming in is tracked by the binding."""

    async def receive(self) -> Any:
        return await self._binding.receive(self._inner)

    def __aiter__(self) -> _ReadTap:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class _WriteTap(_Tap):
    """The SDK's send stream: a response or error going out settles its request."""

    async def send(self, item: Any) -> None:
        await self._inner.send(item)
        self._binding.track_out(item)

    def send_nowait(self, item: Any) -> None:
        self._inner.send_nowait(item)
        self._binding.track_out(item)


def wake_stdin_reader(fd: int | None) -> None:
    """Let a reader blocked on our stdin return, once the transport is ended.

    The SDKs read stdin in a worker thread that no cancellation reaches; until that
    read returns, their stdio transport (and fastmcp's lifespan, which wraps it) cannot
    finish. A socket (Node hosts) is shut down for reading: the read returns EOF. A pipe
    gets one newline through a write end the backend reopens on it (Linux; elsewhere
    none can be had and the reader stays blocked): the reader takes it, finds the SDK's
    stream closed, and its task ends. Nothing is ever read.
    """
    if fd is None:
        return
    import stat

    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISSOCK(mode):
            import socket

            sock = socket.socket(fileno=os.dup(fd))
            try:
                sock.shutdown(socket.SHUT_RD)
            finally:
                sock.close()
        elif stat.S_ISFIFO(mode):
            w = platform.backend.reopen(fd, write=True)
            if w is None:
                return
            try:
                os.write(w, b"\n")
            finally:
                os.close(w)
    except OSError:
        pass  # already gone, full (then the reader is not blocked), or not allowed
