"""The drain's last answer reaches stdout before the transport is broken.

In-process, with anyio streams shaped like the SDKs' stdio transport: a zero-buffer
write stream whose writer takes a message, writes it (a worker thread: not cancellable)
and then flushes; a stdin reader that fails once woken on a closed stream, which cancels
the writer. Breaking the reader as soon as the answer is *taken* would lose it while
the writer is still between write and flush (on a loaded machine, "server closed
stdout" in `test_drain_lets_a_call_in_flight_answer[sigterm-fastmcp]`).
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from mcp_tether.tether.binding import Binding

WRITE_TAKES = 0.2  # seconds the writer's worker thread spends on one write
DRAIN = 60.0  # never reached when the drain works: it ends with the answer flushed


class LowLevel:
    """The SDK's low-level server: one request at a time, answered by a handler task."""

    def __init__(self, started: anyio.Event) -> None:
        self.started = started

    async def run(self, read: Any, write: Any, _options: Any) -> None:
        async with anyio.create_task_group() as tg:
            async for item in read:
                async def handle(rid: Any = item.id) -> None:
                    self.started.set()
                    await anyio.sleep(0.05)
                    await write.send(SimpleNamespace(id=rid))  # the answer
                tg.start_soon(handle)
            tg.cancel_scope.cancel()  # the read stream ended: in-flight handlers go


async def _serve(flushed: list[Any], cancel_at_end: bool) -> None:
    read_send, read_recv = anyio.create_memory_object_stream[Any](0)
    write_send, write_recv = anyio.create_memory_object_stream[Any](0)
    woken = anyio.Event()
    started = anyio.Event()
    # A roomy drain: the answer's arrival, not its speed, is what is tested.
    binding = Binding(drain=DRAIN, wake_reader=woken.set, notify=lambda: None)
    low = LowLevel(started)
    binding.install(low)

    async def stdin_reader() -> None:
        async with read_send:
            await read_send.send(SimpleNamespace(method="tools/call", id=9))
            await woken.wait()
            await read_send.send(ValueError("the wake-up newline"))  # closed: it fails

    async def stdout_writer() -> None:
        async with write_recv:
            async for message in write_recv:
                with anyio.CancelScope(shield=True):  # to_thread.run_sync: not cancellable
                    await anyio.sleep(WRITE_TAKES)
                await anyio.lowlevel.checkpoint()  # then `await stdout.flush()`
                flushed.append(message.id)

    async def server() -> None:
        async with write_send:
            await low.run(read_recv, write_send, None)

    async def coordinator(scope: Any) -> None:
        """Its share of the deadline is up as soon as the stream has ended (a loaded
        machine): it cancels the serving scope, the transport's writer with it."""
        while not binding.ended.is_set():
            await anyio.sleep(0.001)
        scope.cancel()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(stdin_reader)
            tg.start_soon(stdout_writer)
            tg.start_soon(server)
            if cancel_at_end:
                tg.start_soon(coordinator, tg.cancel_scope)
            await started.wait()
            binding._end(time.monotonic() + DRAIN)  # SIGTERM: end as EOF would, draining
    except BaseException:  # the reader's failure, as in the SDKs' transport
        pass


@pytest.mark.parametrize("cancel_at_end", [False, True], ids=["reader-broken", "unwind-cancelled"])
def test_the_drains_last_answer_is_flushed_before_the_stream_ends(cancel_at_end: bool) -> None:
    """Whether the end then breaks the reader or the coordinator cancels the unwind."""
    flushed: list[Any] = []
    anyio.run(_serve, flushed, cancel_at_end)
    assert flushed == [9]
