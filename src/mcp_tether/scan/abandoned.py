"""Servers a live host abandoned: it holds their pipes, but no longer reads them.

A host that reconnects (a config edit, a reload) starts a new copy and may forget the
old one without closing it: the old server's launcher is alive and holds its channel,
so by the leak rules (`rules.judge`) it is live. This module looks at how the host
waits, and says whether it still reads the server's output at all.

Guarantees:
- "abandoned" needs the required evidence, never one weak sign: the live launcher that
  holds the far end of the server's output watches that file in none of its epoll sets
  (matched by the open file, (st_dev, st_ino): an epoll may watch a dup of the fd, and
  an item's tfd may be a number since closed) AND no thread of it is blocked in the
  read family on an fd of that file, on both looks of the scan (`SAMPLE` apart), and
  the same holds for every other process we can see holding that far end.
- Where the host's waiting cannot be read (a thread in poll or select: what it watches
  is in its memory; an io_uring; threads or fds we may not read; a backend that cannot
  look), the answer is "unknown", and "unknown" is never abandoned.
- A host that is idle but still listening (its epoll watches the fd, or a thread is
  blocked reading it) is live, however long it has been idle.
- Confidence only, never required: a newer copy of the same server (same argv, cwd and
  config entries) under the same host that the host does listen to; the server's I/O
  counters (rchar, wchar) unchanged over the time it was seen abandoned.
- How long it has been abandoned is what was observed, never guessed: the two looks
  of one scan apart, or, with a `Tracker` kept across scans (`reap --watch`), since
  the first scan that found it abandoned with every scan since agreeing.
- A hint, never a reason to end anything: this is what the host could do (its waits),
  and an idle synchronous or on-demand host (one that sleeps between requests, polls on
  a timer, reads from a thread woken on demand) looks the same. `reap` ends a copy
  only for what its host did (`scan.superseded`).
- Reads only: nothing here signals or writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp_tether.proc import table
from mcp_tether.proc.table import End
from mcp_tether.scan.evidence import HOLDER_FD_LIMIT
from mcp_tether.scan.model import HOST_NOT_LISTENING, IO_IDLE, NEWER_COPY

if TYPE_CHECKING:
    from mcp_tether.proc import ProcessId
    from mcp_tether.scan.evidence import Peers
    from mcp_tether.scan.model import Server

__all__ = ["SAMPLE", "Waits", "look", "listens", "waits_on", "assess", "Tracker"]

SAMPLE = 0.25  # seconds between the two looks of one scan (only when a host looks away)
_EPOLL_READ = 0x1 | 0x2  # EPOLLIN | EPOLLPRI: an item that would wake for data


@dataclass(frozen=True)
class Waits:
    """One look at how a process waits for input."""

    links: dict[int, End] | None  # its fds' ends
    epoll: list[tuple[int, int, tuple[int, int] | None]] | None
    uring: bool
    threads: list[tuple[int, str, int | None]] | None


def look(pid: int) -> Waits:
    ends = table.fd_ends(pid, limit=HOLDER_FD_LIMIT)
    got = table.epoll_items(pid, ends) if ends is not None else None
    return Waits(ends, got[0] if got else None, bool(got and got[1]),
                 table.thread_waits(pid))


def listens(w: Waits, far: dict[int, tuple[End, tuple[int, int] | None]]) -> tuple[str, str]:
    """(yes | no | unknown, why): does the process read any of `far` (its fd -> (end,
    open file)), by one of its epoll sets or a thread blocked reading it? Pure."""
    item = _epoll_watches(w, far)
    if item is not None:
        return "yes", f"an epoll set watches fd {item[0]} for input (events {item[1]:#x})"
    reader = _blocked_reading(w, far)
    if reader is not None:
        return "yes", f"thread {reader[0]} is blocked reading fd {reader[1]}"
    if w.links is None or w.epoll is None:
        return "unknown", "its open files and epoll sets cannot be read from here"
    if w.threads is None:
        return "unknown", "what its threads wait in cannot be read from here"
    polling = [tid for tid, kind, _ in w.threads if kind == "poll"]
    if polling:
        return "unknown", (f"thread {polling[0]} waits in poll or select: what it watches "
                           "cannot be read")
    if w.uring:
        return "unknown", "it holds an io_uring: reads queued there cannot be seen"
    kinds: dict[str, int] = {}
    for _, kind, _ in w.threads:
        kinds[kind] = kinds.get(kind, 0) + 1
    seen = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    return "no", (f"none of its {len(w.epoll)} epoll item(s) watches it and no thread is "
                  f"blocked reading it ({len(w.threads)} thread(s): {seen})")


def waits_on(w: Waits, far: dict[int, tuple[End, tuple[int, int] | None]]) -> bool:
    """Is the process waiting for input on one of `far` right now: a thread blocked
    reading it, or a thread in an epoll wait while an epoll set watches it for input?
    (`superseded`: a server waiting on its protocol input has finished starting.) Pure."""
    if _blocked_reading(w, far) is not None:
        return True
    return any(kind == "epoll" for _, kind, _ in w.threads or ()) \
        and _epoll_watches(w, far) is not None


def _on_far(w: Waits, far: dict[int, tuple[End, tuple[int, int] | None]], fd: int) -> bool:
    """Is `fd` (of the process `w` looked at) open on one of `far`'s ends?"""
    e = (w.links or {}).get(fd)
    return e is not None and e.id in {f.id for f, _ in far.values()}


