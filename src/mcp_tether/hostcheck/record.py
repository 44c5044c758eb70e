"""The host check's records: one scenario's row, as its keeper prints it and `--json` shows it.

A scenario's keeper is a process of its own: it writes its row as one JSON line
(`outcome.result_row`), the driver reads it back (`run_scenarios`), and `hostcheck
--json`, the renderings (`render.py`) and the survey's host matrix read it. It stays a
dict, read back from JSON; these `TypedDict`s say which keys it has and what each holds.

Guarantees:
- A `HostCheckRow` always has the keys of `HostCheckCore` (what the driver writes for a
  keeper that died without a row); a keeper's row has every key.
- Times in a row are ms since the host was started (`..._ms`); a recorder's own lines
  carry monotonic seconds (`t`) instead.
- Types only, the standard library only.
"""

from __future__ import annotations

from typing import Any, TypedDict

from mcp_tether.probe.record import TimelineEvent

__all__ = ["RecordedEvent", "Layer", "OtherLeft", "LeftRecorder", "SignalSeen", "ProcessRow",
           "PsState", "Outcome", "HostCheckCore", "HostCheckRow"]


class RecordedEvent(TypedDict, total=False):
    """One line a recorder wrote (`recorder.note`): what it saw, when, who it is."""

    what: str  # start, initialized, request, hold, release, call, stdin-eof, signal ...
    t: float  # monotonic seconds (a recorder's line; a row's `recorded` has `t_ms`)
    t_ms: float | None
    wall: float
    pid: int
    role: str  # server | grandchild | wrapper
    ppid: int
    pgid: int
    sid: int
    argv: list[str]
    how: str  # stdout-closed: how it saw it
    method: str  # request: the method
    point: str  # hold: where it holds its answer
    tool: str  # call: the tool called
    text: str  # call: its text argument (a stand-in model's names the agent and step)
    error: str  # stdin-error
    status: int  # exit, child-exit
    signal: str  # signal: its name
    child: int | None  # child-exit, grandchild, server: the child's pid
    old: int  # parent-changed: the parent before
    new: int  # ... and after
    others: list[int]  # second-copy: the other copies running


class Layer(TypedDict):
    """A process between the host and its server (a hidden `sh -c`, a relaunched CLI)."""

    pid: int
    cmdline: str


class _OtherCore(TypedDict):
    pid: int
    cmdline: str
    exit_ms: float | None  # it exited by itself this long after the host (None: not)
    host_lives: bool  # the host had not exited: nothing of its tree is left by it


class OtherLeft(_OtherCore, total=False):
    """Another process of the host's tree still there at the verdict."""

    hosts_own: bool  # of the host's own tree as read during the handshake (the row's)


class LeftRecorder(TypedDict):
    pid: int
    role: str  # server | grandchild | wrapper


class SignalSeen(TypedDict):
    signal: str | None
    t_ms: float | None


class ProcessRow(TypedDict):
    """Who got what: one recorder process of a row (`who.processes`)."""

    pid: int
    role: str
    ppid: int | None
    direct_child: bool | None  # the host's own child (None: not known)
    signals: list[SignalSeen]  # what it received (SIGPIPE left out: its own write's)
    stdin_closed_ms: float | None
    stdin_closed_first: bool | None  # its stdin was closed before any signal
    pgid: int | None
    sid: int | None
    group: str  # its group beside the host's: the host's, its own, another (N) ...
    session: str
    ended: str  # how it ended, in words
    ended_ms: float | None


class PsState(TypedDict, total=False):
    """What `ps` makes of a copy still running (the reconnect scenarios' `ps`)."""

    pid: int
    state: str  # a `ps` state, or not-found
    evidence: list[str]
    why: str  # the abandoned judgement's reason
    confidence: str | None
    superseded: str  # yes | no | unknown | n/a
    superseded_why: str


class _OutcomeCore(TypedDict):
    verdict: str
    detail: str


class Outcome(_OutcomeCore, total=False):
    """What the keeper decided, before it is made a row (`outcome.result_row`)."""

    left: list[int]  # the recorder pids still running
    after: str  # preempted: the verdict it would have had
    ps: list[PsState] | None
    calls: dict[str, Any]  # `calls.CallFacts`, every instant `t` made `t_ms`


class HostCheckCore(TypedDict):
    """The keys every row has."""

    scenario: str
    verdict: str
    passed: bool
    detail: str
    events: list[TimelineEvent]  # the probe's timeline form (`timeline.build`)


class HostCheckRow(HostCheckCore, total=False):
    """One scenario of the host check: an item of the `mcp-tether/hostcheck` document's
    `results` (docs/json.md, docs/hosts-check.md)."""

    title: str
    after: str | None  # preempted: the verdict it would have had
    hold: str  # the point the recorder was asked to hold the host at
    hold_point: str | None  # the one it reached (None: none)
    held_ms: float | None
    released_ms: float | None
    wrapper: bool  # a signal-eating wrapper stood between the host and the recorder
    recorder_signals: str  # die | stay
    host_pgid: int | None
    host_sid: int | None
    spec: str  # what the MCP specification asks of the host here
    host_argv: list[str]
    host_config: str | None  # --host: the config file the recorder was written into
    after_edit: list[str]  # reconnect: the steps typed after the edit
    host_pid: int | None
    host_exit_ms: float | None
    host_status: int | None
    host_ended_by_cleanup: bool
    initialized_ms: float | None
    action: str  # what ended the host (exit, sigterm, ...)
    action_ms: float | None
    left: list[LeftRecorder]
    others_left: list[OtherLeft]
    layers: list[Layer]
    also: str  # the detail's last words: what it adds about others and layers
    ps: list[PsState] | None  # reconnect: `ps` on the copies still running
    calls: dict[str, Any] | None  # the tool-calling scenarios' facts (`calls.CallFacts`)
    killed_by_cleanup: list[int]
    recorded: list[RecordedEvent]  # every recorder line, `t` as `t_ms`
    host_output_tail: str
    processes: list[ProcessRow]
