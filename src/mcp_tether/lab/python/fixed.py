"""Fixture `fixed`: the `thread` fixture made right by hand, without mcp_tether.

It still runs a non-daemon flusher thread, yet it ends promptly on each of:
  (a) stdin EOF: the SDK's `run()` returns;
  (b) SIGTERM, SIGINT or SIGHUP;
  (c) parent death: a daemon thread waits on a pidfd of the parent (Linux >= 5.3),
      else polls `os.getppid()` for a change every 200 ms.
All three funnel into one run-once `shutdown()`, which logs `event=shutdown` as its last
act and then `os._exit()`s: 0, or 128+N after signal N. `os._exit` because the flusher
would otherwise block interpreter shutdown forever.

The parent watcher never reads fd 0: in mcp 2.x fd 0 points at /dev/null while serving,
and reading the wire would steal protocol bytes anyway.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
from types import FrameType
from typing import TYPE_CHECKING

# Before the SDK import, which takes most of the start-up: the parent may die meanwhile.
_PARENT = os.getppid()

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # run as a script

if TYPE_CHECKING:  # mypy checks the package path; scripts never need mcp_tether
    from mcp_tether.lab.python._common import log, make_server, tick
else:
    from _common import log, make_server, tick

PARENT_POLL_INTERVAL = 0.2  # seconds, for the getppid() fallback only

mcp = make_server("fixed")

# Non-blocking acquire, never blocking: a signal handler runs on the main thread, and if
# the main thread already holds the lock (EOF path mid-shutdown) a blocking acquire there
# would deadlock. The loser simply returns; the winner is about to _exit.
_shutdown_lock = threading.Lock()


def shutdown(reason: str, code: int = 0) -> None:
    """Run once: log `event=shutdown` and end the process with `code`."""
    if not _shutdown_lock.acquire(blocking=False):
        return
    log("shutdown", reason=reason, code=code)
    os._exit(code)


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    shutdown(f"signal:{signal.Signals(signum).name}", 128 + signum)


def _watch_parent(ppid: int) -> None:
    """Wait until the process that started us is gone, then shut down."""
    try:
        pidfd: int | None = os.pidfd_open(ppid)
    except (AttributeError, OSError):  # not Linux, kernel < 5.3, or parent already reaped
        pidfd = None
    # Race: the parent may have died before pidfd_open (and the pidfd then names whatever
    # took its pid, or nothing). getppid() has changed by then, so check after opening.
    if os.getppid() != ppid:
        shutdown("parent_gone")
        return
    if pidfd is not None:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        while not poller.poll():
            pass
        shutdown("parent_exit")
    else:
        while os.getppid() == ppid:
            time.sleep(PARENT_POLL_INTERVAL)
        shutdown("parent_gone")
    # Only reached when another path won the shutdown race and is exiting already.


if __name__ == "__main__":
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    threading.Thread(target=tick, name="flusher", daemon=False).start()
    threading.Thread(
        target=_watch_parent, args=(_PARENT,), name="parent-watch", daemon=True
    ).start()
    log("ready", ppid=_PARENT)
    mcp.run()
    shutdown("eof")
