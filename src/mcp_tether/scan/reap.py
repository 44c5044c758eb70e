"""Ending leaked servers: which to end (by strength of evidence) and ending them safely.

Guarantees:
- `plan()` proposes only leaked stdio processes: `state` "leaked", the verdict of
  `rules.judge` that `ps` shows (launcher gone AND the channel's client side gone, no
  far end held by a live process). By default only those identified as MCP servers
  (config, host, package SDK); `include={"guess"}` adds MCP-looking names,
  `include={"stdio"}` every leaked stdio process. Never proposed, whatever `include`: a
  host, an `unknown` (a far end not visible), a process whose input still has a live
  writer or whose output a live reader (not leaked), one younger than `min_age`, one
  matching an `allow` pattern. Every such process left out comes back with the reason.
- Each chosen process is pinned (`proc.pin`: a pidfd held from identification to the
  last signal) and re-identified right after pinning: same start time, same parent, and
  the same channel descriptor still open. A pid reused within one clock tick therefore
  fails the check and is never signalled.
- Each tree climbs the ladder (`ladder.run_ladder`; no stdin to close, its client is
  gone): SIGTERM, grace, SIGKILL. A group signal is sent only when every process in the
  group is one of the tree's own identified members; otherwise member by member.
- A process that exits between the scan and the signal is `gone`, not an error.
- An abandoned server (`scan.abandoned`: its live host holds its channel and waits on
  none of it now) is never proposed, whatever `include`: that is what the host could do,
  and an idle synchronous or on-demand host looks the same. `include={"abandoned"}` is
  still accepted (old service files keep starting) and ends nothing.
- A superseded copy (`scan.superseded`: a newer copy of the same server under the same
  live host was used while this one had no traffic) is proposed only with
  `include={"superseded"}`, never by default, never when the answer was `unknown`, and
  only once it was seen idle for `superseded_min_age` seconds. Right before its ladder
  the host is looked at again (`superseded.recheck`: same host, the newer copy still
  there, still no traffic on this one); if not, it is `left`, unsignalled. The ladder
  signals the copy's tree only: the host and its fds are never touched.
"""

from __future__ import annotations

import fnmatch
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp_tether import ladder
from mcp_tether.proc import ExitWaiter, Pinned, ProcessId, pin, signal_group, snapshot, table
from mcp_tether.proc.signals import DENIED, GONE, SENT
from mcp_tether.proc.tree import children_map
from mcp_tether.scan import superseded
from mcp_tether.scan.model import HELD, READER_HELD, WRITER_HELD, ScanResult, Server
from mcp_tether.scan.superseded import SUPERSEDED_MIN_AGE

if TYPE_CHECKING:
    from mcp_tether.scan.record import ReapRow

__all__ = ["INCLUDE_CHOICES", "REAP_MIN_AGE", "SUPERSEDED_MIN_AGE", "Skipped", "Plan", "plan",
           "ReapOutcome", "REAP_OUTCOMES", "reap_servers", "Pins", "check_duration",
           "ENDS_NOTHING", "ABANDONED_ENDS_NOTHING"]

INCLUDE_CHOICES = ("guess", "stdio", "superseded", "abandoned")
# Accepted so service files written for it keep starting; they end nothing any more.
ENDS_NOTHING = frozenset({"abandoned"})
ABANDONED_ENDS_NOTHING = (
    "--include abandoned ends nothing any more: a host that waits on none of a server's "
    "pipes may just be idle; --include superseded ends copies a live host replaced with "
    "a newer one it uses (docs/leaked-servers.md)")
# What became of a tree `reap` acted on: ended (by our signal), gone (exited before we
# signalled), denied (not ours to signal), survived (SIGKILL did not end it), left (a
# superseded copy that its host used again, or that changed, right before the signal).
REAP_OUTCOMES = ("ended", "gone", "denied", "survived", "left")
# A one-off `reap`'s minimum age (`--min-age`): what it proposes is already proven leaked,
# and the prompt (or `--yes`) is the user's own decision. `reap --watch` waits 60 s.
REAP_MIN_AGE = 0.0


def check_duration(value: float, name: str) -> float:
    """A finite, non-negative number of seconds, else ValueError with a one-line reason."""
    if value - value != 0 or value < 0:  # NaN and +-inf fail the first test
        raise ValueError(f"{name} must be a finite number of seconds >= 0, not {value!r}")
    return value


@dataclass
class Skipped:
    server: Server
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.server.pid, "start": self.server.ident.start,
                "command": self.server.shown, "evidence": self.server.evidence,
                "reason": self.reason}


@dataclass
class Plan:
    chosen: list[Server]
    skipped: list[Skipped]


def _allowed(s: Server, allow: list[str]) -> str | None:
    names = [" ".join(s.shown), " ".join(s.command)]
    names += [n for n in (s.what.package, s.what.script) if n]
    names += [c["name"] for c in s.config]
    for pat in allow:
        if any(fnmatch.fnmatchcase(n, pat) or fnmatch.fnmatchcase(n, f"*{pat}*")
               for n in names):
            return pat
    return None


