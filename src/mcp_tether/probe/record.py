"""The probe's records as they cross a process or a package: a scenario's result, a run.

A keeper prints its scenario's result as one JSON line (`outcome.result`); the runner
reads it back (`runner.run_specs`), the diagnoses add their words (`diagnose.annotate`),
and `probe --json`, `lab --json`, the survey, the renderings (`report/`) and the pytest
fixture read it. Because it is read back from JSON (a keeper's line, a survey saved
before), it stays a dict: these `TypedDict`s say which keys it has and what each holds.
`api.ScenarioResult` is the typed view of the same result, with `record` the whole of it.

Guarantees:
- The keys a record always has come first in its type (`...Core`), those it may lack
  after; the JSON's key order is where the record is built (`outcome.result`).
- A `ScenarioRecord` always has the keys of `ScenarioCore` (what the runner writes for a
  keeper that died before its line); every other key may be missing (a keeper's line
  has them all; the diagnoses, the lab and the probe's rerun add theirs).
- Nothing here computes anything: types only, the standard library only.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = [
    "Evidence", "Children", "Armed", "TetherShutdown", "SurvivorRecord", "WindowRecord",
    "Left", "TimelineEvent", "Rerun", "ScenarioCore", "ScenarioRecord", "ProbeDocument",
    "ConfiguredServer", "ConfiguredDocument",
]


class Evidence(TypedDict):
    """What could be seen from outside about a process alive at a deadline
    (`evidence.collect`); what the backend cannot see stays empty or None."""

    pid: int
    alive: bool  # not a zombie (False also when it could not be read at all)
    comm: str | None
    exe: str | None
    cmdline: list[str]
    state: str | None  # the one-letter process state (R, S, D, Z ...)
    wchan: str | None  # the kernel function its main thread waits in
    threads: list[str]  # thread names, the main thread first
    thread_waits: list[str | None]  # each thread's wait channel, in the same order
    children: list[int]  # pids
    fds: dict[str, str]  # "0"/"1"/"2" -> what the fd is open on (`socket:[123]` ...)
    ipc_fds: int  # how many of its fds are pipes or sockets
    holds_wire: bool | None  # still holds the scenario's stdio ends (None: not seen)
    sig_blocked: list[str]  # of SIGHUP, SIGINT, SIGPIPE, SIGTERM
    sig_ignored: list[str]
    sig_caught: list[str]
    started_at: float | None  # on the backend's process clock (the tether's `armed.at`'s)
    tether_marks: list[str] | None  # MCP_TETHER_TREE's tokens (None: environ unreadable)
    server_env: bool | None  # started with (a copy of) the server's environment


class Children(TypedDict):
    """What a Node tether()'s shutdown did to its server's descendants."""

    found: int
    ended_by: str  # sigterm | sigkill | none | none-found | unknown
    survivors: list[dict[str, object]]  # what outlived its SIGKILL (each with its pid)


class Armed(TypedDict, total=False):
    by: str  # tether() | preload
    at: float  # when it armed, on the clock of `Evidence.started_at`


class _ShutdownCore(TypedDict):
    version: int
    pid: int
    reason: str  # stdin-end, signal:SIGTERM, host-gone ...
    children: Children


class TetherShutdown(_ShutdownCore, total=False):
    """One shutdown that ran through a Node server's tether() (node/lib/report.cjs;
    `shutdowns.ShutdownFile` reads them)."""

    start: float  # the tethered process's start time: its mark is `<pid>:<start>`
    status: int  # the exit status it exited with
    armed: Armed  # absent in a record of an older package


class _SurvivorCore(TypedDict):
    pid: int  # 0 for a container
    ppid: int | None
    cmdline: str
    lingered_ms: float | None  # it exited this long after the trigger (None: still alive)
    cause: str | None  # what ended it, when it lingered


class SurvivorRecord(_SurvivorCore, total=False):
    """A process of the tree alive after the window (`survivors`). The keeper's line
    has every key (pid, ppid, cmdline, evidence, container, lingered_ms, cause); the
    typed result's JSON (`ScenarioResult.to_dict`) the five of `api.SURVIVOR_FIELDS`."""

    evidence: Evidence | None  # None for a container
    container: str | None  # the container's short id, when the member is one


class _WindowCore(TypedDict):
    pid: int
    ppid: int | None
    ppid_is_probe: bool
    cmdline: str


class WindowRecord(_WindowCore, total=False):
    """A process alive at the window's end that the probe then SIGKILLed, as it was
    described then (`killed_at_window`): a container, or a process with its evidence."""

    container: str
    evidence: Evidence | None


# A process a scenario left: after the window, or at its end.
Left = SurvivorRecord | WindowRecord


