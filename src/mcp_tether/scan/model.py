"""The scan's result types: a server tree, its channels, what it is, and the totals.

Guarantees:
- One vocabulary for evidence (the constants below) used by `ps`, `reap` and the JSON.
- The JSON never contradicts itself: `parent.role` says whether the parent is the
  launcher, a host, or an adopter (init or a subreaper that took the process in), and
  `parent-gone` appears exactly when the role is "adopter"; `host-gone` never appears on
  a server whose state is "live"; a host is never a server; the state is "unknown"
  exactly when `far-end-unseen` is among the evidence, and "unknown" is never leaked.
- One judgement: `state` is `rules.judge`'s verdict, read from the evidence, and it is
  what `reap` acts on: a process whose channel still has a live holder outside its tree
  (`writer-held`, `reader-held`) is not leaked, so `reap` never proposes it.
- The state is "superseded" exactly when `newer-copy-used` is among the evidence
  (`scan.superseded`: a newer copy of the same server under the same live host read
  requests while this one had none, observed). "superseded" is never leaked, unknown or
  the newest copy of its server.
- The state is "abandoned" exactly when `host-not-listening` is among the evidence and
  it is not superseded (`scan.abandoned`: its launcher holds the far ends of its channel
  but waits on none of them now, which an idle host can look like too): a hint, which
  `reap` never acts on. "abandoned" is never leaked and never unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcp_tether.proc.identity import ProcessId, ProcRecord

if TYPE_CHECKING:
    from typing import Any

    from mcp_tether.scan.record import (
        ChannelRow,
        MemberRow,
        Parent,
        ScanDocument,
        ServerRow,
        Totals,
        WhatRow,
    )

__all__ = [
    "PARENT_GONE", "STDIN_NO_WRITER", "STDOUT_NO_READER", "WRITER_HELD", "READER_HELD",
    "HOST_GONE", "CHANNEL_GONE", "HELD", "FAR_END_UNSEEN", "HOST_NOT_LISTENING",
    "NEWER_COPY", "IO_IDLE", "NEWER_COPY_USED", "NO_TRAFFIC", "STATES", "EVIDENCE", "Channel",
    "What", "Member", "Server", "ScanResult",
]

PARENT_GONE = "parent-gone"  # its launcher is gone: adopted by init or a subreaper
STDIN_NO_WRITER = "stdin-no-writer"  # every read side of its protocol input: no writer
STDOUT_NO_READER = "stdout-no-reader"  # every write side of its protocol output: no reader
# Its launcher is gone and a side of its channel lost its client, yet a live process
# outside its tree (and not itself leaked) holds the other end of its input / of its
# output: the channel is not lost, so it is not leaked (`rules.judge`).
WRITER_HELD = "writer-held"
READER_HELD = "reader-held"
HELD = (WRITER_HELD, READER_HELD)
HOST_GONE = "host-gone"  # leaked, and every config it matches belongs to a stopped host
# A side of its channel still has a peer this scan cannot see (another pid namespace,
# an unreadable process, a container engine's shim): the state is "unknown".
FAR_END_UNSEEN = "far-end-unseen"
CHANNEL_GONE = (STDIN_NO_WRITER, STDOUT_NO_READER)
# Abandoned (`scan.abandoned`): the host that holds the far ends of its output watches
# them in none of its epoll sets and has no thread blocked reading them (required) ...
HOST_NOT_LISTENING = "host-not-listening"
# ... and, for confidence: a newer copy (same argv, cwd, config entry) under the same
# host that the host does listen to; its read/write counters unchanged meanwhile.
NEWER_COPY = "newer-copy-listened"
IO_IDLE = "io-unchanged"
# Superseded (`scan.superseded`): a newer copy of the same server under the same live
# host read requests over a time in which this copy's read/write counters did not move.
NEWER_COPY_USED = "newer-copy-used"
NO_TRAFFIC = "no-traffic"

# Every state a server can be in (`Server.state`) and every evidence line `find` and
# `abandoned` write: what a consumer that must name them all (the metrics) reads.
STATES = ("leaked", "superseded", "abandoned", "live", "unknown")
EVIDENCE = (PARENT_GONE, STDIN_NO_WRITER, STDOUT_NO_READER, WRITER_HELD, READER_HELD,
            HOST_GONE, FAR_END_UNSEEN, HOST_NOT_LISTENING, NEWER_COPY, IO_IDLE,
            NEWER_COPY_USED, NO_TRAFFIC)


@dataclass
class Channel:
    """One descriptor of the protocol channel and whether its other side is still there."""

    fd: int
    kind: str  # pipe | socket
    side: str  # in (what the process reads) | out (what it writes)
    end: str  # the end the fd is open on (`proc.table.End.id`: opaque, the backend's)
    peer: str  # yes | no | unknown: a writer (in) / a reader (out) left
    detail: str = ""
    far: str | None = None  # the far end's id, where the backend can name it
    inode: int | None = None  # the number the OS shows for it (Linux: the inode)

    def to_dict(self) -> ChannelRow:
        return {"fd": self.fd, "kind": self.kind, "side": self.side, "inode": self.inode,
                "end": self.end, "far": self.far, "peer": self.peer, "detail": self.detail}


@dataclass
class What:
    """What a server is, each claim with the file that shows it."""

    runtime: str | None = None  # node | python | None
    package: str | None = None
    version: str | None = None
    sdk: str | None = None  # @modelcontextprotocol/sdk, @modelcontextprotocol/server, mcp...
    sdk_version: str | None = None
    script: str | None = None  # the script or module it runs
    source: list[str] = field(default_factory=list)  # how each claim was made

    @property
    def mcp(self) -> bool:
        return self.sdk is not None

    def to_dict(self) -> WhatRow:
        return {"runtime": self.runtime, "package": self.package, "version": self.version,
                "sdk": self.sdk, "sdk_version": self.sdk_version, "script": self.script,
                "source": list(self.source)}


class Member(ProcRecord):
    """A process of a server's tree: the record the scan read, and its CPU time in seconds
    (the record counts clock ticks, whose length the scan reads once)."""

    __slots__ = ("cpu_seconds",)

    def __init__(self, record: ProcRecord, cpu_seconds: float) -> None:
        for name in ProcRecord.__slots__:  # the reading as it was, lazy fields included
            setattr(self, name, getattr(record, name))
        self.cpu_seconds = cpu_seconds

    def to_dict(self) -> MemberRow:
        return {"pid": self.ident.pid, "start": self.ident.start, "ppid": self.ppid,
                "pgid": self.pgid, "name": self.comm, "command": self.argv,
                "rss_bytes": self.rss_bytes, "cpu_seconds": round(self.cpu_seconds, 2)}


@dataclass
class Server:
    """One stdio server process tree: the root (outermost wrapper) and its descendants."""

    ident: ProcessId
    uid: int | None
    user: str
    age_seconds: float
    command: list[str]  # the root's argv
    shown: list[str]  # the command worth showing (the guarded server, not the guard)
    found_by: list[str]  # evidence | config | host | package | sdk | remembered | guess
    config: list[dict[str, str]]  # matching config entries: host, name, path
    host: str | None  # the live host it runs under, if any
    parent: Parent  # pid, name, role: launcher | host | adopter; the host it is
    channels: list[Channel]
    private_channels: bool  # found past fd 0/1 (an SDK's private copies)
    stdin_kind: str  # what fd 0 is: pipe | socket | null | tty | file | closed | unknown
    evidence: list[str]
    members: list[Member]
    what: What = field(default_factory=What)
    writers: list[dict[str, Any]] = field(default_factory=list)  # holders of its input
    readers: list[dict[str, Any]] = field(default_factory=list)  # other holders of its output
    # Does the live launcher that holds its output's far end read it? (`scan.abandoned`)
    # answer yes | no | unknown | n/a, the host, the reason, the evidence lines.
    listening: dict[str, Any] = field(default_factory=lambda: {"answer": "n/a"})
    # Did its live host supersede it with a newer copy? (`scan.superseded`) answer yes |
    # no | unknown | n/a, the reason, what is missing, the host's habit, and for a yes
    # the newer copy, the idle time seen.
    superseded: dict[str, Any] = field(default_factory=lambda: {"answer": "n/a"})
    # The config entries it runs exactly as written (`Matcher.exactly`): entry key ->
    # the entry's fingerprint; what an edit of the entry is told apart by.
    exact: dict[str, str] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.ident.pid

    @property
    def leaked(self) -> bool:
        ev = set(self.evidence)
        return (PARENT_GONE in ev and bool(ev & set(CHANNEL_GONE))
                and FAR_END_UNSEEN not in ev and not ev & set(HELD))

    @property
    def unknown(self) -> bool:
        return FAR_END_UNSEEN in self.evidence

    @property
    def is_superseded(self) -> bool:
        return NEWER_COPY_USED in self.evidence and not self.unknown and not self.leaked

    @property
    def abandoned(self) -> bool:
        return HOST_NOT_LISTENING in self.evidence and not self.unknown and not self.leaked \
            and not self.is_superseded

    @property
    def state(self) -> str:
        if self.unknown:
            return "unknown"
        if self.leaked:
            return "leaked"
        return "superseded" if self.is_superseded else "abandoned" if self.abandoned else "live"

    @property
    def identified(self) -> bool:
        """Identified as an MCP server by config, host, package or SDK (not by name), or
        remembered: an earlier scan saw this very process (pid and start time) match a
        config entry it no longer matches (the entry was edited since)."""
        return bool(set(self.found_by) & {"config", "host", "sdk", "remembered"}) \
            or self.what.mcp

    @property
    def guess(self) -> bool:
        return not self.identified and "guess" in self.found_by

    @property
    def rss_bytes(self) -> int:
        return sum(m.rss_bytes for m in self.members)

    @property
    def cpu_seconds(self) -> float:
        return sum(m.cpu_seconds for m in self.members)

    @property
    def cpu_percent(self) -> float:
        """Average over its lifetime (no sampling interval: the scan never waits)."""
        return 100.0 * self.cpu_seconds / self.age_seconds if self.age_seconds > 0 else 0.0

    def stdin_writer(self) -> str:
        ins = [c for c in self.channels if c.side == "in"]
        if not ins:
            return "n/a"
        if any(c.peer == "yes" for c in ins):
            return "yes"
        return "no" if all(c.peer == "no" for c in ins) else "unknown"

    def to_dict(self) -> ServerRow:
        ins = [c for c in self.channels if c.side == "in"]
        return {
            "pid": self.pid,
            "start": self.ident.start,
            "state": self.state,
            "evidence": list(self.evidence),
            "mcp": self.identified,
            "guess": self.guess,
            "found_by": list(self.found_by),
            "what": self.what.to_dict(),
            "user": self.user,
            "uid": self.uid,
            "age_seconds": round(self.age_seconds, 1),
            "rss_bytes": self.rss_bytes,
            "cpu_seconds": round(self.cpu_seconds, 2),
            "cpu_percent": round(self.cpu_percent, 2),
            "command": self.command,
            "shown_command": self.shown,
            "config": self.config,
            "host": self.host,
            "parent": self.parent,
            "stdin": {"kind": self.stdin_kind, "writer": self.stdin_writer(),
                      "inode": ins[0].inode if ins else None,
                      "private": self.private_channels},
            "channels": [c.to_dict() for c in self.channels],
            "stdin_writers": self.writers,
            "stdout_readers": self.readers,
            "listening": self.listening,
            "superseded": self.superseded,
            "members": [m.to_dict() for m in self.members],
        }


@dataclass
class ScanResult:
    servers: list[Server]  # leaked first, then live; larger first within each
    scanned: int
    unreadable: int
    hosts_running: list[str]
    config_errors: list[str]
    elapsed: float

    @property
    def leaked(self) -> list[Server]:
        return [s for s in self.servers if s.leaked]


    @property
    def live(self) -> list[Server]:
        return [s for s in self.servers if s.state == "live"]

    @property
    def unknown(self) -> list[Server]:
        return [s for s in self.servers if s.unknown]

    @property
    def abandoned(self) -> list[Server]:
        return [s for s in self.servers if s.abandoned]

    @property
    def superseded(self) -> list[Server]:
        return [s for s in self.servers if s.is_superseded]

    def totals(self) -> Totals:
        leaked = self.leaked
        mcp = [s for s in leaked if s.identified]
        held = sum(s.rss_bytes for s in leaked)
        return {
            "servers": len(self.servers),
            "leaked": len(leaked),
            "leaked_mcp": len(mcp),
            "live": len(self.live),
            "unknown": len(self.unknown),
            "abandoned": len(self.abandoned),
            "abandoned_rss_bytes": sum(s.rss_bytes for s in self.abandoned),
            "superseded": len(self.superseded),
            "superseded_rss_bytes": sum(s.rss_bytes for s in self.superseded),
            "leaked_rss_bytes": held,
            "live_rss_bytes": sum(s.rss_bytes for s in self.live),
            "orphans": len(leaked),  # the same numbers under their earlier names, kept
            # for readers written before `leaked` (docs/leaked-servers.md)
            "orphan_rss_bytes": held,
        }

    def to_dict(self) -> ScanDocument:
        return {
            "servers": [s.to_dict() for s in self.servers],
            "totals": self.totals(),
            "hosts_running": self.hosts_running,
            "config_errors": self.config_errors,
            "scanned": self.scanned,
            "unreadable": self.unreadable,
            "elapsed_seconds": round(self.elapsed, 4),
        }