def _epoll_watches(w: Waits, far: dict[int, tuple[End, tuple[int, int] | None]]
                   ) -> tuple[int, int] | None:
    """(tfd, events) of an epoll item watching one of `far` for input, matched by the
    open file (an item's tfd may be a number since closed), by tfd's end without one."""
    keys = {k for _, k in far.values() if k is not None}
    for tfd, events, key in w.epoll or ():
        if events & _EPOLL_READ and ((key in keys) if key is not None
                                     else _on_far(w, far, tfd)):
            return tfd, events
    return None


def _blocked_reading(w: Waits, far: dict[int, tuple[End, tuple[int, int] | None]]
                     ) -> tuple[int, int] | None:
    """(tid, fd) of a thread blocked in the read family on one of `far`."""
    for tid, kind, fd in w.threads or ():
        if kind == "read" and fd is not None and _on_far(w, far, fd):
            return tid, fd
    return None


def _far_ends(s: Server, host: int,
              ends: dict[int, End]) -> dict[int, tuple[End, tuple[int, int] | None]]:
    """The host's fds on the far end of the server's output: fd -> (end, open file)."""
    want = {c.far for c in s.channels if c.side == "out" and c.peer == "yes" and c.far}
    return {fd: (e, table.fd_file(host, fd)) for fd, e in ends.items()
            if any(e.holds(w) for w in want)}


def _io(s: Server) -> tuple[int, int] | None:
    total = [0, 0]
    for m in s.members:
        got = table.io_counters(m.ident.pid)
        if got is None:
            return None
        total[0] += got[0]  # rchar, wchar: bytes read and written
        total[1] += got[1]
    return total[0], total[1]