def plan(result: ScanResult, include: set[str] | frozenset[str] = frozenset(),
         min_age: float = 0.0, allow: list[str] | None = None,
         superseded_min_age: float = SUPERSEDED_MIN_AGE) -> Plan:
    """Which processes `reap` would end, and why each other one whose launcher is gone
    (or that is superseded or abandoned) is left. Only `state` "leaked" (`rules.judge`'s
    verdict, what `ps` shows) is chosen by default; "superseded" ones too with
    `include={"superseded"}`, after `superseded_min_age` seconds of observed idleness;
    "abandoned" ones never. The rest of the choice is the caller's policy."""
    chosen: list[Server] = []
    skipped: list[Skipped] = []
    leaked = {m.ident.pid for s in result.leaked for m in s.members}
    for s in result.servers:
        if s.is_superseded:
            why = _why_not_superseded(s, include, superseded_min_age, allow or [])
        elif s.abandoned:
            why = ("abandoned is a hint only: its host waits on none of its pipes now, as an "
                   "idle host may; reap ends it only once superseded (--include superseded)")
        elif s.leaked or s.unknown or set(s.evidence) & set(HELD):
            why = _why_not(s, include, min_age, allow or [], leaked)
        else:
            continue  # live, launcher alive: nothing to explain
        if why is None:
            chosen.append(s)
        else:
            skipped.append(Skipped(s, why))
    return Plan(chosen, skipped)


def _why_not_superseded(s: Server, include: set[str] | frozenset[str], min_age: float,
                        allow: list[str]) -> str | None:
    if s.superseded.get("answer") != "yes":
        return "not superseded"
    if "superseded" not in include:
        return "superseded (a newer copy under its live host is used, this one is not): " \
               "--include superseded to end it"
    pat = _allowed(s, allow)
    if pat is not None:
        return f"allowed by --allow {pat!r}"
    idle = float(s.superseded.get("idle_seconds") or 0.0)
    if idle < min_age:
        return (f"superseded but idle for less than --min-age ({idle:.0f}s observed of "
                f"{min_age:g}s; a later `reap`, or `reap --watch`, counts on from here)")
    if s.identified or "stdio" in include or (s.guess and "guess" in include):
        return None
    return "not identified as an MCP server (no config, host, package or SDK): " \
           "--include stdio to end it"


def _why_not(s: Server, include: set[str] | frozenset[str], min_age: float,
             allow: list[str], leaked: set[int]) -> str | None:
    if s.unknown:
        return "unknown: a far end of its channel is not visible from here " \
               "(another pid namespace, a container engine, an unreadable process)"
    if not s.leaked:
        for e, holders, what in ((WRITER_HELD, s.writers, "input still has a live writer"),
                                 (READER_HELD, s.readers, "output still has a live reader")):
            if e in s.evidence:
                held = ", ".join(f"{w['pid']} ({w['name']})" for w in holders
                                 if w["pid"] not in leaked) or "a process"
                return f"not leaked: its {what}: {held}"
        return "not leaked"
    pat = _allowed(s, allow)
    if pat is not None:
        return f"allowed by --allow {pat!r}"
    if s.age_seconds < min_age:
        return f"younger than --min-age ({s.age_seconds:.0f}s < {min_age:g}s)"
    if s.identified or "stdio" in include or (s.guess and "guess" in include):
        return None
    if s.guess:
        return "named like an MCP server only: --include guess to end it"
    return "not identified as an MCP server (no config, host, package or SDK): " \
           "--include stdio to end it"


@dataclass
class ReapOutcome:
    server: Server
    outcome: str  # one of REAP_OUTCOMES
    ended_by: str | None  # sigterm | sigkill | None
    reclaimed_bytes: int
    signals: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> ReapRow:
        return {"pid": self.server.pid, "start": self.server.ident.start,
                "command": self.server.shown, "evidence": self.server.evidence,
                "what": self.server.what.to_dict(), "outcome": self.outcome,
                "ended_by": self.ended_by, "reclaimed_bytes": self.reclaimed_bytes,
                "signals": self.signals}


def _still_it(s: Server, ident: ProcessId, ppid: int, pinned: Pinned | None) -> bool:
    """After pinning: same parent, and the root still holds the scanned channel."""
    rec = table.record(ident.pid)
    if pinned is None or rec is None or rec.start != ident.start or rec.ppid != ppid:
        return False
    if ident != s.ident or not s.channels:
        return True
    ends = table.fd_ends(ident.pid)
    if ends is None:
        return table.CHANNEL_DETAIL is False
    return any(e.holds(c.end) for e in ends.values() for c in s.channels)


