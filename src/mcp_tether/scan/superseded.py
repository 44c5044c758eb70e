"""Copies a live host superseded: it started a newer copy of the same server, uses that
one, and sent the old one nothing since.

A host that reconnects (a config edit, a retry, a subagent, an SDK client dropped
without `close()`) starts a new copy and may forget the old one with its pipes still
open. Nothing in the kernel says the host will never use the old copy again; what it
shows is what the host DID: which copy it sent requests to. This module says a copy is
superseded only from that, observed over time.

Guarantees:
- "superseded" needs all of: a newer copy (later start time) of the same server under
  the same live host (the host's pid AND start time); the same server is the same
  argv, cwd and config-set environment (the variables the matched config entries set,
  compared by value; the whole environment when no entry matches), or the same config
  entry across an edit of it (the old copy was seen matching the entry by an earlier
  scan, no longer does, and the newer copy does); the old copy's tree had no traffic
  (its rchar, wchar, syscr, syscw all unchanged) over the observed idle time, while the
  newer copy read something (its rchar or syscr moved) between at least `USED_LOOKS`
  pairs of samples in that time, after it had been seen quiet once (two samples with
  the same counters). One pair is not enough: a host that uses both copies for each
  request, one right after the other, can be sampled between the two, which shows the
  newer one reading once after the older one went quiet; the next request moves the
  older one again. And reads before the newer copy was first seen quiet do not count:
  they may be its own start-up (loading its modules), which the older copy, the same
  program, did before it went idle; once both are settled, what one reads and the
  other does not is what the host sent.
- Never the newest copy of its server; never a copy with traffic; where the counters,
  the environment or the host cannot be read (another user, another pid namespace, the
  portable backend) the answer is "unknown", which is never superseded.
- Idle time is what was observed, never guessed: counters only grow, so a copy is idle
  since the first sample that showed its current counters. Samples live in `Samples`:
  in memory across `reap --watch` rounds, and in a small file under the user's state
  folder keyed by (pid, start time) between one-off runs, so a `reap --include
  superseded` some time after an earlier `ps` acts on the idleness observed since. A
  lost or stale sample only makes the observed idle time shorter.
- The clock is the monotonic one: time spent suspended is not idle time.
- Reads only: nothing here signals. `recheck` looks again right before `reap`
  signals a superseded copy.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_tether import platform
from mcp_tether.proc import table
from mcp_tether.scan.model import NEWER_COPY_USED, NO_TRAFFIC

if TYPE_CHECKING:
    from mcp_tether.proc import ProcessId
    from mcp_tether.scan.model import Server

__all__ = ["SUPERSEDED_MIN_AGE", "Samples", "assess", "recheck", "counters", "default_path"]

# `reap --include superseded`'s default `--min-age`: seconds of observed idleness while a
# newer copy was used. A host may go back to an older copy after a long pause (a parent
# session's copy while a subagent works on the newer one for half an hour): an hour
# makes that rare; a shorter one ends such a copy and fails the parent's next call.
SUPERSEDED_MIN_AGE = 3600.0
MAX_RUNS = 16  # runs of equal counters kept per process (oldest dropped first)
USED_LOOKS = 2  # the newer copy read between this many pairs of samples (docstring)
MAX_PROCESSES = 4096  # processes kept in the file (the oldest-seen dropped first)
FORMAT = 1

Counters = tuple[int, int, int, int]  # rchar, wchar, syscr, syscw: a tree's sums


def counters(s: Server) -> Counters | None:
    """The summed read/write counters of a server's tree; None if any is unreadable."""
    total = [0, 0, 0, 0]
    for m in s.members:
        got = table.io_counters(m.ident.pid)
        if got is None:
            return None
        for i, v in enumerate(got):
            total[i] += v
    return total[0], total[1], total[2], total[3]


def _key(ident: ProcessId) -> str:
    return f"{ident.pid}:{ident.start}"


def default_path() -> str:
    """The samples file: under the user's state folder, one per pid namespace (a pid
    and a start time name a process only within its namespace)."""
    ns = table.pid_namespace(os.getpid())
    return os.path.join(platform.state_home(), "mcp-tether",
                        f"io-samples-{ns if ns is not None else 'unknown'}.json")


