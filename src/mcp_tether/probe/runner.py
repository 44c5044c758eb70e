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
from typing import Any

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
    on_result: Callable[[int, dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
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
    on_result: Callable[[int, dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    jobs = max(1, jobs or len(specs) or 1)
    results: list[dict[str, Any] | None] = [None] * len(specs)
    # Longest worst case first: the scenarios that may sit through window + horizon, or
    # the whole ladder (close), bound the run, so they start before the short ones.
    # Among equals, robust ones first: they ask more than the spec, so more servers
    # fail them and sit through the horizon (inherited-writer: EOF never comes).
    pending = sorted(range(len(specs)), key=lambda i: (-expected_duration(specs[i]),
                                                       _level(specs[i]) != ROBUST))
    starting: dict[int, float] = {}  # keepers still in their start-up, since when
    running: dict[int, tuple[subprocess.Popen[bytes], float, bytearray]] = {}
    sel = selectors.DefaultSelector()
    wake = getattr(should_stop, "fileno", None)
    if wake is not None:  # a StopSignals: its signal wakes the select at once
        sel.register(wake(), selectors.EVENT_READ, None)
    me = os.getpid()
    startup: dict[str, float] = {}  # server_key -> start-up seconds, once one measured it
    told: set[int] = set()  # keepers already sent the start-up of their server

    def tell_startup() -> None:
        for j, (proc, _d, _b) in running.items():
            key = specs[j].server_key
            if j in told or key not in startup or proc.stdin is None:
                continue
            told.add(j)
            with contextlib.suppress(OSError):
                proc.stdin.write((json.dumps({"startup": startup[key]}) + "\n").encode())
                proc.stdin.flush()

    try:
        while pending or running:
            if should_stop():
                raise KeyboardInterrupt
            now = time.monotonic()
            for i in [i for i, t in starting.items() if now - t > START_TIMEOUT_SHARE]:
                del starting[i]
            while pending and len(running) < jobs and len(starting) < STARTING_AT_ONCE:
                i = pending.pop(0)
                starting[i] = time.monotonic()
                known = specs[i].startup
                if known is None:
                    known = startup.get(specs[i].server_key)
                spec = specs[i].replace(parent=me, startup=known)
                p = subprocess.Popen(keeper_argv(), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, **_OWN_GROUP)
                assert p.stdout is not None and p.stdin is not None
                try:
                    p.stdin.write((spec.to_json() + "\n").encode())
                    p.stdin.flush()
                except OSError:
                    pass  # it died at once: its empty output is reported as a failure
                os.set_blocking(p.stdout.fileno(), False)
                sel.register(p.stdout, selectors.EVENT_READ, i)
                running[i] = (p, time.monotonic() + spec_budget(spec), bytearray())
                if spec.startup is not None:
                    told.add(i)
            wait = 0.2 if not starting else 0.05
            for key, _ in sel.select(timeout=wait):
                i = key.data
                if i is None:
                    continue  # the stop signal: should_stop() sees it next round
                p, _deadline, buf = running[i]
                chunk = os.read(key.fd, 65536)
                if chunk:
                    buf += chunk
                    if b"\n" in buf:
                        starting.pop(i, None)
                        # Whenever its first line comes, even after its start-up share
                        # ran out (a loaded machine): devnull keepers wait for it.
                        key = specs[i].server_key
                        if key not in startup:
                            measured = _ready_startup(bytes(buf))
                            if measured is not None:
                                startup[key] = measured
                                tell_startup()
                    continue
                starting.pop(i, None)
                sel.unregister(key.fileobj)
                p.wait()
                assert p.stdout is not None
                p.stdout.close()
                if p.stdin is not None:
                    with contextlib.suppress(OSError):
                        p.stdin.close()
                del running[i]
                results[i] = _parse(specs[i], bytes(buf), p.returncode)
                if on_result:
                    on_result(i, results[i])
            now = time.monotonic()
            for _i, (p, deadline, _buf) in list(running.items()):
                if now > deadline:
                    p.terminate()  # our own unreaped child: its pid is still ours
    except BaseException:
        _stop_keepers([p for p, _, _ in running.values()])
        raise
    finally:
        sel.close()
    return [r for r in results if r is not None]


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


def _parse(spec: Spec, out: bytes, code: int | None) -> dict[str, Any]:
    try:
        return dict(json.loads(out.decode().strip().splitlines()[-1]))
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