class _TreeTarget:
    """A server tree as a ladder target: pinned members, group signal when safe."""

    def __init__(self, server: Server) -> None:
        self.pgid = server.members[0].pgid if server.members else -1
        self.members: dict[ProcessId, int] = {}
        self.pins: dict[ProcessId, Pinned] = {}
        for m in server.members:
            p = pin(m.ident)
            if p is not None and _still_it(server, m.ident, m.ppid, p):
                self.members[m.ident] = m.rss_bytes
                self.pins[m.ident] = p
            elif p is not None:
                p.close()
        self.waiter = ExitWaiter()
        self.signalled: set[ProcessId] = set()
        self.log: list[dict[str, Any]] = []

    def close_stdin(self) -> None:  # its client is gone: nobody holds a stdin to close
        pass

    def close(self) -> None:
        self.waiter.close()
        for p in self.pins.values():
            p.close()

    def _live(self) -> tuple[dict[int, Any], list[ProcessId]]:
        snap = snapshot()

        def same(i: ProcessId) -> bool:
            p = snap.get(i.pid)
            return p is not None and not p.exited and p.start == i.start

        live = [i for i in self.pins if same(i)]
        # Children forked since the scan by a member we still hold are the tree's too:
        # pinned as soon as they are seen, by the same identity check.
        kids = children_map(snap)
        stack = [i.pid for i in live]
        while stack:
            for c in kids.get(stack.pop(), ()):
                if not c.exited and c.ident not in self.pins:
                    p = pin(c.ident)
                    if p is None:
                        continue
                    self.members[c.ident] = 0
                    self.pins[c.ident] = p
                    live.append(c.ident)
                    stack.append(c.pid)
        return snap, live

    def signal(self, sig: int) -> str:
        snap, live = self._live()
        if not live:
            return GONE
        sent = denied = False
        done: set[ProcessId] = set()
        in_group = [i for i in live if snap[i.pid].pgid == self.pgid]
        group = {p.pid for p in snap.values() if p.pgid == self.pgid and not p.exited}
        # A group signal only when every process in the group is one of ours: a leaked server
        # may still sit in its dead client's group next to processes we must not touch.
        if in_group and group <= {i.pid for i in live}:
            r = signal_group(self.pgid, sig, in_group)
            self.log.append({"signal": sig, "group": self.pgid, "result": r})
            if r == SENT:
                sent = True
                done.update(in_group)
            denied |= r == DENIED
        for ident in live:
            if ident in done:
                continue
            r = self.pins[ident].signal(sig)
            self.log.append({"signal": sig, "pid": ident.pid, "start": ident.start, "result": r})
            if r == SENT:
                sent = True
                done.add(ident)
            denied |= r == DENIED
        for ident in done:  # only what we really signalled counts as ended by us
            self.signalled.add(ident)
            self.waiter.add(ident)
        if sent:
            return SENT
        return DENIED if denied else GONE

    def wait(self, timeout: float) -> float | None:
        deadline = time.monotonic() + timeout
        while self.waiter.pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.waiter.wait(remaining)
        if not self.signalled:  # nothing was live to signal: check now
            _, live = self._live()
            if live:
                return None
        exits = self.waiter.exited.values()
        return max(exits) if exits else time.monotonic()

    def reclaimed(self) -> int:
        gone = self.waiter.exited
        return sum(self.members.get(i, 0) for i in self.signalled if i in gone)


class Pins:
    """The chosen trees pinned right after the scan, held until the last signal.

    Made before a prompt (which may take minutes), so what is signalled after "yes" is
    exactly what was identified, not whatever holds those pids by then.
    """

    def __init__(self, servers: list[Server]) -> None:
        self.targets = [(s, _TreeTarget(s)) for s in servers]

    def close(self) -> None:
        for _, target in self.targets:
            target.close()

    def __enter__(self) -> Pins:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def reap_servers(servers: list[Server], grace: float = ladder.TERM_GRACE,
                 pins: Pins | None = None) -> list[ReapOutcome]:
    """End each server tree: SIGTERM, `grace`, SIGKILL; identity pinned throughout.

    `pins`: the trees as pinned by the caller right after the scan (else pinned now).
    """
    check_duration(grace, "--grace")
    own = pins is None
    held = Pins(servers) if pins is None else pins
    out = []
    try:
        for s, target in held.targets:
            if not target.pins:
                out.append(ReapOutcome(s, "gone", None, 0, target.log))
                continue
            if not s.leaked and not (s.is_superseded and superseded.recheck(s)):
                # its host used it again, or changed: only a leak or a copy still
                # superseded right now is ever signalled
                out.append(ReapOutcome(s, "left", None, 0, target.log))
                continue
            res = ladder.run_ladder(target, close_stdin=False, grace=0.0, term_grace=grace)
            first = res.rungs[0].outcome if res.rungs else None
            if res.ended_by == "self" or (first == GONE and not target.signalled):
                outcome, by = "gone", None
            elif res.rungs and res.rungs[-1].outcome == DENIED:
                outcome, by = "denied", None
            elif res.survived:
                outcome, by = "survived", None
            else:
                outcome, by = "ended", res.ended_by
            out.append(ReapOutcome(s, outcome, by, target.reclaimed(), target.log))
    finally:
        if own:
            held.close()
    return out
