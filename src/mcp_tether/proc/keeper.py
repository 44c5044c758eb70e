"""One loop that keeps a process tree: the probe's and the host check's keepers extend it,
as uvicorn's stat and watchfiles supervisors extend its `BaseReload`.

Guarantees:
- `run()` is `start()`, `keep()`, `end()` (even when `keep` raises), `result(outcome)`:
  it never returns before every descendant is killed and reaped. `start()` makes the
  keeper the tree's child subreaper (its orphans reparent to it, never to init).
- Signal handlers only record (`SignalInbox`); `step()` waits on exits (pidfds), the
  inbox and every watched fd at once, then acts: SIGTERM/SIGINT stop the loop, each fd
  is drained (in the order watched), children are reaped (`on_exit` gets the status a
  shell reports), and a stop raises `Interrupted` (`run()` asks `interrupted()`).
- A watched fd is read until empty; at EOF or a read error (EIO: a pty master whose
  slaves are all closed) it is closed and forgotten, or it would spin the poll. `lines`:
  one JSON value per complete line, as chunks arrive (not JSON: skipped). `output`: read
  once more after the tree is killed, to keep its last words.
- `cleanup_at` is the instant `end()` began (inf before): exits after it are its doing.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mcp_tether import platform
from mcp_tether.ladder import KILL_WAIT
from mcp_tether.proc.end import Tree
from mcp_tether.proc.identity import ProcessId
from mcp_tether.proc.inbox import SignalInbox
from mcp_tether.proc.reap import exit_status, reap_children
from mcp_tether.proc.wait import ExitWaiter

__all__ = ["Interrupted", "Keeper"]


class Interrupted(Exception):
    """The loop was told to stop: SIGTERM, SIGINT, or `halt()`."""


@dataclass
class _Watched:
    on_data: Callable[[Any], None]
    on_eof: Callable[[], None] | None
    lines: bool
    output: bool
    buf: bytes = b""


class Keeper:
    """The loop and the end; a subclass fills in the hooks."""

    inbox: SignalInbox

    def __init__(self) -> None:
        self.me = os.getpid()
        self.waiter = ExitWaiter()
        self.stop = False
        self.stop_why = "interrupted"
        self.cleanup_at = float("inf")
        self._watched: dict[int, _Watched] = {}

    # -- hooks --------------------------------------------------------------------------
    def start(self) -> None:  # a subclass extends it to start its tree
        platform.set_subreaper()
        self.inbox = SignalInbox((signal.SIGTERM, signal.SIGINT, signal.SIGCHLD))

    def keep(self) -> Any:  # watch the tree (`step`, `wait_until`) until there is an outcome
        raise NotImplementedError

    def interrupted(self) -> Any: ...  # the outcome when the loop stopped before `keep` did
    def before_end(self) -> None: ...  # just before the kill: close what the tree reads
    def on_exit(self, pid: int, status: int) -> None: ...  # a child reaped (128+N: signal N)

    def result(self, outcome: Any) -> dict[str, Any]:  # the tree is ended by now
        raise NotImplementedError

    # -- the loop -----------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        self.start()
        try:
            outcome = self.keep()
        except Interrupted:
            outcome = self.interrupted()
        finally:
            self.end()
        return self.result(outcome)

    def watch(self, fd: int, on_data: Callable[[Any], None], *,
              on_eof: Callable[[], None] | None = None, lines: bool = False,
              output: bool = False, buf: bytes = b"") -> None:
        """Drain non-blocking `fd` at each step (`buf`: what was already read of it)."""
        self._watched[fd] = _Watched(on_data, on_eof, lines, output, buf)

    def unwatch(self, fd: int) -> None:
        del self._watched[fd]
        os.close(fd)

    def halt(self, why: str) -> None:
        """Stop the loop at the end of this step."""
        self.stop, self.stop_why = True, why

    def step(self, timeout: float) -> None:
        """Wait for anything (exit, signal, a watched fd) for up to `timeout`; handle it."""
        if self.stop:
            raise Interrupted
        self.waiter.wait(max(0.0, timeout), extra_fds=[self.inbox.fileno(), *self._watched])
        if any(sig != signal.SIGCHLD for sig in self.inbox.drain()):
            self.stop = True
        for fd in list(self._watched):
            if fd in self._watched:  # not closed by an earlier handler
                self.drain(fd)
        self.reap()
        if self.stop:
            raise Interrupted

    def wait_until(self, done: Callable[[], bool], deadline: float) -> bool:
        """Step until `done()` (True) or the monotonic `deadline` passes (False)."""
        while not done():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.step(remaining)
        return True

    def reap(self) -> None:
        for pid, raw in reap_children():
            self._reaped(pid, raw)

    def end(self, known: Iterable[ProcessId] = ()) -> None:
        """SIGKILL all our descendants and reap them (`proc.end.Tree`: it chases what forks
        while the rung lasts). `known`: members the subclass found, ended wherever they
        went (the portable backend has no subreaper)."""
        self.reap()
        self.cleanup_at = time.monotonic()
        self.before_end()
        Tree(inbox=self.inbox, on_reap=self._reaped, known=known).kill_all(KILL_WAIT)
        for fd in [fd for fd, w in self._watched.items() if w.output]:
            self.drain(fd)

    def _reaped(self, pid: int, raw: int) -> None:
        self.on_exit(pid, exit_status(raw))

    def drain(self, fd: int) -> None:
        """Read what watched `fd` holds now, without waiting."""
        w = self._watched[fd]
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                return
            except OSError:  # EIO: every slave end of a pty is closed
                chunk = b""
            if not chunk:
                self.unwatch(fd)
                if w.on_eof is not None:
                    w.on_eof()
                return
            if not w.lines:
                w.on_data(chunk)
                continue
            w.buf += chunk
            while b"\n" in w.buf:
                line, w.buf = w.buf.split(b"\n", 1)
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                w.on_data(msg)
