"""Copies a live host superseded: it started a newer copy of the same server, uses that
one, sent the old one nothing since, and has one client for that server.

A host that reconnects (a config edit, a retry, an SDK client dropped without `close()`)
starts a new copy and may forget the old one with its pipes still open. Nothing in the
kernel says the host will never use the old copy again; what it shows is what the host
DID: which copy it sent requests to. And a host that runs one copy per client (Codex's
agents, a gateway's connections) does the same while one client merely thinks: so the
host's habit (`habits`) decides whether "a newer copy is used" means anything at all.

Guarantees:
- "superseded" needs all of: a newer copy (later start time) of the same server under
  the same live host (the host's pid AND start time), host and copies in our own pid
  namespace; the same server is the same argv (flags and operands), cwd and WHOLE
  environment (a variable the host set for one copy makes them different servers), or
  the same config entry across an edit (this copy matched the entry exactly as written
  in an earlier scan and no longer does, the newer copy does now: `Samples.entries`); a
  host habit that is not per-client (`habits.judge`: measured, a listening socket, or
  seen using copies side by side make it per-client, and the answer `unknown`); this
  copy's tree had no traffic (rchar, wchar, syscr, syscw unchanged) over the observed
  idle time; the newer copy read something (rchar or syscr moved) between at least
  `USED_LOOKS` pairs of looks in that time, after it was first seen settled.
- Settled: its start-up is over, seen at a look where it waited on its protocol input
  (a thread blocked reading it, or an epoll set watching it while a thread waits) or
  with the same counters on two looks in a row. What a copy reads before it settled may
  be its own start-up (loading its modules), which the older copy, the same program,
  did before it went idle. A host that calls its newer copy every 2 s still supersedes:
  between calls the copy waits on its input.
- One pair of looks is not enough: a host that uses both copies for each request, one
  right after the other, can be looked at between its two calls.
- A host seen using an older copy after a newer copy of it had settled (the older one's
  counters moved between two looks both after that, and at least `SWITCH_GRACE` after
  the newer copy's start: a call under way at the switch is not side by side) uses
  copies side by side: that is kept per host and server (`Samples.mark_side_by_side`)
  and makes it per-client.
- Never the newest copy of its server; never a copy with traffic. Where counters, the
  environment, the host or its sockets cannot be read, or a process is in another pid
  namespace, the answer is "unknown", which is never superseded. Every answer that is
  not "yes" after a newer copy of the same server was found says which condition is
  missing (`missing`, one of `MISSING`).
- Reads only: nothing here signals. `recheck` looks again right before `reap` signals.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_tether.proc import table
from mcp_tether.scan import abandoned, habits
from mcp_tether.scan.match import entry_key
from mcp_tether.scan.model import NEWER_COPY_USED, NO_TRAFFIC
from mcp_tether.scan.samples import Counters, Samples, default_path

if TYPE_CHECKING:
    from mcp_tether.proc import ProcessId, ProcRecord
    from mcp_tether.scan.model import Server

__all__ = ["SUPERSEDED_MIN_AGE", "USED_LOOKS", "MISSING", "Samples", "assess", "recheck",
           "counters", "waiting", "server_key", "default_path"]

# `reap --include superseded`'s default `--min-age`: seconds of observed idleness while a
# newer copy was used. A host may go back to an older copy after a long pause (a parent
# session's copy while a subagent works on the newer one for half an hour): an hour
# makes that rare; a shorter one ends such a copy and fails the parent's next call.
SUPERSEDED_MIN_AGE = 3600.0
USED_LOOKS = 2  # the newer copy read between this many pairs of looks (docstring)
# The host's switch to a newer copy: a call it had under way when it started the newer
# copy may still land on the older one (Claude Code 2.1.332, /mcp Reconnect during a call:
# the older copy answered 0.15 s after the newer one's initialize, and in 4 of 10
# reconnects of a 30-minute soak a read of it fell after the newer copy was settled).
# Reads of the older copy this soon after the newer copy's start are not "side by side".
SWITCH_GRACE = 10.0
# What a copy that looks forgotten lacks to be superseded (`superseded.missing`).
MISSING = (
    "same-server",  # the newer copy is another server (argv, cwd or environment differ)
    "readable",  # counters, environment or host cannot be read from here
    "pid-namespace",  # the host or a copy lives in another pid namespace
    "host-habit",  # its host runs a copy per client, or whether it does cannot be read
    "settled",  # no newer copy was seen settled
    "idle",  # this copy had traffic since the last look
    "used",  # no newer copy was seen reading between USED_LOOKS pairs of looks
)

_Seen = dict["ProcessId", tuple[int, "ProcRecord | None", Counters | None]]


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


def waiting(s: Server) -> bool:
    """Is a process of the tree waiting on the server's protocol input right now?"""
    ins = {c.end for c in s.channels if c.side == "in"}
    for m in s.members if ins else ():
        w = abandoned.look(m.ident.pid)
        far = {fd: (e, table.fd_file(m.ident.pid, fd))
               for fd, e in (w.links or {}).items() if e.id in ins or e.also in ins}
        if far and abandoned.waits_on(w, far):
            return True
    return False


