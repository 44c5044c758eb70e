"""One process's evidence (see `evidence.py`) in words: why it is still alive.

Pure functions over the evidence (`record.Evidence`); used by the diagnosis and shown in the JSON,
the table, the HTML timeline and the Markdown summary.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp_tether.probe.record import Evidence, Left

__all__ = ["kept_alive", "short"]

# Kernel wait channels that say what a blocked thread waits for (Linux names).
_WAITS = {
    "futex": "waits on a lock or a thread join",
    "epoll": "waits in its event loop",
    "poll": "waits in poll/select",
    "select": "waits in poll/select",
    "nanosleep": "sleeps in a loop",
    "pipe_read": "reads a pipe",
    "wait_woken": "waits for input",
    "do_wait": "waits for a child",
    "sigsuspend": "waits for a signal",
    "pause": "waits for a signal",
}


def short(cmd: str, limit: int = 48) -> str:
    """`/usr/bin/node /srv/timer.mjs` -> `node timer.mjs`, cut to `limit`."""
    words = [os.path.basename(w) if "/" in w and not w.startswith("-") else w for w in cmd.split()]
    text = " ".join(words)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _disposition(ev: Evidence, sig: str) -> str | None:
    """What the process had done about `sig` (from /proc/<pid>/status masks)."""
    if sig in (ev.get("sig_ignored") or []):
        return f"it ignores {sig} (SIG_IGN)"
    if sig in (ev.get("sig_caught") or []):
        return f"it has a {sig} handler, which did not end it"
    if sig in (ev.get("sig_blocked") or []):
        return f"its main thread blocks {sig}"
    return None


def kept_alive(s: Left, sig: str | None = None, sent_to: int | None = None) -> str:
    """What can be seen from outside about why a survivor is still alive. `sig` went to
    `sent_to` only: another process never received it."""
    if s.get("container"):  # a `docker run -i` server's container: no pid of ours
        inside = str(s.get("cmdline") or "").partition(": ")[2].replace("`", "")
        return f"container {s['container']} ({short(inside or 'its init')}) is still alive"
    ev = s.get("evidence")
    name = short(s.get("cmdline")
                 or (" ".join(ev.get("cmdline") or []) or ev.get("comm") if ev else None)
                 or "gone")
    if not ev:
        return f"pid {s.get('pid')} ({name}) is still alive"
    if ev.get("alive") is False:
        return f"pid {s.get('pid')} ({name}) was exiting when the window closed"
    parts = []
    if sig and sent_to is not None and sent_to != s.get("pid"):
        parts.append(f"it never received the {sig} (sent to pid {sent_to})")
    elif sig:
        disp = _disposition(ev, sig)
        if disp:
            parts.append(disp)
    threads: list[str] = ev.get("threads") or []
    waits: list[str | None] = ev.get("thread_waits") or []
    main = threads[0] if threads else ev.get("comm")
    named = sorted({t for t in threads[1:] if t and t != main})
    runtime = os.path.basename(ev.get("exe") or "")
    node = runtime.startswith("node")
    if named:
        parts.append("live threads beside the main one: " + ", ".join(named))
    elif len(threads) > 1 and not node:  # Node's own workers say nothing
        parts.append(f"{len(threads) - 1} more thread(s) beside the main one, not named at "
                     "the OS level")
    if waits:
        main_wait = _wait_text(waits[0])
        if node and waits[0] and "epoll" in waits[0]:
            parts.append("its event loop still has work to wait for (a timer, a socket or "
                         f"another handle keeps it alive; main thread in {waits[0]})")
        elif runtime.startswith("python") and waits[0] and "futex" in waits[0] and \
                len(threads) > 1:
            parts.append(f"its main thread waits on a lock or a join ({waits[0]}): at "
                         "interpreter exit, that is joining a non-daemon thread")
        elif main_wait:
            parts.append(f"its main thread {main_wait}")
        others = {_wait_text(w) for w in waits[1:]} - {None}
        if named and others:
            parts.append("the others: " + " / ".join(sorted(o for o in others if o)))
    kids = ev.get("children") or []
    if kids:  # pids, which "children: 46" would read as a count
        parts.append(f"child pid{'s' if len(kids) > 1 else ''} " + ", ".join(map(str, kids)))
    if ev.get("holds_wire") is True:
        parts.append("it still holds the client's stdio")
    elif ev.get("holds_wire") is False:
        parts.append("it no longer holds the client's stdio")
    return f"pid {s.get('pid')} ({name}) is alive: " + "; ".join(parts) if parts else \
        f"pid {s.get('pid')} ({name}) is alive"


def _wait_text(wchan: str | None) -> str | None:
    if not wchan:
        return None
    for key, text in _WAITS.items():
        if key in wchan:
            return f"{text} ({wchan})"
    return f"waits in {wchan}"
