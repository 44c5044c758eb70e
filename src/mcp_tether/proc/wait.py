"""Precise exit waits: learn the instant a process exits, without sleeping for it.

Best first, then a quiet fallback (psutil `_psposix.wait_pid` style): the backend's exit
descriptor + poll where it has one (a pidfd on Linux, a kqueue watching EVFILT_PROC /
NOTE_EXIT on macOS: it turns readable the moment the process exits, zombie or not);
otherwise polling `compare()` on a monotonic clock with a backoff from 1 ms to
20 ms (the exit instant is then known to within the backoff, at most 20 ms late).
A process that is already gone when added counts as exited at the instant of adding.
"""

from __future__ import annotations

import os
import select
import time
from collections.abc import Iterable

from mcp_tether import platform
from mcp_tether.proc.identity import SAME, ProcessId, compare

__all__ = ["ExitWaiter", "wait_gone"]


class ExitWaiter:
    """Watch a changing set of processes; report each exit with its monotonic instant."""

    def __init__(self, idents: Iterable[ProcessId] = ()) -> None:
        self._fds: dict[int, ProcessId] = {}  # exit descriptor -> ident
        self._polled: set[ProcessId] = set()  # fallback set
        self._exited: dict[ProcessId, float] = {}
        self._poll = select.poll() if hasattr(select, "poll") else None
        for ident in idents:
            self.add(ident)

    @property
    def exited(self) -> dict[ProcessId, float]:
        return dict(self._exited)

    @property
    def pending(self) -> set[ProcessId]:
        return set(self._fds.values()) | self._polled

    def add(self, ident: ProcessId) -> None:
        if ident in self._exited or ident in self.pending:
            return
        try:
            fd = platform.exit_fd(ident.pid) if self._poll is not None else None
        except ProcessLookupError:
            self._exited[ident] = time.monotonic()
            return
        if fd is not None and self._poll is not None:
            if compare(ident) != SAME:  # reused or already a zombie
                os.close(fd)
                self._exited[ident] = time.monotonic()
                return
            self._fds[fd] = ident
            self._poll.register(fd, select.POLLIN)
            return
        if compare(ident) == SAME:
            self._polled.add(ident)
        else:
            self._exited[ident] = time.monotonic()

    def wait(self, timeout: float | None, extra_fds: Iterable[int] = ()) -> list[ProcessId]:
        """Block until one watched process exits, an `extra_fds` fd is readable, or timeout.

        Returns the processes that exited during this call (possibly none).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        extra = list(extra_fds)
        if self._poll is not None and not self._polled:
            for fd in extra:
                self._poll.register(fd, select.POLLIN)
            try:
                ms = None if timeout is None else max(0, int(timeout * 1000 + 0.999))
                events = self._poll.poll(ms)
            finally:
                for fd in extra:
                    self._poll.unregister(fd)
            now = time.monotonic()
            done: list[ProcessId] = []
            for fd, _ev in events:
                ident = self._fds.pop(fd, None)
                if ident is None:
                    continue
                self._poll.unregister(fd)
                os.close(fd)
                self._exited[ident] = now
                done.append(ident)
            return done
        # Fallback: poll with backoff.
        delay = 0.001
        while True:
            done = []
            for ident in list(self._polled):
                if compare(ident) != SAME:
                    self._polled.discard(ident)
                    self._exited[ident] = time.monotonic()
                    done.append(ident)
            if done or not self._polled and not extra:
                return done
            if extra:
                r, _, _ = select.select(extra, [], [], 0)
                if r:
                    return done
            if deadline is not None and time.monotonic() >= deadline:
                return done
            remaining = None if deadline is None else deadline - time.monotonic()
            time.sleep(delay if remaining is None else max(0.0, min(delay, remaining)))
            delay = min(delay * 2, 0.02)

    def close(self) -> None:
        for fd in list(self._fds):
            if self._poll is not None:
                self._poll.unregister(fd)
            os.close(fd)
        self._fds.clear()

    def __enter__(self) -> ExitWaiter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def wait_gone(ident: ProcessId, timeout: float | None) -> float | None:
    """The monotonic instant `ident` was seen exited, or None if still alive at timeout."""
    with ExitWaiter([ident]) as w:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if ident in w.exited:
                return w.exited[ident]
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            w.wait(remaining)