def server_key(s: Server, cwd: str | None) -> str:
    """A server by what it runs (its argv and cwd), for the hosts seen side by side."""
    doc = json.dumps([s.command, cwd], ensure_ascii=False)
    return hashlib.sha256(doc.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _entry_text(key: str) -> str:
    host, name, path = (key.split("\0") + ["", "", ""])[:3]
    return f"{host or os.path.basename(path) or 'config'}/{name}"


class _Judge:
    """One assessment: the looks just taken, environments and habits read once each."""

    def __init__(self, servers: list[Server], samples: Samples, seen: _Seen, now: float,
                 cwd_of: Callable[[int], str | None], fingerprints: dict[str, str]) -> None:
        self.servers, self.samples, self.seen, self.now = servers, samples, seen, now
        self.cwd_of, self.fingerprints = cwd_of, fingerprints
        self.ours = table.pid_namespace(os.getpid())
        self._env: dict[int, dict[str, str] | None] = {}
        self._habits: dict[int, habits.Habit] = {}

    def env(self, pid: int) -> dict[str, str] | None:
        if pid not in self._env:
            self._env[pid] = table.environ(pid)
        return self._env[pid]

    def host_of(self, s: Server) -> tuple[int, float] | None:
        """The host a looked-at copy runs under: (pid, start time), None if unreadable."""
        host, rec, _ = self.seen[s.ident]
        return (host, rec.start) if rec is not None else None

    def newer(self, s: Server) -> list[Server]:
        """Newer copies of anything under the same host (pid and start time)."""
        mine = self.host_of(s)
        return [o for o in self.servers if o is not s and o.ident in self.seen
                and mine is not None and self.host_of(o) == mine
                and o.ident.start > s.ident.start]

    def edited(self, old: Server, new: Server) -> str | None:
        """The config entry `old` matched exactly in an earlier scan, since edited, that
        `new` matches exactly now and `old` does not: its key."""
        for key, was in sorted(self.samples.entries(old.ident).items()):
            now = self.fingerprints.get(key)
            if was is not None and now is not None and now != was \
                    and new.exact.get(key) == now and old.exact.get(key) != now:
                return key
        return None

    def same(self, old: Server, new: Server) -> tuple[str, str]:
        """(yes | no | unknown, how or why not): is `new` a copy of the same server?"""
        key = self.edited(old, new)
        if key is not None:
            return "yes", (f"the same config entry {_entry_text(key)}, edited: this copy "
                           "matched it exactly in an earlier scan and no longer does; the "
                           "newer one does")
        if old.command != new.command or self.cwd_of(old.pid) != self.cwd_of(new.pid):
            return "no", ""
        e_old, e_new = self.env(old.pid), self.env(new.pid)
        if e_old is None or e_new is None:
            return "unknown", "its environment cannot be read from here"
        if e_old != e_new:
            names = sorted(k for k in e_old.keys() | e_new.keys() if e_old.get(k) != e_new.get(k))
            more = f" and {len(names) - 3} more" if len(names) > 3 else ""
            verb = "differs" if len(names) == 1 else "differ"
            return "no", (f"newer copy pid {new.pid} runs the same command in the same "
                          f"folder with another environment: {', '.join(names[:3])}{more} "
                          f"{verb}, so it is another server")
        return "yes", "the same command, cwd and environment"

    def habit(self, s: Server, copies: list[Server]) -> habits.Habit:
        host, rec, _ = self.seen[s.ident]
        keys = {server_key(x, self.cwd_of(x.pid)) for x in (s, *copies)}
        observed = self.samples.side_by_side(rec.ident, keys) if rec is not None else None
        if observed is not None or host not in self._habits:
            got = habits.judge(rec, table.listening(host), observed)
            if observed is not None:
                return got
            self._habits[host] = got
        return self._habits[host]

    def side_by_side(self) -> None:
        """Record each host seen using an older copy after a newer copy of the same
        server had settled (the older one's counters moved between two looks both
        after that)."""
        for s in self.servers:
            if s.ident not in self.seen or self.seen[s.ident][1] is None:
                continue
            for o in self.newer(s):
                settled = self.samples.settled(o.ident)
                # Not within SWITCH_GRACE of the newer copy's start: a call already under
                # way when the host started it may still land on the older copy.
                after = None if settled is None else max(
                    settled, self.now - o.age_seconds + SWITCH_GRACE)
                when = self.samples.moved_after(s.ident, after) if after is not None \
                    else None
                if when is None or self.same(s, o)[0] != "yes":
                    continue
                rec = self.seen[s.ident][1]
                if rec is None:
                    continue
                ago = max(0.0, self.now - when)
                self.samples.mark_side_by_side(
                    rec.ident, server_key(s, self.cwd_of(s.pid)), when,
                    f"it used pid {s.pid} {ago:.0f}s ago, after newer copy pid {o.pid} of "
                    "the same server had settled: it uses copies side by side")

    def judge(self, s: Server) -> dict[str, Any]:
        host, rec, io = self.seen[s.ident]
        if rec is None:
            return _no("unknown", "readable", "its host cannot be read from here")
        newer = self.newer(s)
        if not newer:
            return {"answer": "no", "reason": "no newer copy of it under its host"}
        copies: list[tuple[Server, str]] = []
        unknown = differs = ""
        for o in newer:
            same, how = self.same(s, o)
            if same == "yes":
                copies.append((o, how))
            elif same == "unknown":
                unknown = how
            elif how:
                differs = how
        if not copies:
            if unknown:
                return _no("unknown", "readable", unknown)
            if differs:
                return _no("no", "same-server", differs)
            return {"answer": "no", "reason": "no newer copy of the same server under its host"}
        spaces = {table.pid_namespace(p) for p in (host, s.pid, *(o.pid for o, _ in copies))}
        if self.ours is None or spaces != {self.ours}:
            return _no("unknown", "pid-namespace", "its host or a copy runs in another pid "
                       "namespace (or ours cannot be read): its pids are not ours to compare")
        if io is None:
            return _no("unknown", "readable", "its read/write counters cannot be read from "
                       "here (another user's process, or a backend without them)")
        unread = next((o for o, _ in copies if self.seen[o.ident][2] is None), None)
        if unread is not None:
            return _no("unknown", "readable", f"the read/write counters of newer copy pid "
                       f"{unread.pid} cannot be read from here")
        habit = self.habit(s, [o for o, _ in copies])
        newest = max(copies, key=lambda c: c[0].ident.start)[0]
        since = self.samples.idle_since(s.ident, io)
        idle = max(0.0, self.now - since) if since is not None else 0.0
        base = {"idle_seconds": round(idle, 1), "counters": list(io),
                "newer_copy": _ref(newest), "habit": habit.to_dict()}
        if habit.kind == "per-client":
            return _no("unknown", "host-habit", f"its host runs a copy per client "
                       f"({habit.evidence}): an idle copy may be an idle client's", base)
        if habit.kind == "unreadable":
            return _no("unknown", "host-habit", f"its host's habit is {habit.evidence}", base)
        settled = [(o, how) for o, how in copies if self.samples.settled(o.ident) is not None]
        if not settled:
            return _no("no", "settled", f"newer copy pid {newest.pid} was never seen settled "
                       "(waiting on its input, or quiet across two looks): what it read may "
                       "be its own start-up", base)
        if since is None or since >= self.now:
            return _no("no", "idle", "this copy had traffic since the last look", base)
        reads = {o.ident: self.samples.reads_since(o.ident, since) for o, _ in settled}
        used = [(o, how) for o, how in settled if reads[o.ident] >= USED_LOOKS]
        if not used:
            best = max(settled, key=lambda c: reads[c[0].ident])[0]
            return _no("no", "used", f"newer copy pid {best.pid} was seen reading between "
                       f"{reads[best.ident]} of the {USED_LOOKS} pairs of looks needed, once "
                       f"settled, in the {idle:.0f}s this one was seen idle",
                       {**base, "newer_copy": _ref(best)})
        o, how = used[-1]
        key = self.edited(s, o)
        entry = next((c for c in o.config if entry_key(c) == key), next(iter(o.config), None))
        return {"answer": "yes", **base, "newer_copy": _ref(o), "same": how,
                "entry": dict(entry) if entry is not None else None, "missing": None,
                "reason": (f"newer copy pid {o.pid} ({how}) under the same host read "
                           f"requests between {reads[o.ident]} pairs of looks while this one "
                           f"had no traffic for {idle:.0f}s (observed)")}


def _no(answer: str, missing: str, reason: str,
        extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"answer": answer, **(extra or {}), "missing": missing, "reason": reason}


def _ref(o: Server) -> dict[str, Any]:
    return {"pid": o.pid, "start": o.ident.start}


def assess(servers: list[Server], samples: Samples, cwd_of: Callable[[int], str | None],
           fingerprints: dict[str, str] | None = None) -> None:
    """Look at every server under a live launcher (its counters, whether it waits on its
    input, the entries it matches), then fill `superseded` of each and add the evidence
    where it is superseded (module docstring). `fingerprints`: each config entry's
    fingerprint now (key -> `Matcher.fingerprint`), for edited entries."""
    now = samples.clock()
    seen: _Seen = {}
    for s in servers:
        host = int(s.parent.get("pid") or 0)
        if s.state in ("leaked", "unknown") or s.parent.get("role") not in ("host", "launcher") \
                or host < 1:
            continue
        io = counters(s)
        settled = samples.settled(s.ident) is not None
        entries: dict[str, str | None] = {entry_key(c): None for c in s.config}
        entries.update(s.exact)
        samples.observe(s.ident, now, io, entries, age=s.age_seconds,
                        waiting=not settled and io is not None and waiting(s))
        seen[s.ident] = (host, table.record(host), io)
    judge = _Judge(servers, samples, seen, now, cwd_of, fingerprints or {})
    judge.side_by_side()
    for s in servers:
        if s.ident not in seen:
            continue
        host, rec, _ = seen[s.ident]
        s.superseded = judge.judge(s)
        s.superseded.update(host=host, host_start=rec.start if rec is not None else None)
        if s.superseded["answer"] == "yes":
            s.evidence += [NEWER_COPY_USED, NO_TRAFFIC]


def recheck(s: Server) -> bool:
    """Right before a signal: the same host, the newer copy still there, still no traffic
    on this copy since the scan's reading of its counters, and a host judged shared or
    unmeasured still holding no listening socket."""
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
    if habits.judge(rec, table.listening(host), None).kind in ("per-client", "unreadable"):
        return False  # a client may connect from elsewhere now, or we cannot tell
    return counters(s) == tuple(info.get("counters") or ())
