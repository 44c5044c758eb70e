"""Runs scenarios in parallel, one keeper process each, and collects their results.

Keepers start as `python -I -S` with only the package directory on sys.path: isolated
from the caller's environment (no PYTHON* variables, no site-packages), they run our own
stdlib-only code and nothing else. Each gets its `Spec` as one JSON line on its stdin
(never argv: a large environment must fit), and later lines with what the runner
learnt meanwhile: the server's start-up time, measured by the first scenario of the
same server that finished its handshake (the devnull scenario allows that much, not a
fixed 10 s). The runner holds the write end: when it dies, keepers see EOF and stop.
The runner never signals anything but its own unreaped keeper children; each keeper
ends its own tree. Keepers run in process groups of their own, so a SIGKILL to the probe's
process group (a CI system cancelling a job) spares them: each sees the runner die and
ends its tree, as the guard's supervisor does for the guard. When the runner is a child
subreaper too (the CLI makes it one), `sweep()` ends anything that escaped a keeper that
was itself killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from mcp_tether import platform
from mcp_tether.guard.result import signame
from mcp_tether.ladder import KILL_WAIT
from mcp_tether.probe.interfere import interference, mark_rerun
from mcp_tether.probe.scenarios import get
from mcp_tether.probe.spec import ROBUST, STARVED_CAP, Spec
from mcp_tether.proc import ExitWaiter, descendants, snapshot
from mcp_tether.proc.inbox import SignalInbox
from mcp_tether.proc.reap import reap_children
from mcp_tether.proc.signals import signal_process

if TYPE_CHECKING:
    from mcp_tether.probe.record import ScenarioRecord

_ROOT = str(Path(__file__).resolve().parent.parent.parent)
_BOOT = (
    "import sys;sys.path[:0]=sys.argv[1:];del sys.argv[1:];"
    "from mcp_tether.probe.keeper import main;main()"
)


# A process group of its own for each keeper: a CI system cancelling a job SIGKILLs the
# job's whole group, and keepers killed with the runner could not end their trees.
# Outside the group, a keeper sees the runner die (PDEATHSIG, EOF on its
# stdin) and ends its tree, as the guard's supervisor (a group of its own) does. Not a
# session: with CONFIG_SCHED_AUTOGROUP that is also a scheduling group of its own.
# Python 3.10 has no `process_group`: a new session there (setsid makes a group too).
_OWN_GROUP: dict[str, Any] = (
    {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}
)


def keeper_argv() -> list[str]:
    return [sys.executable, "-I", "-S", "-c", _BOOT, _ROOT, *platform.backend.boot_paths()]


def spec_budget(spec: Spec) -> float:
    """The longest a keeper may honestly take; past it, the runner gives up on it."""
    return (
        4 * spec.ready_ceiling + spec.idle + (1 + STARVED_CAP) * (spec.grace + spec.term_grace)
        + 2 * KILL_WAIT + (1 + STARVED_CAP) * spec.effective_window + spec.horizon_s + 30
    )


# At most this many scenarios are in their start-up (spawn + handshake) at once: servers
# that start all together fight for the CPU, and every exit time and the longest
# scenario's start then suffer. A keeper says "ready" once its trigger is pulled.
STARTING_AT_ONCE = max(2, os.cpu_count() or 2)
START_TIMEOUT_SHARE = 0.5  # ...or once it has been starting this long (seconds)


def expected_duration(spec: Spec) -> float:
    """How long a scenario may take after its handshake at worst, for scheduling only.

    The worst case, not the compliant one: a scenario judged on a window whose tree
    outlives it is then watched for the horizon too, and that (window + horizon) is the
    longest wait of a whole run on a server that orphans. Starting those first keeps
    the run's end at start-up + window + horizon instead of adding their start delay.
    """
    sc = spec.scenario
    if sc == "close":
        return spec.grace + spec.term_grace + 0.5
    if sc == "idle":
        return spec.idle + 0.5
    extra = 0.0
    if sc == "devnull":
        extra = 1.0  # its start-up allowance
    if getattr(get(sc), "after_window", None) is not None:
        return spec.effective_window + 0.5 + extra  # the probe ends it at the window's end
    return spec.effective_window + spec.horizon_s + extra


def run_specs(
    specs: list[Spec],
    *,
    jobs: int | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    on_result: Callable[[int, ScenarioRecord], None] | None = None,
) -> list[ScenarioRecord]:
    """Run every spec in its own keeper, at most `jobs` at once; results in spec order.

    Run in parallel, a failure that looks like interference between scenarios (see
    `interfere`) is run again alone, after the others, and replaced (marked `rerun`).
    `on_result(i, record)` is called as each spec ends, and again with the record that
    replaces it after such a rerun.
    """
    results = _run_specs(specs, jobs=jobs, should_stop=should_stop, on_result=on_result)
    if max(1, jobs or len(specs) or 1) > 1 and len(results) == len(specs) > 1:
        for i, r in enumerate(results):
            why = interference(r)
            if why is not None:
                (again,) = _run_specs([specs[i]], jobs=1, should_stop=should_stop)
                results[i] = mark_rerun(r, again, why)
                if on_result:
                    on_result(i, results[i])
    return results


def _run_specs(
    specs: list[Spec],
    *,
    jobs: int | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    on_result: Callable[[int, ScenarioRecord], None] | None = None,
) -> list[ScenarioRecord]:
    batch = _Batch(specs, max(1, jobs or len(specs) or 1), on_result)
    wake = getattr(should_stop, "fileno", None)
    if wake is not None:  # a StopSignals: its signal wakes the select at once
        batch.sel.register(wake(), selectors.EVENT_READ, None)
    try:
        while batch.pending or batch.running:
            if should_stop():
                raise KeyboardInterrupt
            batch.start_keepers()
            batch.read_keepers()
            batch.end_overdue()
    except BaseException:
        _stop_keepers([p for p, _, _ in batch.running.values()])
        raise
    finally:
        batch.sel.close()
    return [r for r in batch.results if r is not None]


class _Batch:
    """The keepers of one `_run_specs`: which specs wait, which keepers are in their
    start-up or running (each with its deadline and output so far), their results, and
    the start-up time of each server once one of its scenarios measured it."""

    def __init__(
        self, specs: list[Spec], jobs: int,
        on_result: Callable[[int, ScenarioRecord], None] | None,
    ) -> None:
        self.specs = specs
        self.jobs = jobs
        self.on_result = on_result
        self.results: list[ScenarioRecord | None] = [None] * len(specs)
        # Longest worst case first: the scenarios that may sit through window + horizon,
        # or the whole ladder (close), bound the run, so they start before the short
        # ones. Among equals, robust ones first: they ask more than the spec, so more
        # servers fail them and sit through the horizon (inherited-writer: EOF never comes).
        self.pending = sorted(range(len(specs)), key=lambda i: (-expected_duration(specs[i]),
                                                                _level(specs[i]) != ROBUST))
        self.starting: dict[int, float] = {}  # keepers still in their start-up, since when
        self.running: dict[int, tuple[subprocess.Popen[bytes], float, bytearray]] = {}
        self.sel = selectors.DefaultSelector()
        self.me = os.getpid()
        self.startup: dict[str, float] = {}  # server_key -> start-up seconds, once measured
        self.told: set[int] = set()  # keepers already sent the start-up of their server

    def start_keepers(self) -> None:
        """Start keepers while a job is free and few enough are in their start-up (a
        keeper counts as starting until its first line, or its start-up share ran out)."""
        now = time.monotonic()
        for i in [i for i, t in self.starting.items() if now - t > START_TIMEOUT_SHARE]:
            del self.starting[i]
        while (self.pending and len(self.running) < self.jobs
               and len(self.starting) < STARTING_AT_ONCE):
            self._start(self.pending.pop(0))

    def _start(self, i: int) -> None:
        self.starting[i] = time.monotonic()
        known = self.specs[i].startup
        if known is None:
            known = self.startup.get(self.specs[i].server_key)
        spec = self.specs[i].replace(parent=self.me, startup=known)
        p = subprocess.Popen(keeper_argv(), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, **_OWN_GROUP)
        assert p.stdout is not None and p.stdin is not None
        try:
            p.stdin.write((spec.to_json() + "\n").encode())
            p.stdin.flush()
        except OSError:
            pass  # it died at once: its empty output is reported as a failure
        os.set_blocking(p.stdout.fileno(), False)
        self.sel.register(p.stdout, selectors.EVENT_READ, i)
        self.running[i] = (p, time.monotonic() + spec_budget(spec), bytearray())
        if spec.startup is not None:
            self.told.add(i)

    def read_keepers(self) -> None:
        """Take what keepers wrote; collect the result of each that closed its output."""
        wait = 0.2 if not self.starting else 0.05
        for key, _ in self.sel.select(timeout=wait):
            i = key.data
            if i is None:
                continue  # the stop signal: should_stop() sees it next round
            chunk = os.read(key.fd, 65536)
            if chunk:
                self._output(i, chunk)
            else:
                self._collect(i, key.fileobj)

    def _output(self, i: int, chunk: bytes) -> None:
        buf = self.running[i][2]
        buf += chunk
        if b"\n" not in buf:
            return
        self.starting.pop(i, None)
        # Whenever its first line comes, even after its start-up share ran out (a
        # loaded machine): devnull keepers wait for it.
        key = self.specs[i].server_key
        if key not in self.startup:
            measured = _ready_startup(bytes(buf))
            if measured is not None:
                self.startup[key] = measured
                self._tell_startup()

    def _tell_startup(self) -> None:
        """Send each running keeper the start-up of its server, once it is known."""
        for j, (proc, _d, _b) in self.running.items():
            key = self.specs[j].server_key
            if j in self.told or key not in self.startup or proc.stdin is None:
                continue
            self.told.add(j)
            with contextlib.suppress(OSError):
                proc.stdin.write((json.dumps({"startup": self.startup[key]}) + "\n").encode())
                proc.stdin.flush()

    def _collect(self, i: int, stdout: Any) -> None:
        p, _deadline, buf = self.running[i]
        self.starting.pop(i, None)
        self.sel.unregister(stdout)
        p.wait()
        assert p.stdout is not None
        p.stdout.close()
        if p.stdin is not None:
            with contextlib.suppress(OSError):
                p.stdin.close()
        del self.running[i]
        record = self.results[i] = _parse(self.specs[i], bytes(buf), p.returncode)
        if self.on_result:
            self.on_result(i, record)

    def end_overdue(self) -> None:
        """SIGTERM each keeper past its budget (`spec_budget`)."""
        now = time.monotonic()
        for p, deadline, _buf in list(self.running.values()):
            if now > deadline:
                p.terminate()  # our own unreaped child: its pid is still ours


def _level(spec: Spec) -> str:
    return get(spec.scenario).level


def _ready_startup(out: bytes) -> float | None:
    """The start-up seconds in a keeper's "ready {...}" line, if it measured one."""
    first = out.split(b"\n", 1)[0]
    if not first.startswith(b"ready"):
        return None
    try:
        value = json.loads(first[5:] or b"{}").get("startup")
    except (ValueError, AttributeError):
        return None
    return float(value) if isinstance(value, (int, float)) else None


