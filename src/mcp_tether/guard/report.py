"""The guard's outcome as data: one JSON line on a descriptor its caller names.

Both ends of the contract between `mcp-tether run` and whoever started it (the probe)
live here, so that no reader ever searches the human summary line for phrases.

Guarantees (version 1):
- With `MCP_TETHER_REPORT_FD=N` in its environment, the guard writes exactly one line to
  fd N at the end of the run, after the server is reaped and before it exits: a JSON
  object (`GuardReport.to_json`). Also when the command could not be started (reason
  "not-started", status 127/126). No variable, no line, and `json` is never imported.
- Neither reaches the server: the guard takes the variable out of its environment and
  makes fd N close-on-exec before anything is spawned.
- fd N is never the guard's stdio: 0, 1 and 2 are refused (stdout carries protocol bytes
  only). A refused, malformed, closed or read-only fd costs one warning line on stderr
  (`MCP_TETHER_LOG` applies) and no report; the run goes on. A reader that does not
  read cannot hang the guard: the write gives up after `WRITE_WAIT` with a warning.
- `read_report(text)` accepts a line of this version only; anything else (not JSON, a
  missing or mistyped field, another version) raises `ReportError` with a one-line
  reason. Unknown extra fields are ignored: additions keep the version, a change of
  meaning bumps it.

Fields: `version` (1); `reason`: "server-exit" | "stdin-hangup" | "parent-death" |
"signal" | "not-started"; `signal`: the triggering signal's name or null; `forwarded`;
`exit_status` (the guard's own: the server's code, 128+N after signal N);
`server_status` (the direct child's, which differs after a launcher's hand-over; null if
not reaped); `server_pid`; `ended_by`: which rung ended the server, "self" | "sigterm" |
"sigkill" | "none" (it did not exit) | "unknown" (a forwarded SIGTERM counts as the
sigterm rung; after a launcher's hand-over the server is whoever held the stdio);
`rungs`: [{action, ms, outcome}] (ms after the trigger, or after the start when the
server exited first); `survivors`, `escapees`, `holders`: [{pid, start}] (at most
`LIST_CAP` each; `counts` has the full numbers and `others`, the tree besides the
server); `left`: [{pid, start, why, detail, command}] (at most `LIST_CAP`), the processes
the server detached on purpose for its user, left running (`proc.leave`: why is
"opted-out" | "terminal" | "in-use" | "under"; absent from older lines, read as []);
`server_exit_ms`, `elapsed_ms` (trigger, or start, to everything gone), `hurried` (a
second SIGINT).

`mcp-tether run` loads this module only when the variable is set (it is on every
guarded server's launch path), so it is ordinary Python; stdlib only.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
from collections.abc import MutableMapping
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from mcp_tether import log
from mcp_tether.guard.result import FORWARDED, REPORT_ENV, signame
from mcp_tether.ladder import Step
from mcp_tether.proc.identity import ProcessId

if TYPE_CHECKING:
    from mcp_tether.guard.result import GuardResult

__all__ = [
    "REPORT_ENV", "VERSION", "ENDED_BY", "NOT_STARTED", "GuardReport", "LeftRunning",
    "ReportError", "ReportPipe", "RungTaken", "read_report", "take_report_fd",
    "write_report",
]

VERSION = 1
ENDED_BY = ("self", "sigterm", "sigkill", "none", "unknown")
NOT_STARTED = "not-started"
LIST_CAP = 100  # identities per list: a pid-hopper's escapees are thousands
WRITE_WAIT = 2.0  # seconds the guard waits for room in a full pipe before giving up


class ReportError(ValueError):
    """A report line that this reader cannot take: garbage or another version."""


@dataclass
class RungTaken(Step):
    """One rung of the guard's ladder as the report carries it: when is ms after the
    trigger (`ladder.Step` says why this is not a `ladder.Rung`)."""

    action: str
    ms: float
    outcome: str


@dataclass(frozen=True)
class LeftRunning:
    """A process the guard left running for the server's user (`proc.leave.Left` as the
    report carries it; `command` and `detail` are the server's untrusted text)."""

    pid: int
    start: float
    why: str
    detail: str
    command: str