class Tracker:
    """Abandonment seen across scans (`reap --watch`): since when, with what I/O.

    A server stays tracked only while every scan finds it abandoned by the same host;
    one scan that sees the host listen (or cannot tell) starts its clock again."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.seen: dict[tuple[ProcessId, int], tuple[float, tuple[int, int] | None]] = {}

    def since(self, key: tuple[ProcessId, int], t0: float,
              io: tuple[int, int] | None) -> tuple[float, tuple[int, int] | None]:
        return self.seen.setdefault(key, (t0, io))

    def keep(self, keys: set[tuple[ProcessId, int]]) -> None:
        for k in [k for k in self.seen if k not in keys]:
            del self.seen[k]


def assess(servers: list[Server], peers: Peers, cwd_of: Callable[[int], str | None], *,
           tracker: Tracker | None = None, sample: float = SAMPLE,
           sleep: Callable[[float], None] = time.sleep) -> None:
    """Fill `listening` of every live server whose launcher holds its output's far end,
    and add the abandoned evidence where the host reads it nowhere (module docstring)."""
    clock = tracker.clock if tracker is not None else time.monotonic
    t0 = clock()
    hosts: dict[int, Waits] = {}
    todo: list[tuple[Server, int, dict[int, tuple[End, tuple[int, int] | None]]]] = []
    for s in servers:
        host = int(s.parent.get("pid") or 0)
        if s.state != "live" or s.parent.get("role") not in ("host", "launcher") or host < 1:
            continue
        if host not in hosts:
            hosts[host] = look(host)
        if hosts[host].links is None or not table.CHANNEL_DETAIL:
            s.listening = {"answer": "unknown", "host": host,
                           "reason": "the host's open files cannot be read from here"}
            continue
        far = _far_ends(s, host, hosts[host].links or {})
        if not far:
            continue
        answer, why = listens(hosts[host], far)
        rec = table.record(host)
        s.listening = {"answer": answer, "host": host, "host_start": rec.start if rec else None,
                       "host_name": s.parent.get("name"),
                       "far_ends": [[fd, far[fd][0].name] for fd in sorted(far)],
                       "reason": why}
        if answer == "no":
            todo.append((s, host, far))
    if not todo:
        if tracker is not None:
            tracker.keep(set())
        return
    io0 = {s.ident: _io(s) for s, _, _ in todo}
    sleep(sample)  # a second look: a reader thread between two reads is caught here
    again: dict[int, Waits] = {}
    found: set[tuple[ProcessId, int]] = set()
    for s, host, far in todo:
        if host not in again:
            again[host] = look(host)
        answer, why = listens(again[host], far)
        if answer == "no":
            answer, why = _others(s, host, far, peers)
        if answer != "no":
            s.listening.update(answer=answer, reason=f"on a second look: {why}")
            continue
        io1 = _io(s)
        first, io_first = (t0, io0[s.ident])
        if tracker is not None:
            found.add((s.ident, host))
            first, io_first = tracker.since((s.ident, host), t0, io0[s.ident])
        seconds = clock() - first
        fds = ", ".join(f"fd {fd} -> {e.name}" for fd, (e, _) in sorted(far.items()))
        lines = [f"host {host} ({s.parent.get('name') or '?'}) holds the far end of its "
                 f"output ({fds}) and reads it nowhere: {s.listening['reason']}; "
                 f"the same on a look {sample:g}s later"]
        s.evidence.append(HOST_NOT_LISTENING)
        newer = _newer_copy(s, servers, cwd_of)
        if newer is not None:
            s.evidence.append(NEWER_COPY)
            lines.append(f"newer copy pid {newer.pid} (same command, cwd and config entry) "
                         f"started {s.age_seconds - newer.age_seconds:.0f}s later under "
                         f"the same host, which listens to it: {newer.listening['reason']}")
        idle = io1 is not None and io1 == io_first
        if idle and io1 is not None:
            s.evidence.append(IO_IDLE)
            lines.append(f"its read/write counters are unchanged over the {seconds:.1f}s "
                         f"it was seen abandoned (rchar {io1[0]}, wchar {io1[1]})")
        score = (newer is not None) + idle
        s.listening.update(abandoned_seconds=round(seconds, 2), lines=lines,
                           newer_copy=newer.pid if newer is not None else None,
                           io_unchanged=idle if io1 is not None else None,
                           confidence=("low", "medium", "high")[score])
    if tracker is not None:
        tracker.keep(found)


def _others(s: Server, host: int, far: dict[int, tuple[End, tuple[int, int] | None]],
            peers: Peers) -> tuple[str, str]:
    """Every other process we can see holding the far end must not read it either."""
    skip = {m.ident.pid for m in s.members} | {host}
    for end_id in {e.id for e, _ in far.values()}:
        for pid in peers.holders(end_id, skip):
            w = look(pid)
            mine = {fd: (e, table.fd_file(pid, fd)) for fd, e in (w.links or {}).items()
                    if e.holds(end_id)}
            answer, why = listens(w, mine)
            if answer != "no":
                return answer, f"process {pid} also holds it: {why}"
    return "no", ""


def _newer_copy(s: Server, servers: list[Server],
                cwd_of: Callable[[int], str | None]) -> Server | None:
    """A later copy of `s` (same argv, cwd, config entries) its host listens to."""
    def entries(x: Server) -> set[tuple[str, str]]:
        return {(c.get("host") or "", c.get("name") or "") for c in x.config}

    for o in servers:
        if o is s or o.parent.get("pid") != s.parent.get("pid") \
                or o.listening.get("answer") != "yes" or o.ident.start <= s.ident.start:
            continue
        if o.command == s.command and cwd_of(o.pid) == cwd_of(s.pid) \
                and entries(o) == entries(s):
            return o
    return None
