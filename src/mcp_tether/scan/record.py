"""The scan's records as `ps --json` and `reap --json` print them: a server's row, its
parts, the totals, the document.

`scan.model`'s dataclasses (`Server`, `ScanResult`...) are what the scan works with;
their `to_dict` makes these, which is what crosses to the JSON envelope (`jsonout`), to
the renderings and to readers of saved JSON (docs/leaked-servers.md, docs/json.md).

Guarantees:
- The keys in each type's order are the JSON's: `to_dict` builds them in that order.
- Every key is always there (values may be None where the field says so).
- Types only, the standard library only.
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["ChannelRow", "WhatRow", "MemberRow", "Parent", "StdinRow", "ServerRow",
           "Totals", "ScanDocument", "ReapRow"]


class ChannelRow(TypedDict):
    """One descriptor of the protocol channel (`model.Channel`)."""

    fd: int
    kind: str  # pipe | socket
    side: str  # in (what the process reads) | out (what it writes)
    inode: int | None  # the number the OS shows for it (Linux: the inode)
    end: str  # the end the fd is open on: opaque, the backend's
    far: str | None  # the far end's id, where the backend can name it
    peer: str  # yes | no | unknown: a writer (in) / a reader (out) is left
    detail: str


class WhatRow(TypedDict):
    """What a server is (`model.What`)."""

    runtime: str | None  # node | python
    package: str | None
    version: str | None
    sdk: str | None  # @modelcontextprotocol/sdk, mcp ...
    sdk_version: str | None
    script: str | None  # the script or module it runs
    source: list[str]  # how each claim was made (the file that shows it)


class MemberRow(TypedDict):
    """A process of a server's tree (`model.Member`)."""

    pid: int
    start: float  # its start time: with the pid, its identity
    ppid: int
    pgid: int
    name: str  # its comm
    command: list[str]
    rss_bytes: int
    cpu_seconds: float


class Parent(TypedDict):
    """The root's parent, as the scan judged it."""

    pid: int
    name: str | None  # its comm (None: not readable)
    role: str  # launcher | host | adopter (init or a subreaper that took it in)
    host: str | None  # the host it is, when it is a live one


class StdinRow(TypedDict):
    kind: str  # what fd 0 is: pipe | socket | null | tty | file | closed | unknown
    writer: str  # yes | no | unknown | n/a: a writer of it is left
    inode: int | None
    private: bool  # channels found past fd 0/1 (an SDK's private copies)


class ServerRow(TypedDict):
    """One stdio server process tree (`model.Server.to_dict`): an item of the `ps`
    document's `results`."""

    pid: int
    start: float
    state: str  # leaked | live | unknown | superseded | abandoned
    evidence: list[str]  # `model`'s evidence words
    mcp: bool  # identified as MCP (by config, host, package, SDK, or remembered)
    guess: bool  # taken for one by its name only
    found_by: list[str]  # evidence | config | host | package | sdk | remembered | guess
    what: WhatRow
    user: str
    uid: int | None
    age_seconds: float
    rss_bytes: int  # the whole tree's
    cpu_seconds: float
    cpu_percent: float  # over its lifetime
    command: list[str]  # the root's argv
    shown_command: list[str]  # the command worth showing (the guarded server)
    config: list[dict[str, str]]  # matching config entries: host, name, path
    host: str | None  # the live host it runs under
    parent: Parent
    stdin: StdinRow
    channels: list[ChannelRow]
    stdin_writers: list[dict[str, Any]]  # holders of its input (`scan.evidence`)
    stdout_readers: list[dict[str, Any]]  # other holders of its output
    listening: dict[str, Any]  # does its launcher read it? answer, host, why (`abandoned`)
    superseded: dict[str, Any]  # did a newer copy replace it? answer, why (`superseded`)
    members: list[MemberRow]


class Totals(TypedDict):
    """The scan's counts (`ScanResult.totals`)."""

    servers: int
    leaked: int
    leaked_mcp: int  # leaked ones identified as MCP
    live: int
    unknown: int
    abandoned: int
    abandoned_rss_bytes: int
    superseded: int
    superseded_rss_bytes: int
    leaked_rss_bytes: int
    live_rss_bytes: int
    orphans: int  # = leaked, under its earlier name (kept for older readers)
    orphan_rss_bytes: int  # = leaked_rss_bytes, likewise


class ScanDocument(TypedDict):
    """A scan (`ScanResult.to_dict`): `ps --json` prints `servers` as the envelope's
    `results`, the rest as its summary fields."""

    servers: list[ServerRow]
    totals: Totals
    hosts_running: list[str]
    config_errors: list[str]
    scanned: int  # processes looked at
    unreadable: int  # processes that could not be read
    elapsed_seconds: float


class ReapRow(TypedDict):
    """What `reap` did to one tree (`reap.ReapOutcome.to_dict`)."""

    pid: int
    start: float
    command: list[str]  # the command shown
    evidence: list[str]
    what: WhatRow
    outcome: str  # one of `reap.REAP_OUTCOMES`
    ended_by: str | None  # sigterm | sigkill
    reclaimed_bytes: int
    signals: list[dict[str, Any]]