@dataclass(eq=True)
class GuardReport:
    """What one guarded run did, as the report line carries it (see the module doc)."""

    reason: str
    exit_status: int
    ended_by: str
    signal: str | None = None
    forwarded: bool = False
    server_status: int | None = None
    server_pid: int | None = None
    rungs: list[RungTaken] = field(default_factory=list)
    survivors: list[ProcessId] = field(default_factory=list)
    escapees: list[ProcessId] = field(default_factory=list)
    holders: list[ProcessId] = field(default_factory=list)
    left: list[LeftRunning] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # empty: the lists' lengths
    server_exit_ms: float | None = None
    elapsed_ms: float = 0.0
    hurried: bool = False

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = {"others": 0, "survivors": len(self.survivors),
                           "escapees": len(self.escapees), "holders": len(self.holders),
                           "left": len(self.left)}

    @classmethod
    def from_result(cls, r: GuardResult) -> GuardReport:
        t0 = r.triggered_at if r.triggered_at is not None else r.started_at
        sig = signame(r.signal) if r.signal is not None else None
        return cls(
            reason=r.reason,
            signal=sig,
            forwarded=r.signal in FORWARDED,
            exit_status=r.exit_status,
            server_status=None if r.server_exited_at is None else r.server_status,
            server_pid=r.server_pid,
            ended_by=r.ended_by,
            rungs=[RungTaken(x.action, _ms(t0, x.sent_at), x.outcome) for x in r.rungs],
            survivors=r.survivors[:LIST_CAP],
            escapees=r.escapees[:LIST_CAP],
            holders=r.holders[:LIST_CAP],
            left=[LeftRunning(v.info.pid, v.info.start, v.why, v.detail, v.command)
                  for v in r.left[:LIST_CAP]],
            counts={"others": len(r.others), "survivors": len(r.survivors),
                    "escapees": len(r.escapees), "holders": len(r.holders),
                    "left": len(r.left)},
            server_exit_ms=None if r.server_exited_at is None else _ms(t0, r.server_exited_at),
            elapsed_ms=_ms(t0, r.ended_at),
            hurried=r.hurried,
        )

    @classmethod
    def not_started(cls, exit_status: int) -> GuardReport:
        """The command could not be started (127 not found, 126 not executable)."""
        return cls(reason=NOT_STARTED, exit_status=exit_status, ended_by="none")

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"version": VERSION}
        d.update((f.name, getattr(self, f.name)) for f in fields(self))
        d["rungs"] = [asdict(x) for x in self.rungs]
        d["left"] = [asdict(x) for x in self.left]
        for name in _IDENTITY_LISTS:
            d[name] = [{"pid": p.pid, "start": p.start} for p in d[name]]
        d["counts"] = dict(self.counts)
        return d

    def to_json(self) -> str:
        """The report line (no newline): one JSON object."""
        return json.dumps(self.to_dict(), separators=(",", ":"))


_IDENTITY_LISTS = ("survivors", "escapees", "holders")


def _ms(a: float, b: float) -> float:
    return round(max(0.0, b - a) * 1000, 1)


# -- the guard's end -------------------------------------------------------------------
def take_report_fd(environ: MutableMapping[str, str] | None = None) -> int | None:
    """The descriptor `REPORT_ENV` names, made close-on-exec; None without a usable one.

    The variable is removed from `environ` (default: this process's, so the server never
    sees it) whatever its value. A refused or unusable value costs one warning line."""
    env = os.environ if environ is None else environ
    raw = env.pop(REPORT_ENV, None)
    if raw is None:
        return None
    try:
        fd = int(raw.strip())
    except ValueError:
        fd = -1
    if fd < 0:
        log.warning(f"{REPORT_ENV}={raw!r} is not a descriptor number: no report")
        return None
    if fd <= 2:
        log.warning(f"{REPORT_ENV}={fd} refused: fds 0-2 are the server's stdio "
                    "(stdout carries protocol bytes only): no report")
        return None
    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    except OSError as exc:
        log.warning(f"{REPORT_ENV}={fd}: not an open descriptor "
                    f"({(exc.strerror or str(exc)).lower()}): no report")
        return None
    if flags & os.O_ACCMODE == os.O_RDONLY:
        log.warning(f"{REPORT_ENV}={fd}: not open for writing: no report")
        return None
    os.set_inheritable(fd, False)  # the server (and anything it runs) must not get it
    return fd


def write_report(fd: int, report: GuardReport) -> bool:
    """Write the one report line to `fd` and close it; False (and one warning line) if
    it could not be written whole within `WRITE_WAIT`."""
    import time

    data = (report.to_json() + "\n").encode()
    deadline = time.monotonic() + WRITE_WAIT
    try:
        os.set_blocking(fd, False)  # a reader that never reads must not hang the guard
        while data:
            try:
                data = data[os.write(fd, data):]
            except BlockingIOError:
                left = deadline - time.monotonic()
                poller = select.poll()
                poller.register(fd, select.POLLOUT)
                if left <= 0 or not poller.poll(left * 1000):
                    log.warning(f"{REPORT_ENV}={fd}: the reader left no room for the "
                                f"report within {WRITE_WAIT:g} s: report incomplete")
                    return False
    except OSError as exc:
        log.warning(f"{REPORT_ENV}={fd}: report not written "
                    f"({(exc.strerror or str(exc)).lower()})")
        return False
    finally:
        try:  # noqa: SIM105  # contextlib would pull functools onto the guard's path
            os.close(fd)
        except OSError:
            pass
    return True


