"""One loop that keeps a process tree: the base of the probe's and the host check's keepers
(`probe.keeper.ProbeKeeper`, `hostcheck.keeper.HostKeeper`), as uvicorn's `BaseReload` is
the base of its stat and watchfiles supervisors. The base owns the loop and every step the
two do alike; a capability's keeper says only what is its own: what it starts and
watches, what an event means, what it makes of the tree, its result.

Guarantees:
- `run()` is `start()`, `keep()`, `end()` (even when `keep` raises), `result(outcome)`:
  it never returns before every descendant is killed and reaped. `start()` makes the
  keeper the tree's child subreaper (its orphans reparent to it, never to init).
- Signal handlers only record (`SignalInbox`); `step()` waits on exits (pidfds), the
  inbox and every watched fd at once, then acts: SIGTERM/SIGINT stop the loop, each fd
  is drained (in the order watched), children are reaped (`statuses` keeps the status a
  shell reports, then `on_exit` hears of it), and a stop raises `Interrupted` (`run()`
  asks `interrupted()`). `wait_until` steps until a condition or a deadline.
- A watched fd is read until empty; at EOF or a read error (EIO: a pty master whose
  slaves are all closed) it is closed and forgotten, or it would spin the poll. `lines`:
  one JSON value per complete line, as chunks arrive (not JSON: skipped). `output`: read
  once more after the tree is killed, to keep its last words. `watch_parent`: a pipe only
  the keeper's parent writes, whose EOF is that parent's death: the loop stops.
- `dispatch(name, ...)` hands an event to the keeper's `handle_<name>` (hyphens as
  underscores); a name with no handler, with an underscore or not a string is ignored.
- Every signal goes through `signal_process` / `signal_group` (`proc.signals`): the
  identity, or the group's live member, is re-checked right before it is sent.
- `cleanup_at` is the instant `end()` began (inf before): exits after it are its doing.
  `end()` kills our descendants and what `known()` names wherever it went (the portable
  backend has no subreaper), then `after_end()` runs.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from mcp_tether import platform
from mcp_tether.ladder import KILL_WAIT
from mcp_tether.proc import signals
from mcp_tether.proc.end import Tree
from mcp_tether.proc.identity import ProcessId, ProcRecord
from mcp_tether.proc.inbox import SignalInbox
from mcp_tether.proc.reap import exit_status, reap_children
from mcp_tether.proc.tree import descendants, own_tree, snapshot
from mcp_tether.proc.wait import ExitWaiter

__all__ = ["Interrupted", "BaseKeeper"]

# What a keeper's run comes to: the capability's own record (the probe's scenario
# result, the host check's row), which `result` makes and `run` returns.
ResultT = TypeVar("ResultT")


class Interrupted(Exception):
    """The loop was told to stop: SIGTERM, SIGINT, or `halt()`."""


@dataclass
class _Watched:
    on_data: Callable[[Any], None]
    on_eof: Callable[[], None] | None
    lines: bool
    output: bool
    buf: bytes = b""


def _ignore(_data: Any) -> None:
    pass


class BaseKeeper(Generic[ResultT]):
    """The loop, the tree and the end; a capability's keeper fills in the hooks and says
    what its result is (`ResultT`)."""

    inbox: SignalInbox

    def __init__(self) -> None:
        self.me = os.getpid()
        self.waiter = ExitWaiter()
        self.stop = False
        self.stop_why = "interrupted"
        self.cleanup_at = float("inf")
        self.statuses: dict[int, int] = {}  # every child reaped: pid -> status (128+N: signal N)
        self._watched: dict[int, _Watched] = {}

    # -- hooks --------------------------------------------------------------------------
    def start(self) -> None:  # a subclass extends it to start its tree
        platform.set_subreaper()
        self.inbox = SignalInbox((signal.SIGTERM, signal.SIGINT, signal.SIGCHLD))

    def keep(self) -> Any:  # watch the tree (`step`, `wait_until`) until there is an outcome
        raise NotImplementedError

    def interrupted(self) -> Any: ...  # the outcome when the loop stopped before `keep` did
    def before_end(self) -> None: ...  # just before the kill: close what the tree reads
    def after_end(self) -> None: ...  # the tree is killed and reaped: end what is left elsewhere
    def on_exit(self, pid: int, status: int) -> None: ...  # a child reaped (in `statuses` now)

    def known(self) -> Iterable[ProcessId]:  # members found, ended by `end` wherever they went
        return ()

    def result(self, outcome: Any) -> ResultT:  # the tree is ended by now
        raise NotImplementedError

    # -- the loop -----------------------------------------------------------------------
    def run(self) -> ResultT:
        self.start()
        try:
            outcome = self.keep()
        except Interrupted:
            outcome = self.interrupted()
        finally:
            self.end()
        return self.result(outcome)

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

    def wait_until(self, done: Callable[[], bool], deadline: float, *,
                   wake: Callable[[], float] | None = None) -> bool:
        """Step until `done()` (True) or the monotonic `deadline` passes (False). `wake`:
        an instant before the deadline when `done()` may turn true with no event (a wait
        that runs out): the step ends then."""
        while not done():
            now = time.monotonic()
            if now >= deadline:
                return False
            until = deadline if wake is None else min(deadline, wake())
            self.step(max(0.0, until - now))
        return True

    # -- what the loop watches ----------------------------------------------------------
    def watch(self, fd: int, on_data: Callable[[Any], None], *,
              on_eof: Callable[[], None] | None = None, lines: bool = False,
              output: bool = False, buf: bytes = b"") -> None:
        """Drain non-blocking `fd` at each step (`buf`: what was already read of it)."""
        self._watched[fd] = _Watched(on_data, on_eof, lines, output, buf)

    def watch_parent(self, fd: int, why: str, on_data: Callable[[Any], None] = _ignore, *,
                     lines: bool = False, buf: bytes = b"") -> None:
        """Watch the pipe from the process that started the keeper, whose write end only it
        holds: its EOF is that process's death, and the loop stops (`why`), so a SIGKILLed
        parent leaves nothing running."""
        self.watch(fd, on_data, on_eof=lambda: self.halt(why), lines=lines, buf=buf)

    def unwatch(self, fd: int) -> None:
        del self._watched[fd]
        os.close(fd)

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

    def dispatch(self, name: object, *args: Any) -> None:
        """Hand an event to `handle_<name>` (hyphens as underscores) with `args`. Names are
        words joined by hyphens: one with an underscore, or not a string, is ignored, as a
        name this keeper has no handler for."""
        if not isinstance(name, str) or "_" in name:
            return
        handler = getattr(self, "handle_" + name.replace("-", "_"), None)
        if handler is not None:
            handler(*args)

    # -- the tree -----------------------------------------------------------------------
    def tree(self, *, full: bool = True) -> list[ProcRecord]:
        """Our descendants now, parents first: a scan of the whole process table, or
        (`full=False`) a walk of our own children lists where the kernel keeps them,
        whose cost does not grow with the machine (a child being born may be missing
        from it: confirm "gone" with a full scan)."""
        own = None if full else own_tree(self.me)
        return own if own is not None else descendants(self.me, snapshot())

    def signal_process(self, who: ProcessId, sig: int) -> str:
        """`sig` to exactly `who`, its identity re-checked right before: sent, gone, denied."""
        return signals.signal_process(who, sig)

    def signal_group(self, pgid: int, sig: int, members: Iterable[ProcessId]) -> str:
        """killpg(`pgid`, `sig`) only while a live member of `members` proves it ours."""
        return signals.signal_group(pgid, sig, members)

    def reap(self) -> None:
        for pid, raw in reap_children():
            self._reaped(pid, raw)

    def _reaped(self, pid: int, raw: int) -> None:
        status = exit_status(raw)
        self.statuses[pid] = status
        self.on_exit(pid, status)

    # -- the end ------------------------------------------------------------------------
    def end(self) -> None:
        """SIGKILL all our descendants and reap them (`proc.end.Tree`: it chases what forks
        while the rung lasts), with the members `known()` names wherever they went."""
        known = self.known()
        self.reap()
        self.cleanup_at = time.monotonic()
        self.before_end()
        Tree(inbox=self.inbox, on_reap=self._reaped, known=known).kill_all(KILL_WAIT)
        for fd in [fd for fd, w in self._watched.items() if w.output]:
            self.drain(fd)
        self.after_end()