class _EventCore(TypedDict):
    what: str  # spawn, seen, handshake, eof, sigterm, window-start, exit ...
    t_ms: float  # ms since the client (the host, in a host check) was forked


class TimelineEvent(_EventCore, total=False):
    """One event of a timeline (`events`), the probe's and the host check's alike (the
    renderings draw both). The keys the event has beyond `what` and `t_ms` are its own."""

    pid: int | None  # which process (None: the scenario's own instants, the window)
    role: str  # client | server | helper
    cmd: str
    ppid: int | None
    status: int | None  # an exit's status (128+N: signal N)
    by: str  # an exit the tool's clean-up caused: probe-cleanup | hostcheck-cleanup
    noticed: str  # "late": an exit seen after the clean-up began that it did not cause
    missed: str  # "gone": the trigger was meant for a server already gone
    group: bool  # the signal went to the server's process group
    received: bool  # the host check: a signal the recorder received
    recorded: str  # the host check: the recorder's own word for it
    new: int | None  # the host check: a reconnect's new copy
    note: str
    outcome: str  # the host check: what ending the oldest copy did


class Rerun(TypedDict, total=False):
    """A scenario run again alone after it failed as if another had interfered."""

    alone: bool
    why: str
    first_verdict: str | None  # the probe's rerun: the first, parallel run's verdict
    changed: bool  # the probe's rerun: verdict, pass or status differ from the first run


class ScenarioCore(TypedDict):
    """The keys every scenario record has."""

    scenario: str
    host_style: str
    verdict: str
    passed: bool
    exit_ms: float | None  # the tree was gone this long after the trigger
    rung: str | None  # the client's rung that ended it: eof | sigterm | sigkill ...
    exit_status: int | None  # the server's (128+N: signal N)
    survivors: list[SurvivorRecord]
    warnings: list[str]
    detail: str


class ScenarioRecord(ScenarioCore, total=False):
    """One scenario's result: the keeper's line (`outcome.result`), then the words and
    marks others add. `probe --json` prints it as an item of `results`."""

    label: str  # the server's, where many are probed (lab, --config)
    level: str  # spec | robust
    signaled: bool | None  # the status was a death by a signal (None: not seen)
    guarded: bool  # the command runs the server behind our guard
    guard_rung: str | None  # guarded: which rung of the guard ended the server
    call_answered: bool | None  # call-in-flight: the call in flight was answered
    window_s: float
    startup_ms: float | None  # spawn -> handshake answered
    handshake: str | None  # the method that was answered
    error_code: int | None  # 127 / 126 when the command could not be started
    stderr_tail: str
    probe_cpu_ms: float | None  # CPU the keeper and its client used
    trigger_at: float | None  # monotonic instants of the keeper's clock
    gone_at: float | None
    t0: float  # when the client was forked: the timeline's zero
    events: list[TimelineEvent]
    killed_at_window: list[WindowRecord]
    tether: list[TetherShutdown]  # shutdowns through a Node tether() in answer to it
    diagnosis: str | None  # failed: which guarantee failed and what kept the tree alive
    remedy: str | None  # failed: what to change, one sentence
    remedy_steps: list[str]  # the remedy as data: the steps in the server or launcher
    remedy_guard: str | None  # ... and the command that puts it behind the guard
    rerun: Rerun
    block: str  # the lab's block
    argv: list[str]  # the lab: the row's server command


class _ProbeCore(TypedDict):
    command: list[str]
    level: str  # the level `passed` is judged at
    passed: bool
    meets: str  # the level every scenario of passed: none | spec | robust
    guarded: bool  # the command runs the server behind our guard
    results: list[ScenarioRecord]


class ProbeDocument(_ProbeCore, total=False):
    """A probe of one command (`ProbeReport.to_dict`), and what `probe --json` adds:
    the summary fields of the `mcp-tether/probe` document (docs/json.md)."""

    summary: str  # "holds: ...; fails: ..." (`diagnose.summary`)
    rerun_alone: list[str]  # the scenarios run again alone (`interfere`)
    suggest_jobs_1: bool  # run alone, a result changed: probe it with --jobs 1


class ConfiguredServer(TypedDict):
    """One configured server probed as its host starts it (`probe --config`): an item of
    the `mcp-tether/probe-config` document's `results`."""

    name: str  # the entry's label
    meets: str  # none | spec | robust; for one not probed, why not: disabled, skipped ...
    guarded: bool
    results: list[ScenarioRecord]  # the typed results' JSON (`ScenarioResult.to_dict`)


class ConfiguredDocument(TypedDict):
    """Every configured server's results (`ConfiguredReport.to_dict`)."""

    level: str
    passed: bool  # some server was probed, and every probed one passes at `level`
    servers: list[ConfiguredServer]  # `results` in the document
