"""`stdio_client`: the MCP Python SDK's stdio client, with the server behind the guard.

Drop-in for `mcp.client.stdio.stdio_client` on mcp 1.x and 2.x: same parameters
(`StdioServerParameters`, `errlog`), same yielded `(read_stream, write_stream)` of
`SessionMessage`s, same rules as the SDK for `env` (merged over its
`get_default_environment()`), `cwd`, `encoding` and `encoding_error_handler`, and the
same message (de)serialisation as the installed SDK line. Protocol bytes pass through
untouched: the guard never reads or writes them (the server inherits its pipes).

What changes is who ends the server. The process we spawn is `python -m mcp_tether run
-- <command> <args>`, in a session of its own like the SDK's child; the guard ends the
server's whole tree (wrappers, the real server, helpers that left its group) when its
stdin hangs up, when its parent (this host) dies, SIGKILL included, or on SIGTERM.

Leaving the block (normally, by an exception or by cancellation) runs, shielded, with
every wait bounded: stop traffic, let the writer flush (0.5 s at most, like the SDK),
close the server's stdin -- the guard then climbs the ladder on the whole tree: `grace`,
SIGTERM, `term_grace`, SIGKILL -- and return the moment the guard has exited, which it
does only once its tree is gone. A guard that does not exit in its own worst case gets
the safety rung (`stop.settle`). A command that cannot start raises what the SDK raises
(FileNotFoundError / PermissionError), before anything is spawned.

On Windows the guard does not run: the SDK's own client is used (its Job Object already
ends the tree with the host).
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any, TextIO

import anyio
import anyio.lowlevel
import anyio.to_thread
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from anyio.streams.text import TextReceiveStream
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.shared.message import SessionMessage

from mcp_tether import platform
from mcp_tether.client.launch import check_command, guard_command
from mcp_tether.client.stop import settle, settle_budget
from mcp_tether.ladder import GRACE_AFTER_EOF, TERM_GRACE
from mcp_tether.proc import ProcessId, identify

ReadStream = MemoryObjectReceiveStream[SessionMessage | Exception]
WriteStream = MemoryObjectSendStream[SessionMessage]

__all__ = ["stdio_client", "WRITER_FLUSH_TIMEOUT", "REAP_TIMEOUT"]

logger = logging.getLogger(__name__)

# Time for the writer to flush messages already accepted before stdin closes (the SDK
# 2.x `_WRITER_FLUSH_TIMEOUT`).
WRITER_FLUSH_TIMEOUT = 0.5
# Time for the event loop to reap the guard once it is known to have exited.
REAP_TIMEOUT = 2.0


class _Codec:
    """One SDK line's way of turning stdout lines into messages and messages into lines.

    mcp 2.x: `mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)` and
    `model_dump_json(by_alias=True, exclude_unset=True)`; mcp 1.x:
    `mcp.types.JSONRPCMessage.model_validate_json(line)` and
    `model_dump_json(by_alias=True, exclude_none=True)`. Both wrap in `SessionMessage`
    and hand a parse failure to the session as an exception value.
    """

    def __init__(self) -> None:
        validate: Callable[[str], Any]
        try:
            adapter = importlib.import_module("mcp_types").jsonrpc_message_adapter
        except (ImportError, AttributeError):  # mcp 1.x
            model = importlib.import_module("mcp.types").JSONRPCMessage
            validate = model.model_validate_json
            self.exclude_unset = False
        else:

            def validate(line: str) -> Any:
                return adapter.validate_json(line, by_name=False)

            self.exclude_unset = True
        self._validate = validate

    def parse(self, line: str) -> SessionMessage | Exception:
        try:
            message = self._validate(line)
        except Exception as exc:  # noqa: BLE001  # the SDK hands any parse failure over
            logger.exception("Failed to parse JSONRPC message from server")
            return exc
        return SessionMessage(message)

    def dump(self, session_message: SessionMessage) -> str:
        message = session_message.message
        if self.exclude_unset:
            return message.model_dump_json(by_alias=True, exclude_unset=True)
        return message.model_dump_json(by_alias=True, exclude_none=True)


@asynccontextmanager
async def stdio_client(
    server: StdioServerParameters,
    errlog: TextIO = sys.stderr,
    *,
    grace: float = GRACE_AFTER_EOF,
    term_grace: float = TERM_GRACE,
) -> AsyncGenerator[tuple[ReadStream, WriteStream], None]:
    """Start `server` behind the guard; yield `(read_stream, write_stream)` like the SDK.

    `grace`: seconds the server's tree gets to exit by itself once its stdin is closed;
    `term_grace`: seconds between SIGTERM and SIGKILL (both 2 s by default, as in the
    SDKs). Raises FileNotFoundError / PermissionError when the command cannot start.
    """
    if not platform.POSIX:  # pragma: no cover - the guard is POSIX; the SDK has Jobs
        from mcp.client.stdio import stdio_client as sdk_stdio_client

        async with sdk_stdio_client(server, errlog) as streams:
            yield streams  # type: ignore[misc]  # the SDK's own stream types, same protocol
        return

    codec = _Codec()
    env = {**get_default_environment(), **(server.env or {})}
    check_command(server.command, env, server.cwd)
    argv = guard_command(
        server.command, server.args, grace=grace, term_grace=term_grace, env=env
    )
    process = await anyio.open_process(
        argv, env=env, stderr=errlog, cwd=server.cwd, start_new_session=True
    )
    # No await from here until the task group is entered: a cancellation in the gap
    # would skip the ladder (the guard would still end the tree when the pipe is
    # collected, but later). The guard is our unreaped child: its pid is still its own.
    wire = _Wire(process, identify(process.pid), server, codec)
    async with anyio.create_task_group() as tg:
        tg.start_soon(wire.stdout_reader)
        tg.start_soon(wire.stdin_writer)
        try:
            yield wire.read_stream, wire.write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await wire.shutdown(grace, term_grace)
            tg.cancel_scope.cancel()


class _Wire:
    """The guard's pipes as the SDK's two streams: stdout lines become messages on
    `read_stream`, messages sent on `write_stream` become stdin lines; `shutdown` ends
    both and the guard."""

    def __init__(self, process: Process, guard: ProcessId | None,
                 server: StdioServerParameters, codec: _Codec) -> None:
        self.process, self.guard, self.server, self.codec = process, guard, server, codec
        self.read_writer: MemoryObjectSendStream[SessionMessage | Exception]
        self.read_stream: ReadStream
        self.write_stream: WriteStream
        self.write_reader: MemoryObjectReceiveStream[SessionMessage]
        self.read_writer, self.read_stream = anyio.create_memory_object_stream(0)
        self.write_stream, self.write_reader = anyio.create_memory_object_stream(0)
        self.writer_done = anyio.Event()

    async def stdout_reader(self) -> None:
        """Each stdout line, parsed, to the session; once the session is gone, the rest
        of stdout is drained."""
        process, server = self.process, self.server
        assert process.stdout is not None
        text = TextReceiveStream(
            process.stdout, encoding=server.encoding, errors=server.encoding_error_handler
        )
        try:
            async with self.read_writer:
                buffer = ""
                async for chunk in text:
                    lines = (buffer + chunk).split("\n")
                    buffer = lines.pop()
                    for line in lines:
                        try:
                            await self.read_writer.send(self.codec.parse(line))
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            await _drain(process)  # the session is gone
                            return
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass  # our own shutdown closed stdout under the read, or the pipe broke

    async def stdin_writer(self) -> None:
        """Each message the session sends, as one line on the server's stdin."""
        process, server = self.process, self.server
        assert process.stdin is not None
        try:
            async with self.write_reader:
                async for session_message in self.write_reader:
                    data = (self.codec.dump(session_message) + "\n").encode(
                        encoding=server.encoding, errors=server.encoding_error_handler
                    )
                    await process.stdin.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The server's stdin is gone while it may live on: end the read side so the
            # session sees the connection end instead of waiting on a reply forever.
            await self.read_writer.aclose()
        finally:
            self.writer_done.set()

    async def shutdown(self, grace: float, term_grace: float) -> None:
        """Stop traffic, let the writer flush, then the guard's ladder (`_stop`)."""
        self.read_stream.close()  # the reader drains from now on: a server blocked on a
        self.write_stream.close()  # full stdout could not read the EOF we are about to send
        with anyio.move_on_after(WRITER_FLUSH_TIMEOUT):
            await self.writer_done.wait()
        await _stop(self.process, self.guard, grace, term_grace)
        for stream in (self.read_stream, self.write_stream, self.read_writer,
                       self.write_reader):
            await stream.aclose()
        await anyio.lowlevel.checkpoint()


async def _drain(process: Process) -> None:
    """Read and drop the rest of stdout, shielded, until EOF or our shutdown closes it."""
    assert process.stdout is not None
    with anyio.CancelScope(shield=True), suppress(
        anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError
    ):
        while True:
            await process.stdout.receive()


async def _stop(
    process: Process, guard: ProcessId | None, grace: float, term_grace: float
) -> None:
    """Close the guard's stdin, wait for it (and so the tree) to be gone, reap it."""
    assert process.stdin is not None and process.stdout is not None
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    # A thread blocked in poll() on a pidfd learns the exit instant; bounded by the
    # guard's worst case plus the safety rung, and shielded by our caller.
    settled = await anyio.to_thread.run_sync(settle, guard, settle_budget(grace, term_grace))
    if settled.how != "exited":
        logger.warning("mcp-tether guard %s did not exit in time: %r", process.pid, settled)
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()  # poisons a drain a survivor's open pipe could block
    with anyio.move_on_after(REAP_TIMEOUT), suppress(ProcessLookupError, OSError):
        await process.wait()