# -- the reader's end ------------------------------------------------------------------
def read_report(text: str | bytes) -> GuardReport:
    """Parse one report line; `ReportError` (one line, why) for anything else."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    try:
        d = json.loads(text)
    except ValueError as exc:
        raise ReportError(f"guard report is not JSON ({exc}): {text[:80]!r}") from None
    if not isinstance(d, dict):
        raise ReportError(f"guard report is not a JSON object: {text[:80]!r}")
    version = d.get("version")
    if version != VERSION or isinstance(version, bool):
        raise ReportError(f"guard report version {version!r}; this reader takes {VERSION}")
    ended_by = _field(d, "ended_by", str)
    if ended_by not in ENDED_BY:
        raise ReportError(f"guard report: ended_by {ended_by!r}, expected one of "
                          f"{', '.join(ENDED_BY)}")
    rungs = [RungTaken(_field(x, "action", str), float(_field(x, "ms", (int, float))),
                       _field(x, "outcome", str)) for x in _field(d, "rungs", list)]
    lists = {name: [ProcessId(_field(p, "pid", int), float(_field(p, "start", (int, float))))
                    for p in _field(d, name, list)] for name in _IDENTITY_LISTS}
    left = [LeftRunning(_field(x, "pid", int), float(_field(x, "start", (int, float))),
                        _field(x, "why", str), _field(x, "detail", str),
                        _field(x, "command", str))
            for x in _field(d, "left", list, [])]
    counts = _field(d, "counts", dict)
    counts = {str(k): _field(counts, k, int) for k in counts}
    return GuardReport(
        reason=_field(d, "reason", str),
        exit_status=_field(d, "exit_status", int),
        ended_by=ended_by,
        server_status=_field(d, "server_status", int, None),
        server_pid=_field(d, "server_pid", int, None),
        signal=_field(d, "signal", str, None),
        forwarded=_field(d, "forwarded", bool),
        rungs=rungs,
        counts=counts,
        server_exit_ms=_field(d, "server_exit_ms", (int, float), None),
        elapsed_ms=_field(d, "elapsed_ms", (int, float)),
        hurried=_field(d, "hurried", bool),
        left=left,
        **lists,
    )


_MISSING = object()


def _field(d: object, name: str, kind: type | tuple[type, ...], *default: object) -> Any:
    """d[name], of type `kind` (None allowed when a default None is given)."""
    if not isinstance(d, dict):
        raise ReportError(f"guard report: expected an object holding {name!r}")
    value = d.get(name, _MISSING)
    if value is _MISSING and default and default[0] is not None:
        return default[0]  # a field added within the version: older lines lack it
    if value is _MISSING:
        raise ReportError(f"guard report: {name!r} missing")
    if value is None and default and default[0] is None:
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # bool is an int to isinstance: a flag is no status, and a status no flag.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise ReportError(f"guard report: {name!r} is {value!r}")
    return value


class ReportPipe:
    """For a process that starts a guard and wants its report (the probe's keeper).

    `ReportPipe()` makes a pipe; in the process that will exec the guard (after a fork),
    `offer(env)` makes the write end inheritable and names it in `env` (or, for None,
    in os.environ); the parent then calls `close_writer()`. Once the guard is gone,
    `read()` returns its report, or None: it wrote none (killed, or behind a launcher
    that did not pass the descriptor on), or what it wrote is unreadable (then `error`
    says why, the `ReportError`'s line). Read once; later calls return the same.
    """

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        self.error: str | None = None
        self._done = False
        self._report: GuardReport | None = None

    def offer(self, env: MutableMapping[str, str] | None) -> None:
        os.close(self.read_fd)
        os.set_inheritable(self.write_fd, True)
        (os.environ if env is None else env)[REPORT_ENV] = str(self.write_fd)

    def close_writer(self) -> None:
        os.close(self.write_fd)

    def read(self) -> GuardReport | None:
        if self._done:
            return self._report
        self._done = True
        chunks = []
        try:
            while True:
                chunk = os.read(self.read_fd, 65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except BlockingIOError:
            pass  # a process still holds the write end (the client): all there is, read
        finally:
            os.close(self.read_fd)
        data = b"".join(chunks)
        if not data:
            return None
        if not data.endswith(b"\n"):
            self.error = f"guard report cut short: {data[-80:]!r}"
            return None
        try:
            self._report = read_report(data.splitlines()[-1])
        except ReportError as exc:
            self.error = str(exc)
        return self._report