class Samples:
    """Observed counters of server trees and the config entries each was seen matching.

    Per process ("pid:start"): `runs`, each [first seen, last seen, rchar, wchar, syscr,
    syscw] for a stretch of equal counters, oldest first; `settled`: the first sample
    of the first stretch seen twice (its start-up was over by then), or None; `entries`:
    the config entries it matched in some scan (what an entry's command was before an
    edit)."""

    def __init__(self, path: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self.clock = clock
        self.procs: dict[str, dict[str, Any]] = {}
        self.unsaved: OSError | None = None  # why the last save() failed, if it did

    @classmethod
    def open(cls, path: str | None = None) -> Samples:
        """Samples kept in `path` (default `default_path()`); a missing, unreadable or
        malformed file starts empty (idleness is then observed from now on)."""
        got = cls(path or default_path())
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            with open(got.path or "", encoding="utf-8") as fh:
                doc = json.load(fh)
            if doc.get("format") == FORMAT:
                got.procs = {str(k): _clean(v) for k, v in doc["processes"].items()}
        return got

    def save(self) -> None:
        """Best effort, atomically (a temporary file, then a rename): a sample that is
        not kept only shortens the idle time a later run observes. Never raises: why a
        save failed (a full disk, a read-only folder) is left in `unsaved`."""
        self.unsaved = None
        if self.path is None:
            return
        try:
            folder = os.path.dirname(self.path)
            os.makedirs(folder, mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".io-samples.", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({"format": FORMAT, "processes": self.procs}, fh)
                os.replace(tmp, self.path)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            self.unsaved = exc

    def observe(self, ident: ProcessId, now: float, io: Counters | None,
                entries: set[str]) -> None:
        rec = self.procs.setdefault(_key(ident), {"runs": [], "entries": [], "settled": None})
        rec["entries"] = sorted(set(rec["entries"]) | entries)
        if io is None:
            return
        runs = rec["runs"]
        if runs and tuple(runs[-1][2:]) == io and runs[-1][1] <= now:
            runs[-1][1] = now
            if rec.get("settled") is None:
                rec["settled"] = runs[-1][0]
        else:
            runs.append([now, now, *io])
            del runs[:-MAX_RUNS]

    def idle_since(self, ident: ProcessId, io: Counters) -> float | None:
        """When its current counters were first seen (None: not sampled)."""
        runs = self.procs.get(_key(ident), {}).get("runs") or []
        return runs[-1][0] if runs and tuple(runs[-1][2:]) == io else None

    def reads_since(self, ident: ProcessId, t0: float) -> int:
        """Between how many pairs of samples, the first taken at or after `t0` and after
        it was first seen quiet (`settled`), did it read (its rchar or syscr grew)?
        Counters only grow: each such pair is a read that surely happened then."""
        rec = self.procs.get(_key(ident), {})
        settled = rec.get("settled")
        if settled is None:
            return 0  # never seen quiet: what it read may be its own start-up
        runs = rec.get("runs") or []
        t0 = max(t0, settled)
        return sum(1 for a, b in zip(runs, runs[1:]) if a[1] >= t0
                   and (a[2], a[4]) != (b[2], b[4]))

    def entries(self, ident: ProcessId) -> set[str]:
        return set(self.procs.get(_key(ident), {}).get("entries") or ())

    def keep(self, alive: set[ProcessId]) -> None:
        """Forget processes that are gone (and the oldest-seen past MAX_PROCESSES)."""
        keys = {_key(i) for i in alive}
        self.procs = {k: v for k, v in self.procs.items() if k in keys}
        if len(self.procs) > MAX_PROCESSES:
            order = sorted(self.procs, key=lambda k: (self.procs[k]["runs"] or [[0, 0]])[-1][1])
            for k in order[: len(self.procs) - MAX_PROCESSES]:
                del self.procs[k]


def _clean(v: Any) -> dict[str, Any]:
    """One process's record from the file, numbers and strings only (else ValueError)."""
    runs = [[float(r[0]), float(r[1]), *(int(x) for x in r[2:6])] for r in v.get("runs", ())
            if len(r) == 6]
    settled = v.get("settled")
    return {"runs": runs[-MAX_RUNS:], "entries": [str(e) for e in v.get("entries", ())],
            "settled": float(settled) if settled is not None else None}


def entry_key(c: dict[str, str]) -> str:
    return "\0".join((c.get("host") or "", c.get("name") or "", c.get("path") or ""))


def _entry_text(key: str) -> str:
    host, name, path = (key.split("\0") + ["", "", ""])[:3]
    return f"{host or os.path.basename(path) or 'config'}/{name}"


def _same_server(old: Server, new: Server, samples: Samples, cwd_of: Callable[[int], str | None],
                 env_keys: Callable[[Server], set[str]]) -> tuple[str, str]:
    """(yes | no | unknown, how): is `new` a copy of the same server as `old`?"""
    now_old = {entry_key(c) for c in old.config}
    now_new = {entry_key(c) for c in new.config}
    edited = sorted((samples.entries(old.ident) - now_old) & now_new)
    if edited:
        return "yes", (f"the same config entry {_entry_text(edited[0])}, edited: this copy "
                       "matched it in an earlier scan and no longer does; the newer one does")
    if old.command != new.command or now_old != now_new:
        return "no", ""
    if cwd_of(old.pid) != cwd_of(new.pid):
        return "no", ""
    keys = env_keys(old) | env_keys(new)
    e_old, e_new = table.environ(old.pid), table.environ(new.pid)
    if e_old is None or e_new is None:
        return "unknown", "its environment cannot be read from here"
    if keys:
        if any(e_old.get(k) != e_new.get(k) for k in keys):
            return "no", ""
        return "yes", f"the same command, cwd and config-set environment ({', '.join(sorted(keys))})"
    if e_old != e_new:
        return "no", ""
    return "yes", "the same command, cwd and environment"


def assess(servers: list[Server], samples: Samples, cwd_of: Callable[[int], str | None],
           env_keys: Callable[[Server], set[str]]) -> None:
    """Sample every server under a live launcher, then fill `superseded` of each and add
    the evidence where a newer copy was used while it had no traffic (module docstring)."""
    now = samples.clock()
    seen: dict[ProcessId, tuple[int, Any, Counters | None]] = {}
    for s in servers:
        host = int(s.parent.get("pid") or 0)
        if s.state in ("leaked", "unknown") or s.parent.get("role") not in ("host", "launcher") \
                or host < 1:
            continue
        rec = table.record(host)
        io = counters(s)
        samples.observe(s.ident, now, io, {entry_key(c) for c in s.config})
        seen[s.ident] = (host, rec.start if rec is not None else None, io)
    for s in servers:
        if s.ident not in seen:
            continue
        host, host_start, io = seen[s.ident]
        s.superseded = _judge(s, servers, seen, samples, now, cwd_of, env_keys)
        s.superseded.update(host=host, host_start=host_start)
        if s.superseded["answer"] == "yes":
            s.evidence += [NEWER_COPY_USED, NO_TRAFFIC]


def _judge(s: Server, servers: list[Server], seen: dict[ProcessId, tuple[int, Any, Counters | None]],
           samples: Samples, now: float, cwd_of: Callable[[int], str | None],
           env_keys: Callable[[Server], set[str]]) -> dict[str, Any]:
    host, host_start, io = seen[s.ident]
    if host_start is None:
        return {"answer": "unknown", "reason": "its host cannot be read from here"}
    newer = [o for o in servers if o is not s and o.ident in seen
             and seen[o.ident][:2] == (host, host_start) and o.ident.start > s.ident.start]
    if not newer:
        return {"answer": "no", "reason": "no newer copy of it under its host"}
    copies: list[tuple[Server, str]] = []
    unknown = ""
    for o in newer:
        same, how = _same_server(s, o, samples, cwd_of, env_keys)
        if same == "yes":
            copies.append((o, how))
        elif same == "unknown":
            unknown = how
    if not copies:
        if unknown:
            return {"answer": "unknown", "reason": unknown}
        return {"answer": "no", "reason": "no newer copy of the same server under its host"}
    if io is None:
        return {"answer": "unknown", "reason": "its read/write counters cannot be read from "
                "here (another user's process, or a backend without them)"}
    since = samples.idle_since(s.ident, io)
    idle = max(0.0, now - since) if since is not None else 0.0
    base = {"idle_seconds": round(idle, 1), "counters": list(io)}
    newest = max(copies, key=lambda c: c[0].ident.start)[0]
    used: list[tuple[Server, str]] = []
    for o, how in copies:
        o_io = seen[o.ident][2]
        if o_io is None:
            return {"answer": "unknown", **base, "reason": f"the read/write counters of "
                    f"newer copy pid {o.pid} cannot be read from here"}
        if since is not None and samples.reads_since(o.ident, since) >= USED_LOOKS:
            used.append((o, how))
    if not used:
        return {"answer": "no", **base, "newer_copy": _ref(newest),
                "reason": f"newer copy pid {newest.pid} was not seen reading between "
                          f"{USED_LOOKS} pairs of looks, once settled, in the {idle:.0f}s "
                          "this one was seen idle"}
    o, how = used[-1]
    # the entry it was edited from, else the newer copy's first
    edited = sorted((samples.entries(s.ident) - {entry_key(c) for c in s.config})
                    & {entry_key(c) for c in o.config})
    entry = next((c for c in o.config if entry_key(c) in edited), next(iter(o.config), None))
    return {"answer": "yes", **base, "newer_copy": _ref(o), "same": how,
            "entry": dict(entry) if entry is not None else None,
            "reason": (f"newer copy pid {o.pid} ({how}) under the same host read requests "
                       f"between {samples.reads_since(o.ident, since or now)} pairs of looks "
                       f"while this one had no traffic for {idle:.0f}s (observed)")}


def _ref(o: Server) -> dict[str, Any]:
    return {"pid": o.pid, "start": o.ident.start}


def recheck(s: Server) -> bool:
    """Right before a signal: the same host, the newer copy still there, and still no
    traffic on this copy since the scan's reading of its counters."""
    info = s.superseded
    host, newer = info.get("host"), info.get("newer_copy") or {}
    if info.get("answer") != "yes" or not isinstance(host, int):
        return False
    rec, me, new = table.record(host), table.record(s.pid), table.record(int(newer.get("pid", 0)))
    if rec is None or rec.start != info.get("host_start"):
        return False  # the host is gone, or its pid is another process's now
    if me is None or me.start != s.ident.start or me.ppid != s.parent.get("pid"):
        return False
    if new is None or new.start != newer.get("start") or new.ppid != host:
        return False  # the copy it was superseded by is gone: it may be the only one now
    return counters(s) == tuple(info.get("counters") or ())
