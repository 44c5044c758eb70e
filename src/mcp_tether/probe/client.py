"""The doomed client: starts a server the way a host does, speaks the handshake, then
ends the way the scenario says (ladder, exit, crash, half-close, ...).

It runs in a process forked by the scenario's keeper (`keeper.py`) and reports each
step as a JSON line on the control fd, stamped with CLOCK_MONOTONIC (system-wide, so
the keeper can compare instants). The scenario (`scenarios/`) drives it through
`scenarios.base.ClientPort`: the handshake, then its ending.

Host styles (the SDKs' clients as they are written; docs/probe.md):
- node: stdin and stdout are UNIX socketpairs (libuv), the server stays in the client's
  process group; close = `stdin.end()` (shutdown(SHUT_WR)) -> 2 s -> SIGTERM to the
  direct child only -> 2 s -> SIGKILL to the direct child. When the direct child exits,
  its stdin and stdout are destroyed at once, as Node's child_process does: a server
  behind a wrapper that died sees EOF.
- python: pipes, server in a new session; close stdin -> 2 s -> killpg(SIGTERM) -> 2 s
  -> killpg(SIGKILL); the pipes stay open until the ladder has ended (the SDK's
  `stdio_client` closes them when its context exits).
Its output is read in linear time whatever a line's length (a server may print one
huge line).
The client signals only its own direct child, which it has not reaped yet: the pid
(and so the group id it leads) cannot have been reused.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
import socket
import time
from typing import Any, NoReturn

from mcp_tether import platform
from mcp_tether.errors import TetherError
from mcp_tether.ladder import run_ladder
from mcp_tether.probe.scenarios import get as get_scenario
from mcp_tether.probe.spec import STARVED_CAP, Spec
from mcp_tether.probe.wire import Session, classify
from mcp_tether.proc import identify, signal_group, signal_process
from mcp_tether.proc.fds import stdio_key
from mcp_tether.proc.progress import Look, Starvation, look, moved
from mcp_tether.proc.reap import exit_status, poll_child, wait_child
from mcp_tether.proc.spawn import Spawned, fork_call, spawn

MAX_NOISE = 5
READ_SIZE = 1 << 18
POLL_TICK_MS = 10  # without a pidfd (portable backend): how often pump looks for the exit
STDOUT_CLOSED_GRACE = 0.5  # seconds: stdout EOF, then is the server gone too?
PROGRESS_TICK = 1.0  # seconds between looks at the server's tree while awaiting an answer
OWN_TIME_MIN = 0.5  # seconds: a wait this long (a ladder rung) counts the tree's own time
# Methods only a client sends: seeing one on the server's stdout means an echo.
CLIENT_METHODS = {"initialize", "server/discover", "tools/list", "tools/call"}


class Client:
    def __init__(self, spec: Spec, ctrl_fd: int, stderr_fd: int) -> None:
        self.spec = spec
        self.ctrl_fd = ctrl_fd
        self.stderr_fd = stderr_fd
        self.style = spec.host_style
        self.scenario = spec.scenario
        self.sc = get_scenario(spec.scenario)
        self.announce_close = False  # closing stdin is the trigger (ladder(announce=True))
        self.sess = Session()
        self.child: Spawned | None = None
        self.pidfd: int | None = None
        self.stdin_fd: int | None = None
        self.stdin_sock: socket.socket | None = None
        self.stdout_fd: int | None = None
        self.buf = bytearray()
        self.responses: dict[Any, dict[str, Any]] = {}
        self.noise = 0
        self.status: int | None = None
        self.exited_at: float | None = None
        self.poll = select.poll()
        self.waited = 0.0  # how long the last await_response waited
        self.busy = False  # it gave up at its ceiling with the tree still working

    # -- reporting ----------------------------------------------------------------
    def emit(self, kind: str, **fields: Any) -> None:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        fields.update(kind=kind, t=time.monotonic(), cpu=ru.ru_utime + ru.ru_stime)
        data = (json.dumps(fields) + "\n").encode()
        with contextlib.suppress(OSError):  # the keeper is gone: nobody to tell
            os.write(self.ctrl_fd, data)

    # -- spawning -------------------------------------------------------------------
    def spawn(self) -> None:
        spec = self.spec
        devnull = self.sc.stdin_at_eof
        keep: list[int] = []
        if self.style == "node":
            a, b = socket.socketpair()
            c, d = socket.socketpair()
            child_in, child_out = b.fileno(), d.fileno()
            self.stdin_sock, self.stdout_fd = a, c.detach()
            self.stdin_fd = a.fileno()
            keep = [b.detach(), d.detach()]
        else:
            r, w = os.pipe()
            r2, w2 = os.pipe()
            child_in, child_out = r, w2
            self.stdin_fd, self.stdout_fd = w, r2
            keep = [r, w2]
        if devnull:
            null = os.open(os.devnull, os.O_RDONLY)
            keep.append(null)
            child_in = null
        try:
            # The core's spawn: 127 / 126 (a script without `#!` too) / a missing cwd
            # come back through its close-on-exec error pipe, before anything runs.
            self.child = spawn(
                spec.argv,
                env=spec.env,
                cwd=spec.cwd,
                stdin=child_in,
                stdout=child_out,
                stderr=self.stderr_fd,
                new_session=self.style == "python",
            )
        except TetherError as exc:
            self.emit("spawn-error", code=exc.exit_code, reason=str(exc))
            os._exit(0)
        # The server's own ends, named for the keeper: whoever of its tree holds one of
        # them still holds this client's stdio (the keeper's tree rule).
        wire = [list(k) for k in (stdio_key(child_in), stdio_key(child_out)) if k]
        for fd in keep:
            os.close(fd)
        if devnull:
            # Nothing will ever be written to the server: our end of stdin is useless.
            if self.stdin_sock is not None:
                self.stdin_sock.close()
                self.stdin_sock = None
            else:
                assert self.stdin_fd is not None
                os.close(self.stdin_fd)
            self.stdin_fd = None
        os.set_blocking(self.stdout_fd, False)
        self.poll.register(self.stdout_fd, select.POLLIN)
        self.pidfd = self.child.pidfd if self.child.pidfd is not None else (
            platform.pidfd_open(self.child.pid))
        if self.pidfd is not None:  # else pump polls for the exit (at most POLL_TICK late)
            self.poll.register(self.pidfd, select.POLLIN)
        ident = self.child.ident
        self.emit("spawned", pid=ident.pid, start=ident.start or None, wire=wire)

    # -- I/O ------------------------------------------------------------------------
    def send(self, data: bytes) -> bool:
        if self.stdin_fd is None:
            return False
        try:
            os.write(self.stdin_fd, data)
            return True
        except OSError:
            return False

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a request; its id."""
        rid, data = self.sess.request(method, params)
        self.send(data)
        return rid

    def _on_line(self, line: bytes) -> None:
        kind, msg = classify(line)
        if kind == "response" and msg is not None:
            self.responses[msg.get("id")] = msg
        elif kind == "request" and msg is not None:
            if msg.get("method") in CLIENT_METHODS:
                # Our own request came back: an echo (`cat`), not an MCP server.
                self.noise += 1
                if self.noise <= MAX_NOISE:
                    echoed = line[:120].decode(errors="replace")
                    self.emit("noise", line="echoed our request: " + echoed)
                return
            self.send(Session.reply(msg))
        elif kind == "noise":
            self.noise += 1
            if self.noise <= MAX_NOISE:
                self.emit("noise", line=line[:200].decode(errors="replace"))

    def pump(self, timeout: float | None, *, until_event: bool = False) -> None:
        """Serve stdout and watch the child for up to `timeout` (None: forever).

        With `until_event`, return as soon as one batch of events has been handled, so
        that callers waiting for a response or an exit see it at once.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return
            ms = -1 if remaining is None else int(remaining * 1000) + 1
            polling = self.pidfd is None and self.child is not None and self.status is None
            if polling:
                ms = POLL_TICK_MS if ms < 0 else min(ms, POLL_TICK_MS)
            events = self.poll.poll(ms)
            for fd, _ev in events:
                if fd == self.stdout_fd:
                    self._read_stdout()
                elif fd == self.pidfd and self.child is not None:
                    self._reap(wait_child(self.child.pid))  # it has exited: no blocking
            if polling and self.child is not None and self.status is None:
                raw = poll_child(self.child.pid)
                if raw is not None:
                    self._reap(raw)
                    events = events or [(-1, 0)]
            if events and (until_event or timeout == 0):
                return

    def _read_stdout(self) -> bool:
        """Read one chunk; handle each complete line. False once nothing more is there.

        Linear in the output: only the new chunk is searched for a newline, and the
        buffer is trimmed once per chunk (searching the whole buffer each time made a
        40 MB line cost 9 s of CPU).
        """
        assert self.stdout_fd is not None
        try:
            chunk = os.read(self.stdout_fd, READ_SIZE)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if not chunk:
            self._close_stdout()
            self.emit("stdout-closed")
            return False
        start = len(self.buf)
        self.buf += chunk
        pos = 0
        nl = self.buf.find(b"\n", start)
        while nl >= 0:
            self._on_line(bytes(self.buf[pos:nl]))
            pos = nl + 1
            nl = self.buf.find(b"\n", pos)
        if pos:
            del self.buf[:pos]
        return True

    def _close_stdout(self) -> None:
        if self.stdout_fd is None:
            return
        self.poll.unregister(self.stdout_fd)
        os.close(self.stdout_fd)
        self.stdout_fd = None
        if self.buf:
            self._on_line(bytes(self.buf))
            self.buf = bytearray()

    def destroy_stdio(self) -> None:
        """Take what the server already wrote, then close both our ends (Node on exit)."""
        while self.stdout_fd is not None and self._read_stdout():
            pass
        self._close_stdout()
        if self.stdin_sock is not None:
            self.stdin_sock.close()
            self.stdin_sock = None
            self.stdin_fd = None
        elif self.stdin_fd is not None:
            os.close(self.stdin_fd)
            self.stdin_fd = None

    def _reap(self, raw: int) -> None:
        """The child has exited and been reaped with raw wait status `raw`."""
        assert self.child is not None
        now = time.monotonic()
        if self.pidfd is not None:
            self.poll.unregister(self.pidfd)
            os.close(self.pidfd)
        self.pidfd = None
        self.child.pidfd = None
        self.status = exit_status(raw)
        self.exited_at = now
        # Died of a signal, or exited with a code (128+N by its own exit() reads the same
        # status): a Node server that a signal killed before its handlers is told apart.
        self.emit("reaped", status=self.status, at=now, signaled=os.WIFSIGNALED(raw))
        if self.style == "node":
            # libuv: the child's exit destroys the stdio streams given to it, so a
            # server behind a wrapper that died sees EOF now, as under a real Node host.
            self.destroy_stdio()

    def await_response(
        self, rid: int, timeout: float, ceiling: float | None = None
    ) -> tuple[dict[str, Any] | None, str]:
        """Wait for the answer to `rid` while the server's tree makes progress.

        Gives up ("timeout") once the tree has been idle for `timeout` seconds in a row
        (no CPU used, nobody started or ended, nobody runnable: `proc.progress`), or
        after `ceiling` seconds (default `timeout`: a fixed wait) however busy it stays.
        Where progress cannot be seen (no /proc), the wait is the fixed `timeout`.
        """
        start = time.monotonic()
        limit = start + max(timeout, ceiling or timeout)
        deadline = start + timeout  # moves on while the tree is seen doing something
        tick = max(0.25, min(PROGRESS_TICK, timeout / 4))
        seen = self._look() if ceiling else None
        next_look = start + tick
        self.waited = 0.0
        while rid not in self.responses:
            if self.gone():
                return None, "exited"
            if self.stdout_fd is None:
                # A server that exits closes stdout a moment before it can be reaped:
                # tell "it died" from "it closed stdout and lives on" by waiting a little.
                if self.wait(STDOUT_CLOSED_GRACE) is not None:
                    return None, "exited"
                return None, "stdout-closed"
            now = time.monotonic()
            if seen is not None and now >= next_look:
                looked = self._look()
                if moved(seen, looked):
                    deadline = min(limit, now + timeout)
                seen, next_look = looked, now + tick
            self.waited = now - start
            if now >= deadline:
                self.busy = deadline >= limit > start + timeout  # the ceiling, not idleness
                return None, "timeout"
            wake = deadline if seen is None else min(deadline, next_look)
            self.pump(max(0.0, wake - now), until_event=True)
        return self.responses.pop(rid), "ok"

    def await_answer_or_end(self, rid: int) -> bool:
        """Serve until `rid` is answered, or the server exits or closes its stdout;
        whether the answer came."""
        while rid not in self.responses and self.status is None and self.stdout_fd is not None:
            self.pump(None, until_event=True)
        return rid in self.responses

    def gone(self) -> bool:
        """The direct child has exited and nothing of its tree holds its stdout."""
        return self.status is not None and not self.stdout_held()

    def _look(self) -> Look | None:
        """The scenario's tree without this client: the keeper's descendants (orphans of
        the server reparent to the keeper), the client itself not counted."""
        return look(os.getppid(), frozenset((os.getpid(),)))

    def stdout_held(self) -> bool:
        """After the direct child's exit: does its tree still hold the server's stdout?

        A launcher that double-forks its server, or a server that handed its stdout to
        a helper, has exited while the answer is still to come through the stdout it
        handed on: wait for whoever answers. The read end reports POLLHUP once every
        writer is gone (the kernel closes an exiting process's fds before its pidfd
        turns readable), so "nobody holds it" is seen without a race.
        """
        if self.stdout_fd is None:
            return False
        p = select.poll()
        p.register(self.stdout_fd, select.POLLIN)
        return not any(ev & select.POLLHUP for _fd, ev in p.poll(0))

    # -- handshake ------------------------------------------------------------------
    def handshake(self, send_call: bool = True) -> bool:
        t = self.spec.ready_timeout
        rid, data = self.sess.initialize()
        self.send(data)
        ceiling = self.spec.ready_ceiling
        msg, why = self.await_response(rid, t, ceiling)
        method = "initialize"
        if msg is not None and "error" in msg and Session.refused_as_unknown(msg):
            method = "server/discover"
            rid, data = self.sess.discover()
            self.send(data)
            msg, why = self.await_response(rid, t, ceiling)
        if msg is None or "error" in msg:
            if msg is not None:
                why = "error-response"
            self.emit("handshake", ok=False, method=method, why=why, error=(msg or {}).get("error"),
                      waited=self.waited, busy=self.busy)
            return False
        if not self.sess.stateless:
            self.send(Session.notification("notifications/initialized"))
        # A first request proves the server serves. tools/list only where it declared
        # tools: a server without them rightly answers "method not found"; ping is
        # answered by every server (the spec's basic utilities).
        caps = (msg.get("result") or {}).get("capabilities")
        probe_method = "ping" if isinstance(caps, dict) and "tools" not in caps else "tools/list"
        rid = self.request(probe_method)
        msg, why = self.await_response(rid, t, ceiling)
        if msg is None:
            self.emit("handshake", ok=False, method=probe_method, why=why, error=None,
                      waited=self.waited, busy=self.busy)
            return False
        warn = None if "error" not in msg else f"{probe_method} answered with an error"
        call = self.spec.call
        if call and send_call:
            self.request("tools/call", {"name": call[0], "arguments": call[1]})
            self.pump(0.05)  # let the call reach the server before we end the session
        self.emit("handshake", ok=True, method=method, stateless=self.sess.stateless, warn=warn)
        return True

    # -- endings --------------------------------------------------------------------
    def close_stdin(self) -> None:
        if self.announce_close:
            self.emit("trigger", what="eof")  # before the act: the server may exit at once
        if self.stdin_sock is not None:
            with contextlib.suppress(OSError):  # already shut down, or the peer is gone
                self.stdin_sock.shutdown(socket.SHUT_WR)  # Node's stdin.end()
        elif self.stdin_fd is not None:
            os.close(self.stdin_fd)
            self.stdin_fd = None

    def signal(self, sig: int) -> str:
        if self.status is not None or self.child is None:
            return "gone"
        if self.style == "python":  # the group our unreaped child leads
            return signal_group(self.child.pid, sig, [self.child.ident])
        return signal_process(self.child.ident, sig)  # node: the direct child only

    def wait(self, timeout: float) -> float | None:
        """Until the direct child exits (its instant) or `timeout` of the tree's own time.

        A rung of the ladder (2 s) on a loaded machine: what the tree waited for a CPU
        meanwhile (`proc.progress.Starvation`) is added, at most STARVED_CAP times the
        wait, so that an SDK server that needs half a second of CPU to exit after EOF is
        not SIGTERMed because the machine did not give it one. Where
        that wait cannot be read, the rung is the wall-clock `timeout`.
        """
        start = time.monotonic()
        deadline = start + timeout
        starved = Starvation() if timeout >= OWN_TIME_MIN else None
        while self.status is None:
            now = time.monotonic()
            if starved is not None:
                tree = self._look()
                waited = starved.update(list(tree.members)) if tree is not None else 0.0
                deadline = start + timeout + min(waited, STARVED_CAP * timeout)
            remaining = deadline - now
            if remaining <= 0:
                return None
            self.pump(remaining if starved is None else min(remaining, PROGRESS_TICK / 4),
                      until_event=True)
        return self.exited_at

    def ladder(self, *, announce: bool = False) -> None:
        """The host's shutdown ladder; `announce`: closing stdin is the trigger."""
        self.announce_close = announce
        res = run_ladder(self, grace=self.spec.grace, term_grace=self.spec.term_grace)
        self.destroy_stdio()  # both SDKs close their ends when the ladder is over
        self.emit(
            "ladder",
            rungs=[
                {"action": r.action, "sent_at": r.sent_at, "outcome": r.outcome}
                for r in res.rungs
            ],
            ended_by=res.ended_by,
        )

    def fork_writer_holder(self) -> None:
        """Fork a helper that keeps a copy of the server's stdin write end, nothing else."""
        assert self.stdin_fd is not None
        keep = self.stdin_fd

        def only_the_write_end() -> None:
            os.closerange(3, keep)
            os.closerange(keep + 1, 65536)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1):
                os.dup2(null, fd)

        def hold() -> None:
            while True:
                signal.pause()

        pid = fork_call(hold, before=only_the_write_end, new_session=False, pdeathsig=None,
                        reset_signals=False)
        ident = identify(pid)
        self.emit("helper", pid=pid, start=ident.start if ident else None)

    def run(self) -> NoReturn:
        self.spawn()
        self.sc.client_run(self)  # the scenario's client: handshake and ending
        os._exit(0)


def client_main(spec: Spec, ctrl_fd: int, stderr_fd: int) -> NoReturn:
    try:
        Client(spec, ctrl_fd, stderr_fd).run()
    except BaseException as exc:  # noqa: BLE001  # a forked child must never return
        try:
            os.write(
                ctrl_fd,
                (json.dumps({"kind": "client-error", "t": time.monotonic(), "reason": repr(exc)})
                 + "\n").encode(),
            )
        finally:
            os._exit(70)
