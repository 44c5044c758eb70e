"""`SignalInbox`: signal handlers that only record; the caller's loop acts.

Guarantees:
- While installed, each given signal has a Python handler that does nothing itself; the
  interpreter's C handler writes the signal number into a non-blocking, close-on-exec
  pipe (`signal.set_wakeup_fd`). `fileno()` is that pipe's read end: poll(2) it beside
  other fds, then `drain()` gives the signals received since, in order, duplicates kept.
  Nothing is lost while the pipe has room (64 KiB of signal numbers); a full pipe drops
  bytes silently (`warn_on_full_buffer=False`), never blocks the handler.
- `restore()` (or leaving the `with` block) puts back every previous handler and the
  previous wakeup fd, and closes the pipe. It is idempotent.
- Handlers and the wakeup fd are per process and may only be set from the main thread:
  constructing an inbox anywhere else raises `RuntimeError` at once, with nothing
  installed (a half-installed inbox would be worse than none).
- One inbox at a time owns the wakeup fd; a nested inbox saves and restores the outer
  one's fd, but the outer one receives nothing while the inner one is installed.
"""

from __future__ import annotations

import os
import signal

TYPE_CHECKING = False  # typing/collections.abc stay off the guard's start-up path
if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["SignalInbox"]


def _record(signum: int, frame: object) -> None:
    """The Python-level handler: the C handler has already written the wakeup fd."""


class SignalInbox:
    """Record `signals` from now on; read them with `drain()` (see the module doc)."""

    def __init__(self, signals: Iterable[int]) -> None:
        self.signals = tuple(signals)
        self._r, self._w = os.pipe()  # both O_CLOEXEC (PEP 446)
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)
        self._old: dict[int, object] = {}
        self._old_fd: int | None = None
        try:
            for sig in self.signals:
                self._old[sig] = signal.signal(sig, _record)
            self._old_fd = signal.set_wakeup_fd(self._w, warn_on_full_buffer=False)
        except BaseException as exc:
            self.restore()
            import threading  # only on this error path: threading costs start-up time

            if threading.current_thread() is not threading.main_thread():
                raise RuntimeError(
                    "SignalInbox must be created in the main thread "
                    "(signal handlers and the wakeup fd are process-wide)"
                ) from exc
            raise

    def fileno(self) -> int:
        """Readable when at least one signal has been recorded and not drained."""
        return self._r

    def drain(self) -> list[int]:
        """Every signal recorded since the last drain, oldest first ([] if none)."""
        if self._r < 0:
            return []
        data = b""
        while True:
            try:
                chunk = os.read(self._r, 4096)
            except BlockingIOError:
                break
            data += chunk
            if len(chunk) < 4096:
                break
        return list(data)

    def restore(self) -> None:
        """Previous handlers and wakeup fd back, pipe closed; safe to call twice."""
        if self._r < 0:
            return
        if self._old_fd is not None:
            signal.set_wakeup_fd(self._old_fd)
            self._old_fd = None
        for sig, handler in self._old.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]  # what signal() gave back
        self._old.clear()
        os.close(self._r)
        os.close(self._w)
        self._r = self._w = -1

    def __enter__(self) -> SignalInbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()