def _parse(spec: Spec, out: bytes, code: int | None) -> ScenarioRecord:
    """The keeper's result line (`outcome.result`), or the record of a keeper that died
    before it printed one."""
    try:
        return cast("ScenarioRecord", dict(json.loads(out.decode().strip().splitlines()[-1])))
    except (ValueError, IndexError):
        return {
            "scenario": spec.scenario,
            "host_style": spec.host_style,
            "verdict": "error",
            "passed": False,
            "exit_ms": None,
            "rung": None,
            "exit_status": None,
            "survivors": [],
            "warnings": [],
            "detail": f"probe keeper failed (exit {code})",
        }


def _stop_keepers(procs: list[subprocess.Popen[bytes]]) -> None:
    """Ask keepers to end their scenarios (they kill and reap their trees), then wait."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    end = time.monotonic() + 10
    for p in procs:
        try:
            p.wait(max(0.1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        if p.stdout:
            p.stdout.close()
        if p.stdin:
            with contextlib.suppress(OSError):
                p.stdin.close()


def sweep(before: set[Any] | frozenset[Any] = frozenset()) -> int:
    """End every descendant of this process that was not there `before`; how many.

    Only meaningful for a subreaper: an orphan of a killed keeper reparents here. What
    was already our descendant before the run (a caller's own children, when the probe
    runs inside another program) is never touched.
    """
    me = os.getpid()
    count = 0
    for _ in range(5):
        procs = [i.ident for i in descendants(me, snapshot()) if i.ident not in before]
        if not procs:
            break
        with ExitWaiter() as w:
            for ident in procs:
                if signal_process(ident, signal.SIGKILL) == "sent":
                    count += 1
                w.add(ident)
            end = time.monotonic() + 2
            while w.pending and time.monotonic() < end:
                w.wait(end - time.monotonic())
        reap_children()  # orphans that reparented to us: the core reaps them
    return count


class StopSignals:
    """For the CLIs: SIGTERM/SIGHUP (and Ctrl-C) stop the runner cleanly.

    Handlers only record the signal (the core's SignalInbox, whose fd wakes the runner's
    select at once); the runner's loop sees it through `__call__`, stops its keepers
    (which end and reap their trees) and `__exit__` sweeps anything that reparented to
    us. The signal is reported, not re-raised: callers exit 128+N.
    """

    def __init__(self, what: str) -> None:
        self.what = what
        self.signum = 0

    def fileno(self) -> int:
        return self._inbox.fileno()

    def __call__(self) -> bool:
        for sig in self._inbox.drain():
            self.signum = self.signum or sig
        return self.signum != 0

    def __enter__(self) -> StopSignals:
        # Orphans of a keeper that was itself killed reparent to us: see and end them.
        self._before = {i.ident for i in descendants(os.getpid(), snapshot())}
        self._subreaper = platform.set_subreaper()
        self._inbox = SignalInbox((signal.SIGTERM, signal.SIGHUP))
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> bool:
        self()  # what arrived since the last look
        self._inbox.restore()
        sweep(self._before)
        if self._subreaper:
            platform.set_subreaper(False)
        if exc_type is KeyboardInterrupt and not self.signum:
            self.signum = signal.SIGINT
        if self.signum:
            print(f"mcp-tether {self.what}: stopped by {signame(self.signum)}; nothing left "
                  "running", file=sys.stderr)
            return exc_type is KeyboardInterrupt  # swallow our own stop
        return False
