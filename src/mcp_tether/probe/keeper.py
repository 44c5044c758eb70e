"""One scenario, start to finish, in a process of its own: the keeper.

    probe (runner) -> keeper (child subreaper) -> client (forked) -> server -> ...

The keeper is a child subreaper (Linux PR_SET_CHILD_SUBREAPER), so every process of the
scenario that loses its parent (the server when the client dies, a grandchild when a
wrapper dies, a daemon after its double fork) reparents to it, never to init. Hence
the scenario's tree is exactly the keeper's descendants minus the client side, whatever
the server does with sessions and groups, and the keeper may end all of it afterwards:
it started every one of them. Exit instants come from pidfds (`ExitWaiter`), not sleeps.

The keeper prints one JSON result line on stdout and exits. It never returns before
every descendant is killed and reaped; SIGTERM/SIGINT make it stop early, cleanly.
It dies with its parent (PR_SET_PDEATHSIG): an interrupted probe leaves no keepers.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time

from mcp_tether import platform
from mcp_tether.ladder import GRACE_AFTER_EOF, KILL_WAIT, TERM_GRACE
from mcp_tether.probe.verdict import Facts, decide, passed
from mcp_tether.proc import ExitWaiter, ProcessId, cmdline, descendants, identify, snapshot
from mcp_tether.proc.signals import signal_process

TYPE_CHECKING = False  # typing costs ~11 ms; keepers start per scenario
if TYPE_CHECKING:
    from typing import Any

STDERR_TAIL = 2000
SCAN_TICK = 0.25  # seconds between tree rescans while nothing happens


class Interrupted(Exception):
    pass


class Keeper:
    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.scenario: str = spec["scenario"]
        self.window = float(spec.get("window", 2.0))
        self.me = os.getpid()
        self.waiter = ExitWaiter()
        self.client: ProcessId | None = None
        self.client_side: set[int] = set()  # pids of the client and its helper
        self.server: ProcessId | None = None
        self.seen: set[ProcessId] = set()
        self.facts = Facts(self.scenario)
        self.warnings: list[str] = []
        self.status: int | None = None
        self.reaped: dict[int, int] = {}
        self.stderr_tail = b""
        self.ctrl_r: int | None = None  # the client's event pipe, set by run()
        self.err_r: int | None = None  # the client's stderr pipe, set by run()
        self.ctrl_buf = b""
        self.client_cpu = 0.0
        self.ladder_done_at: float | None = None
        self.client_done = False
        self.handshake: str | None = None
        self.stop = False
        self.error_code: int | None = None
        self.cleanup_at = float("inf")
        self._scan_at = 0.0
        self._scan_exits = -1
        self._scan_live: list[ProcessId] = []
        # The timeline (`events` in the result): [t, what, pid, extra]; t monotonic.
        self.events: list[tuple[float, str, int | None, dict[str, Any]]] = []
        self.t0 = time.monotonic()
        self.wire: list[str] = []  # the server's stdio ends as spawned (pipe:/socket:)
        self.killed_evidence: list[dict[str, Any]] = []  # sigterm/sigint: before SIGKILL

    def _ev(self, t: float, what: str, pid: int | None, **extra: Any) -> None:
        self.events.append((t, what, pid, extra))

    # -- plumbing ---------------------------------------------------------------------
    def _setup_signals(self) -> None:
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)
        signal.set_wakeup_fd(self.wake_w)

        def on_stop(_s: int, _f: object) -> None:
            self.stop = True  # record only; the loop acts

        signal.signal(signal.SIGTERM, on_stop)
        signal.signal(signal.SIGINT, on_stop)
        signal.signal(signal.SIGCHLD, lambda _s, _f: None)  # wake the poll to reap

    def _reap(self) -> None:
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            code = os.waitstatus_to_exitcode(st)
            self.reaped[pid] = 128 - code if code < 0 else code
            if (
                self.server
                and pid == self.server.pid
                and self.status is None
                and time.monotonic() < self.cleanup_at
            ):
                self.status = self.reaped[pid]

    def _members(self, *, force: bool = True) -> list[ProcessId]:
        """Live processes of the server's tree: our descendants minus the client side.

        A scan reads every /proc/<pid>/stat, the keeper's main cost. Between triggers
        (force=False) it is done at most every SCAN_TICK, or at once after an exit
        (an exited member's children have just reparented to us).
        """
        now = time.monotonic()
        exits = len(self.waiter.exited)
        if not force and exits == self._scan_exits and now - self._scan_at < SCAN_TICK:
            return self._scan_live
        self._scan_at, self._scan_exits = now, exits
        out = []
        for info in descendants(self.me, snapshot()):
            if info.pid in self.client_side:
                continue
            ident = info.ident
            if ident not in self.seen:
                self.seen.add(ident)
                self.waiter.add(ident)
                self._ev(now, "seen", ident.pid, ppid=info.ppid, cmd=" ".join(cmdline(ident.pid)))
            if ident not in self.waiter.exited:
                out.append(ident)
        self._scan_live = out
        return out

    def _step(self, timeout: float) -> None:
        """Wait for anything (exit, event, stderr, signal) for up to `timeout`; handle it."""
        if self.stop:
            raise Interrupted
        fds = [self.wake_r] + [fd for fd in (self.ctrl_r, self.err_r) if fd is not None]
        self.waiter.wait(max(0.0, timeout), extra_fds=fds)
        self._drain_wake()
        self._drain_stderr()
        self._drain_ctrl()
        self._reap()
        if self.stop:
            raise Interrupted

    def _drain_wake(self) -> None:
        try:
            while os.read(self.wake_r, 512):
                pass
        except (BlockingIOError, OSError):
            pass

    def _drain_stderr(self) -> None:
        if self.err_r is None:
            return
        try:
            while True:
                chunk = os.read(self.err_r, 65536)
                if not chunk:
                    os.close(self.err_r)
                    self.err_r = None
                    return
                self.stderr_tail = (self.stderr_tail + chunk)[-STDERR_TAIL:]
        except BlockingIOError:
            return

    def _drain_ctrl(self) -> None:
        while self.ctrl_r is not None:
            try:
                chunk = os.read(self.ctrl_r, 65536)
            except BlockingIOError:
                return
            if not chunk:  # the client is gone; a readable EOF would spin the poll
                os.close(self.ctrl_r)
                self.ctrl_r = None
                return
            self.ctrl_buf += chunk
            while b"\n" in self.ctrl_buf:
                line, self.ctrl_buf = self.ctrl_buf.split(b"\n", 1)
                try:
                    self._on_event(json.loads(line))
                except ValueError:
                    continue

    # -- events ---------------------------------------------------------------------
    def _on_event(self, ev: dict[str, Any]) -> None:
        kind = ev["kind"]
        self.client_cpu = max(self.client_cpu, float(ev.get("cpu", 0.0)))
        f = self.facts
        if kind == "spawned":
            self.server = ProcessId(ev["pid"], ev["start"]) if ev.get("start") else None
            if self.server is not None:
                self.seen.add(self.server)
                self.waiter.add(self.server)
                from mcp_tether.probe.evidence import stdio_links

                self.wire = stdio_links(self.server.pid)
                cmd = " ".join(cmdline(self.server.pid)) or " ".join(self.spec["argv"])
                self._ev(ev["t"], "spawn", ev["pid"], role="server", cmd=cmd)
        elif kind == "spawn-error":
            f.error = ev["reason"]
            self.error_code = ev.get("code")
        elif kind == "handshake":
            if ev["ok"]:
                self.handshake = ev.get("method")
                self._ev(ev["t"], "handshake", self.server.pid if self.server else None)
                if ev.get("warn"):
                    self.warnings.append(ev["warn"])
            elif ev["why"] == "exited" or self._server_gone():
                f.early_exit = True
            else:
                f.error = _handshake_reason(ev, float(self.spec["ready_timeout"]))
                if self.warnings:
                    f.error += f" ({self.warnings[0]})"
        elif kind == "noise":
            self.warnings.append(f"stdout-noise: {ev['line']!r}")
        elif kind == "reaped":
            if ev.get("at", ev["t"]) < self.cleanup_at:  # not our clean-up's SIGKILL
                self.status = ev["status"]
        elif kind == "helper":
            self.client_side.add(ev["pid"])
            self._ev(ev["t"], "spawn", ev["pid"], role="helper", cmd="stdin writer holder")
        elif kind == "trigger":
            f.trigger, f.trigger_what = ev["t"], ev["what"]
            if self.scenario != "close":  # close: the ladder's rungs say it
                on = self.client if self.scenario == "exit" else self.server
                what = "client-exit" if self.scenario == "exit" else ev["what"]
                self._ev(ev["t"], what, on.pid if on else None)
        elif kind == "ready":
            self._keeper_trigger()
        elif kind == "ladder":
            f.rungs = ev["rungs"]
            for r in f.rungs:
                what = {"close-stdin": "eof"}.get(r["action"], r["action"])
                self._ev(r["sent_at"], what, self.server.pid if self.server else None)
            if f.rungs:
                f.trigger, f.trigger_what = f.rungs[0]["sent_at"], "eof"
            self.ladder_done_at = ev["t"]
        elif kind == "idle":
            f.answered = bool(ev["answered"])
            if ev.get("why") == "exited":
                f.early_exit = True
        elif kind == "done":
            self.client_done = True
        elif kind == "client-error":
            f.error = f"probe client failed: {ev['reason']}"

    def _server_gone(self) -> bool:
        return self.server is not None and (
            self.server in self.waiter.exited or self.status is not None
        )

    def _keeper_trigger(self) -> None:
        """The scenario's trigger that the keeper pulls itself."""
        f = self.facts
        if self.scenario in ("crash", "inherited-writer"):
            assert self.client is not None
            t = time.monotonic()
            signal_process(self.client, signal.SIGKILL)
            self._ev(t, "client-killed", self.client.pid)
            f.trigger, f.trigger_what = t, (
                "eof" if self.scenario == "crash" else "parent-death"
            )
        elif self.scenario in ("sigterm", "sigint"):
            sig = signal.SIGTERM if self.scenario == "sigterm" else signal.SIGINT
            t = time.monotonic()
            if self.server is not None and signal_process(self.server, sig) == "sent":
                f.trigger, f.trigger_what = t, self.scenario
                self._ev(t, self.scenario, self.server.pid)
            else:
                f.early_exit = True

    # -- the scenario -----------------------------------------------------------------
    def drive(self) -> None:
        f = self.facts
        rt = float(self.spec["ready_timeout"])
        setup_deadline = time.monotonic() + 3 * rt + float(self.spec.get("idle", 0)) + 5
        # Phase 1: until the trigger (or a failure).
        while f.trigger is None and f.error is None and not f.early_exit:
            if self.scenario == "idle" and f.answered is not None:
                break
            if time.monotonic() > setup_deadline:
                f.error = "the probe client did not reach the trigger in time"
                return
            self._step(SCAN_TICK)
            if self.server is not None:
                self._members(force=False)
            # The server died before the scenario's trigger; give the client a
            # moment to say whether it was during the handshake.
            if (
                self.server is not None
                and self._server_gone()
                and f.trigger is None
                and (self.scenario != "close" or self.handshake is not None)
            ):
                f.early_exit = True
        _tell_runner_ready()
        if f.error is not None or f.early_exit or self.scenario == "idle":
            return
        # Phase 2 (close): the client climbs its ladder; we watch.
        if self.scenario == "close":
            g = float(self.spec.get("grace", GRACE_AFTER_EOF))
            tg = float(self.spec.get("term_grace", TERM_GRACE))
            assert f.trigger is not None or self.ladder_done_at is None
            deadline = time.monotonic() + g + tg + KILL_WAIT + 5
            while self.ladder_done_at is None:
                if time.monotonic() > deadline:
                    f.error = "the probe client's ladder did not finish"
                    return
                self._step(SCAN_TICK)
                self._members(force=False)
            window_end = self.ladder_done_at + self.window
        elif self.scenario == "devnull":
            # The trigger is the spawn itself: allow the server its start-up time (as
            # long as a handshake may take) before the window starts counting.
            assert f.trigger is not None
            window_end = f.trigger + float(self.spec["ready_timeout"]) + self.window
        else:
            assert f.trigger is not None
            window_end = f.trigger + self.window
        # Phase 3: is the whole tree gone within the window?
        self._ev(window_end - self.window, "window-start", None)
        self._ev(window_end, "window-end", None)
        live = self._watch_until(window_end)
        if live and self.scenario in ("sigterm", "sigint") and self.server in live:
            # The host would now SIGKILL its (still connected) server; first, evidence.
            self.killed_evidence = [self._describe(p) for p in live]
            f.killed_by_probe = time.monotonic()
            signal_process(self.server, signal.SIGKILL)
            self._ev(f.killed_by_probe, "sigkill", self.server.pid)
            live = self._watch_until(time.monotonic() + KILL_WAIT)
        if live:
            f.survivors = [self._describe(p) for p in live]
        else:
            exits = [t for p, t in self.waiter.exited.items() if p in self.seen]
            f.gone_at = max(exits) if exits else f.trigger

    def _watch_until(self, end: float) -> list[ProcessId]:
        while True:
            live = self._members(force=False)
            if not live:
                live = self._members()  # confirm with a fresh scan
            if not live:
                self._settle()
                return []
            remaining = end - time.monotonic()
            if remaining <= 0:
                return live
            self._step(min(SCAN_TICK, remaining))

    def _settle(self) -> None:
        """The scan saw no live member: collect the exit events not yet delivered.

        A process that died a moment ago is a zombie in the scan (so not live) while
        its pidfd event is still waiting in the poll; take it now, so that its exit
        instant counts. Dead processes' pidfds are readable at once: this is brief.
        """
        end = time.monotonic() + 1.0
        while self.waiter.pending and time.monotonic() < end:
            self.waiter.wait(0.05)
        # Give the client a moment to report the server's exit status if it reaps it.
        while (
            self.status is None
            and self.server is not None
            and self.server.pid not in self.reaped
            and self.ctrl_r is not None
            and time.monotonic() < end
        ):
            self._step(0.05)

    def _describe(self, p: ProcessId) -> dict[str, Any]:
        from mcp_tether.probe.evidence import collect
        from mcp_tether.proc import read_info

        info = read_info(p.pid)
        return {
            "pid": p.pid,
            "ppid": info.ppid if info else None,
            "ppid_is_probe": bool(info and info.ppid == self.me),
            "cmdline": " ".join(cmdline(p.pid))[:300],
            "evidence": collect(p.pid, self.wire),  # before the clean-up kills anything
        }

    def timeline(self) -> list[dict[str, Any]]:
        """The events, plus each process's exit, in ms since the client was forked."""
        evs = list(self.events)
        # Only what was alive at the window's end was ended by the clean-up; any other
        # exit seen after it began was noticed late (a loaded keeper), not caused by it.
        alive = {d["pid"] for d in self.facts.survivors + self.killed_evidence}
        for p in self.seen:
            t = self.waiter.exited.get(p)
            if t is not None:
                extra: dict[str, Any] = {"status": self.reaped.get(p.pid)}
                if t >= self.cleanup_at:
                    extra["by" if p.pid in alive else "noticed"] = (
                        "probe-cleanup" if p.pid in alive else "late")
                evs.append((t, "exit", p.pid, extra))
        evs.sort(key=lambda e: e[0])
        return [
            dict(e[3], t_ms=round((e[0] - self.t0) * 1000, 1), what=e[1], pid=e[2]) for e in evs
        ]

    # -- cleanup ----------------------------------------------------------------------
    def cleanup(self) -> None:
        """SIGKILL everything we started (all our descendants) and reap it."""
        self._reap()
        self.cleanup_at = time.monotonic()
        for _attempt in range(10):
            procs = [i.ident for i in descendants(self.me, snapshot())]
            if not procs:
                break
            for ident in procs:
                signal_process(ident, signal.SIGKILL)
                self.waiter.add(ident)
            end = time.monotonic() + 2.0
            while any(p not in self.waiter.exited for p in procs) and time.monotonic() < end:
                self.waiter.wait(end - time.monotonic())
            self._reap()
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            self._reap()
            try:
                pid, _st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                self.waiter.wait(0.01)
        self._drain_stderr()

    # -- main -------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        from mcp_tether.probe.client import client_main

        platform.set_subreaper()
        self._setup_signals()
        self.ctrl_r, ctrl_w = os.pipe()
        self.err_r, err_w = os.pipe()
        self.t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the client
            try:
                assert self.ctrl_r is not None and self.err_r is not None
                os.close(self.ctrl_r)
                os.close(self.err_r)
                os.close(self.wake_r)
                os.close(self.wake_w)
                signal.set_wakeup_fd(-1)
                for s in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
                    signal.signal(s, signal.SIG_DFL)
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, 0)
                os.dup2(null, 1)
                os.close(null)
                os.setsid()
                platform.set_pdeathsig(signal.SIGKILL)
                client_main(self.spec, ctrl_w, err_w)
            finally:
                os._exit(70)
        os.close(ctrl_w)
        os.close(err_w)
        assert self.ctrl_r is not None and self.err_r is not None
        os.set_blocking(self.ctrl_r, False)
        os.set_blocking(self.err_r, False)
        self.client = identify(pid) or ProcessId(pid, -1)
        self.client_side.add(pid)
        self._ev(self.t0, "spawn", pid, role="client", cmd="probe client")
        interrupted = False
        try:
            self.drive()
        except Interrupted:
            interrupted = True
        finally:
            self.cleanup()
        return self.result(interrupted)

    def result(self, interrupted: bool) -> dict[str, Any]:
        f = self.facts
        if interrupted:
            f.error = "interrupted"
        verdict, rung, exit_ms = decide(f)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        detail = f.error or ""
        if verdict == "orphaned":
            who = ", ".join(
                f"pid {s['pid']} (ppid {s['ppid']}{' = probe' if s['ppid_is_probe'] else ''})"
                f" {s['cmdline']}"
                for s in f.survivors
            )
            detail = f"alive {self.window:g} s after the trigger: {who}"
        elif verdict == "early-exit":
            detail = f"server exited before the trigger (status {self.status})"
        elif verdict == "killed" and f.killed_by_probe is not None:
            detail = f"did not exit within {self.window:g} s of {self.scenario.upper()}; SIGKILLed"
        if self.server is not None and self.status is None:
            # Only an exit seen before our clean-up is the server's own doing.
            exited = self.waiter.exited.get(self.server)
            if exited is not None and exited < self.cleanup_at:
                self.status = self.reaped.get(self.server.pid)
        if verdict in ("alive", "error"):
            self.status = None  # what our clean-up did to it says nothing about the server
        return {
            "scenario": self.scenario,
            "host_style": self.spec["host_style"],
            "verdict": verdict,
            "passed": passed(self.scenario, verdict),
            "exit_ms": exit_ms,
            "rung": rung,
            "exit_status": self.status,
            "survivors": [
                {"pid": s["pid"], "ppid": s["ppid"], "cmdline": s["cmdline"],
                 "evidence": s["evidence"]}
                for s in f.survivors
            ],
            "warnings": self.warnings,
            "detail": detail,
            "handshake": self.handshake,
            "error_code": self.error_code,
            "stderr_tail": self.stderr_tail.decode(errors="replace"),
            "probe_cpu_ms": round((ru.ru_utime + ru.ru_stime + self.client_cpu) * 1000, 1),
            "trigger_at": f.trigger,
            "gone_at": f.gone_at,
            "t0": self.t0,
            "window_s": self.window,
            "events": self.timeline(),
            "killed_at_window": self.killed_evidence,
        }


def _tell_runner_ready() -> None:
    """One line before the result: our start-up is over, the runner may start another."""
    try:  # noqa: SIM105  # contextlib would pull functools onto the keeper's start-up
        os.write(1, b"ready\n")
    except OSError:
        pass


def _handshake_reason(ev: dict[str, Any], timeout: float) -> str:
    method, why = ev.get("method", "initialize"), ev.get("why")
    if why == "timeout":
        return f"no answer to {method} within {timeout:g} s"
    if why == "stdout-closed":
        return f"server closed its stdout without answering {method} (still running)"
    if why == "error-response":
        err = ev.get("error") or {}
        return f"{method} failed: {err.get('message', err)}"
    return f"handshake failed ({why})"


def main() -> None:
    spec = json.loads(sys.argv[1])
    platform.set_pdeathsig(signal.SIGKILL)
    if spec.get("parent") and os.getppid() != spec["parent"]:
        os._exit(1)  # our parent is already gone: nobody wants the answer
    result = Keeper(spec).run()
    os.write(1, (json.dumps(result) + "\n").encode())
    os._exit(0)


if __name__ == "__main__":
    main()
