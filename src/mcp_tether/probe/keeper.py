"""One scenario, start to finish, in a process of its own: the keeper.

    probe (runner) -> keeper (child subreaper) -> client (forked) -> server -> ...

The loop, the subreaper, the tree scan, the signals and the end are the core's
(`proc.keeper.BaseKeeper`); `ProbeKeeper` says what is the probe's own: the client it
forks, what the client's events mean, the server's tree and the scenario's phases. Every
process of the scenario that loses its parent (the server when the client dies, a
grandchild when a wrapper dies, a daemon after its double fork) reparents to the keeper,
so the tree is exactly its descendants minus the client side, whatever the server does
with sessions and groups. Exit instants come from pidfds, not sleeps.

What the scenario does is the scenario module's business (`scenarios/`); the keeper
runs its phases: until the trigger, the window, then (for survivors) the horizon.
Its verdict is on that whole tree: the direct child's exit before the trigger is an
early exit only when no live member still holds the server's stdio ends (a launcher's
daemon, a helper handed the stdout, carry the session on); what an early exit leaves
running is named in the result before the clean-up ends it.

It reads its `Spec` from stdin (one JSON line; later lines carry what the runner learnt,
e.g. the server's start-up time) and prints "ready ..." then one JSON result line on
stdout. Besides SIGTERM/SIGINT, its parent's death stops it (PDEATHSIG SIGTERM, and EOF
on stdin, whose write end only the runner holds): a SIGKILLed probe leaves nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_tether import platform
from mcp_tether.container import end_owned_by, follow_for, maybe_container_run
from mcp_tether.guard.report import ReportPipe
from mcp_tether.guard.result import signame
from mcp_tether.ladder import KILL_WAIT
from mcp_tether.probe.client import client_main
from mcp_tether.probe.evidence import collect, stdio_links
from mcp_tether.probe.outcome import Event, Exit, Observation
from mcp_tether.probe.outcome import result as result_line
from mcp_tether.probe.scenarios import get as get_scenario
from mcp_tether.probe.shutdowns import ShutdownFile
from mcp_tether.probe.spec import READY_CEILING, STARVED_CAP, Spec
from mcp_tether.probe.verdict import Facts, Rung, Survivor
from mcp_tether.proc import ProcessId, cmdline, identify, read_info
from mcp_tether.proc.fds import holds
from mcp_tether.proc.keeper import BaseKeeper
from mcp_tether.proc.progress import Starvation
from mcp_tether.proc.spawn import fork_call

if TYPE_CHECKING:
    from mcp_tether.probe.record import ScenarioRecord, TetherShutdown

# The container of a `docker run -i` server, as one member of the tree: never a real pid.
CONTAINER = ProcessId(0, -1.0)
# After an early exit, how long what is left of the tree may take to end by itself before
# it is named as left running (a wrapper's children dying with it take milliseconds).
LEFTOVER_SETTLE = 0.5
STDERR_TAIL = 2000
SCAN_TICK = 0.25  # seconds between tree rescans while nothing happens


class ProbeKeeper(BaseKeeper["ScenarioRecord"]):
    """One probe scenario's keeper: the server's tree as the client starts it, what the
    client's events mean, the scenario's phases and the facts its verdict is judged on."""

    def __init__(self, spec: Spec, in_fd: int | None = None, in_buf: bytes = b"") -> None:
        super().__init__()
        self.spec = spec
        self.scenario = spec.scenario
        self.sc = get_scenario(spec.scenario)
        self.window = spec.effective_window
        self.client: ProcessId | None = None
        self.client_side: set[int] = set()  # pids of the client and its helper
        self.helpers: set[ProcessId] = set()  # the client's helpers, by identity
        self.server: ProcessId | None = None
        self.seen: set[ProcessId] = set()
        self.facts = Facts(self.scenario, judge=self.sc.judge)
        self.warnings: list[str] = []
        self.status: int | None = None
        self.signaled: bool | None = None  # the server died of a signal (None: not seen)
        self.stderr_tail = b""
        self.in_r = in_fd  # the runner's pipe: later messages, and EOF when it dies
        self.in_buf = in_buf  # what was read of it after the spec
        self.ctrl_r: int | None = None  # the client's event pipe, set by start()
        self.client_cpu = 0.0
        self.ladder_done_at: float | None = None
        self.handshake: str | None = None
        self.spawned_at: float | None = None
        self.startup: float | None = None  # spawn -> handshake answered, seconds
        self.error_code: int | None = None
        self.at_window_end: list[Survivor] = []  # escalation: who was alive then
        self._scan_at = 0.0
        self._scan_exits = -1
        self._scan_live: list[ProcessId] = []
        self.events: list[Event] = []  # the timeline (`events` in the result)
        self.t0 = time.monotonic()
        self.wire: list[str] = []  # the server's stdio ends as spawned (pipe:/socket:)
        self.wire_keys: set[tuple[int, int]] = set()  # the same ends, as (st_dev, st_ino)
        self.follow: Any = None  # a container-run server: its ContainerFollow
        # A guarded server: the guard's report (guard.report), read by `outcome`.
        self.report: ReportPipe | None = None
        self.shutdowns: ShutdownFile | None = None  # a Node tether()'s records (shutdowns.py)

    # -- what an event of the client means (the core's `dispatch`: kind -> handle_<kind>) --
    def handle_spawned(self, ev: dict[str, Any]) -> None:
        self.spawned_at = ev["t"]
        self.wire_keys = {(int(d), int(i)) for d, i in ev.get("wire") or ()}
        self.server = ProcessId(ev["pid"], ev["start"]) if ev.get("start") else None
        if self.server is not None:
            self.seen.add(self.server)
            self.waiter.add(self.server)
            self.wire = stdio_links(self.server.pid)
            cmd = " ".join(cmdline(self.server.pid)) or " ".join(self.spec.argv)
            self._ev(ev["t"], "spawn", ev["pid"], role="server", cmd=cmd)

    def handle_spawn_error(self, ev: dict[str, Any]) -> None:
        self.facts.error = ev["reason"]
        self.error_code = ev.get("code")

    def handle_handshake(self, ev: dict[str, Any]) -> None:
        f = self.facts
        if ev["ok"]:
            self.handshake = ev.get("method")
            self._ev(ev["t"], "handshake", self.server.pid if self.server else None)
            if self.spawned_at is not None:
                self.startup = ev["t"] - self.spawned_at
            if ev.get("warn"):
                self.warnings.append(ev["warn"])
        elif ev["why"] == "exited" or self.launcher_gone_alone():
            f.early_exit = True
        else:
            f.error = _handshake_reason(ev, self.spec.ready_timeout)
            if self.warnings:
                f.error += f" ({self.warnings[0]})"

    def handle_noise(self, ev: dict[str, Any]) -> None:
        self.warnings.append(f"stdout-noise: {ev['line']!r}")

    def handle_reaped(self, ev: dict[str, Any]) -> None:
        if ev.get("at", ev["t"]) < self.cleanup_at:  # not our clean-up's SIGKILL
            self.status = ev["status"]
            self.signaled = ev.get("signaled")

    def handle_helper(self, ev: dict[str, Any]) -> None:
        self.client_side.add(ev["pid"])
        if ev.get("start") is not None:  # without a subreaper, found by identity only
            self.helpers.add(ProcessId(ev["pid"], ev["start"]))
        self._ev(ev["t"], "spawn", ev["pid"], role="helper", cmd="stdin writer holder")

    def handle_trigger(self, ev: dict[str, Any]) -> None:
        f = self.facts
        f.trigger, f.trigger_what = ev["t"], ev["what"]
        on = self.client if self.sc.trigger_is_client_exit else self.server
        what = "client-exit" if self.sc.trigger_is_client_exit else ev["what"]
        self._ev(ev["t"], what, on.pid if on else None)

    def handle_ready(self, ev: dict[str, Any]) -> None:
        f = self.facts
        pulled = self.sc.keeper_trigger(self)
        if pulled is None:
            f.early_exit = True
        else:
            f.trigger, f.trigger_what = pulled.at, pulled.what
            if pulled.missed:  # meant for the server, which was already gone
                pid = self.server.pid if self.server else None
                self._ev(pulled.at, pulled.what, pid, missed="gone")

    def handle_ladder(self, ev: dict[str, Any]) -> None:
        f = self.facts
        f.rungs = [Rung(r["action"], r["sent_at"], r.get("outcome")) for r in ev["rungs"]]
        for r in f.rungs:
            what = {"close-stdin": "eof"}.get(r.action, r.action)
            self._ev(r.sent_at, what, self.server.pid if self.server else None)
        if f.rungs:
            f.trigger, f.trigger_what = f.rungs[0].sent_at, "eof"
        self.ladder_done_at = ev["t"]

    def handle_idle(self, ev: dict[str, Any]) -> None:
        self.facts.answered = bool(ev["answered"])
        if ev.get("why") == "exited":
            self.facts.early_exit = True

    def handle_call(self, ev: dict[str, Any]) -> None:
        self.facts.call_answered = bool(ev["answered"])

    def handle_client_error(self, ev: dict[str, Any]) -> None:
        self.facts.error = f"probe client failed: {ev['reason']}"

    def _server_gone(self) -> bool:
        return self.server is not None and (
            self.server in self.waiter.exited or self.status is not None
        )

    def launcher_gone_alone(self) -> bool:
        """The direct child exited and nothing of its tree holds the client's stdio.

        The tree rule: a launcher that double-forked its server, or a server
        that handed its stdout to a helper, is not an early exit while a member of its
        tree still holds the server's stdio ends: the session goes on with whoever
        holds them, and the verdict is on the whole tree. "Nobody" is confirmed with a
        full scan (a member being born may be missing from the tree walk).
        """
        if not self._server_gone():
            return False
        return not self._stdio_holders(force=False) and not self._stdio_holders()

    # -- what scenarios call ------------------------------------------------------------
    def kill_client(self, sig: int) -> None:
        assert self.client is not None
        t = time.monotonic()
        self.signal_process(self.client, sig)
        self._ev(t, "client-killed", self.client.pid)

    def signal_server(self, sig: int, *, group: bool = False) -> bool:
        """Send `sig` to the server (identity-checked); False when it is already gone.

        `group`: to the process group the server leads (the python host style spawns it
        in a new session, so its pgid is its pid), as the Python SDK's killpg does: it
        reaches every member still in the group, even after the leader has exited. The
        group is proven ours by a live member of the tree still in it (`signal_group`).
        """
        t = time.monotonic()
        if self.server is None:
            return False
        if group:
            members = [self.server, *self._members(force=False)]
            sent = self.signal_group(self.server.pid, sig, members) == "sent"
        else:
            sent = self.signal_process(self.server, sig) == "sent"
        if sent:
            extra = {"group": True} if group else {}
            self._ev(t, signame(sig).lower(), self.server.pid, **extra)
        return sent

    def tree_still_serving(self) -> bool:
        """The direct child is gone, but a member of its tree holds the client's stdio."""
        return self.server is not None and not self.launcher_gone_alone()

    def live_members(self) -> list[ProcessId]:
        return self._members(force=False)

    def wait_for_ladder(self) -> float | None:
        """Watch while the client climbs its ladder; the instant it ended (None: stuck)."""
        # Each rung may be extended by what the tree waited for a CPU (client.wait).
        rungs = (1 + STARVED_CAP) * (self.spec.grace + self.spec.term_grace)
        deadline = time.monotonic() + rungs + KILL_WAIT + 5
        while self.ladder_done_at is None:
            if time.monotonic() > deadline:
                self.facts.error = "the probe client's ladder did not finish"
                return None
            self.step(SCAN_TICK)
            self._members(force=False)
        return self.ladder_done_at

    def escalate(self, live: list[ProcessId], *, group: bool = False) -> list[ProcessId]:
        """After a signal's window: SIGKILL the still-connected server, as a host would
        (`group`: its process group, as the Python SDK's second killpg does)."""
        if self.server is None or not live or (not group and self.server not in live):
            return live
        # Described before the SIGKILL: after it, a survivor's signal dispositions and
        # state are those of a process being torn down (the diagnosis reads them).
        described = [self._describe(p) for p in live]
        killed = time.monotonic()
        if group:
            if self.signal_group(self.server.pid, signal.SIGKILL, live) != "sent":
                return live  # nobody left in the group: what is left escaped it
        else:
            self.signal_process(self.server, signal.SIGKILL)
        self.at_window_end = described
        self.facts.killed_by_probe = killed
        self._ev(killed, "sigkill", self.server.pid, **({"group": True} if group else {}))
        return self._watch_until(lambda: killed + KILL_WAIT)

    # -- the scenario (the core's `keep`) ----------------------------------------------
    def keep(self) -> None:
        """The scenario's phases: until the trigger, the window, the horizon."""
        f = self.facts
        if not self._until_trigger():
            return
        _tell_runner_ready(self.startup)
        if f.early_exit:
            self._name_leftovers()
        if f.error is not None or f.early_exit or f.judge == "answer":
            return
        live = self._window()
        if live:
            self._horizon(live)

    def _until_trigger(self) -> bool:
        """Phase 1: until the trigger (or a failure); False: the client was too slow."""
        f = self.facts
        setup_deadline = time.monotonic() + 3 * self.spec.ready_ceiling + self.spec.idle + 5
        while f.trigger is None and f.error is None and not f.early_exit:
            if f.judge == "answer" and f.answered is not None:
                break
            if time.monotonic() > setup_deadline:
                f.error = "the probe client did not reach the trigger in time"
                return False
            self.step(SCAN_TICK)
            if self.server is not None:
                self._members(force=False)
            # The server died before the scenario's trigger.
            if (
                self.server is not None
                and f.trigger is None
                and self.launcher_gone_alone()
                and f.answered is None  # idle: answered, then its ladder ended it
                and (not self.sc.early_exit_needs_handshake or self.handshake is not None)
            ):
                f.early_exit = True
        return True

    def _window(self) -> list[ProcessId]:
        """Phase 2: the window, however the scenario places its end; what is still live
        at its end (none: the tree is gone, or the scenario could not place the end)."""
        f = self.facts
        assert f.trigger is not None
        window_end_at = self.sc.window(self, f.trigger)
        end = window_end_at()
        if end is None:
            return []
        # The window counts the tree's own time: what it waited for a CPU on a loaded
        # machine is added (slower, never wrong), at most STARVED_CAP windows.
        starved = Starvation()

        def window_end() -> float:
            credit = min(starved.update(self._scan_live), STARVED_CAP * self.window)
            return (window_end_at() or 0.0) + credit

        live = self._watch_until(window_end)
        end = window_end_at() or end
        self._ev(end - self.window, "window-start", None)
        credit = min(starved.waited, STARVED_CAP * self.window)
        if credit >= 0.05:
            self.warnings.append(f"window extended by {credit:.1f} s: the server's tree "
                                 "waited that long for a CPU (a loaded machine)")
        self._ev(end + credit, "window-end", None)
        after = getattr(self.sc, "after_window", None)
        if live and after is not None:
            live = after(self, live)
        if not live:
            exits = [t for p, t in self.waiter.exited.items() if p in self.seen]
            if self.follow is not None and self.follow.stopped_at is not None:
                exits.append(self.follow.stopped_at)
            f.gone_at = max(exits) if exits else f.trigger
        return live

    def _horizon(self, live: list[ProcessId]) -> None:
        """Phase 3: the survivors of the window, watched for the horizon. Gone within it:
        lingered (and of what); else orphaned."""
        f = self.facts
        window_closed = time.monotonic()
        f.survivors = [self._describe(p) for p in live]
        self._ev(window_closed, "horizon-start", None)
        self._ev(window_closed + self.spec.horizon_s, "horizon-end", None)
        self._watch_until(lambda: window_closed + self.spec.horizon_s)
        exited = self.waiter.exited
        for s, p in zip(f.survivors, live, strict=True):
            if p == CONTAINER and self.follow.stopped_at is not None:
                s.gone_at, s.status = self.follow.stopped_at, self.follow.exit_code
            elif p in exited and exited[p] < self.cleanup_at:
                s.gone_at = exited[p]
                s.status = self.statuses.get(p.pid)

    def _name_leftovers(self) -> None:
        """An early exit that left members of the tree running: name them (the clean-up
        ends them), after a moment in which they may still end by themselves."""
        settle = time.monotonic() + LEFTOVER_SETTLE
        live = self._watch_until(lambda: settle)
        live = [p for p in live if p != CONTAINER]
        self.facts.survivors = [self._describe(p) for p in live]

    def _watch_until(self, end: Callable[[], float]) -> list[ProcessId]:
        while True:
            live = self._members(force=False)
            if not live:
                live = self._members()  # confirm with a fresh scan
            # A container's processes are no descendants of ours: ask its engine.
            boxed = self.follow is not None and not live and self.follow.running()
            if not live and not boxed:
                self._settle()
                return []
            remaining = end() - time.monotonic()
            if remaining <= 0:
                live = self._members() or live  # the survivors, from a full scan
                if self.follow is not None and (boxed or self.follow.running()):
                    live = [*live, CONTAINER]
                return live
            self.step(min(SCAN_TICK, remaining))

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
            and self.server.pid not in self.statuses
            and self.ctrl_r is not None
            and time.monotonic() < end
        ):
            self.step(0.05)
        self.reap()

    def _describe(self, p: ProcessId) -> Survivor:
        """One survivor, with the evidence of what keeps it alive (taken before the
        clean-up kills anything)."""
        if p == CONTAINER:  # the container of a `docker run -i` server
            inside = self.follow.survivors()
            what = "; ".join(f"`{d['cmdline']}`" for d in inside)[:300]
            return Survivor(0, f"container {self.follow.short_id}: {what}",
                            container=self.follow.short_id)
        info = read_info(p.pid)
        return Survivor(p.pid, " ".join(cmdline(p.pid))[:300],
                        ppid=info.ppid if info else None,
                        ppid_is_probe=bool(info and info.ppid == self.me),
                        evidence=collect(p.pid, self.wire))

    # -- plumbing: the timeline, the server's status, the tree scan -----------------------
    def _ev(self, t: float, what: str, pid: int | None, **extra: Any) -> None:
        """Note one event of the timeline (monotonic instant, what, which process)."""
        self.events.append(Event(t, what, pid, extra))

    def on_exit(self, pid: int, status: int) -> None:
        if (
            self.server
            and pid == self.server.pid
            and self.status is None
            and time.monotonic() < self.cleanup_at
        ):
            self.status = status

    def _members(self, *, force: bool = True) -> list[ProcessId]:
        """Live processes of the server's tree: our descendants minus the client side.

        A full scan reads every /proc/<pid>/stat: its cost grows with the whole machine's
        process table, nine keepers at a time. Between triggers (force=False) the scan
        is done at most every SCAN_TICK, or at once after an exit (an exited member's
        children have just reparented to us), and walks only our own tree
        (`tree(full=False)`) where the kernel lists children. A forced scan (confirming that
        the tree is gone, listing the survivors at a deadline) always reads all of /proc.
        """
        now = time.monotonic()
        exits = len(self.waiter.exited)
        if not force and exits == self._scan_exits and now - self._scan_at < SCAN_TICK:
            return self._scan_live
        self._scan_at, self._scan_exits = now, exits
        out = []
        for info in self.tree(full=force):
            if info.pid in self.client_side:
                continue
            ident = info.ident
            if ident not in self.seen:
                self.seen.add(ident)
                self.waiter.add(ident)
                self._ev(now, "seen", ident.pid, ppid=info.ppid,
                         cmd=" ".join(cmdline(ident.pid)))
            if ident not in self.waiter.exited:
                out.append(ident)
        # Without a subreaper, a member whose parent died is no descendant of ours any
        # more: still a member, by identity, until the waiter sees it exit. A process seen
        # before the client named it its helper is the client's, not the server's.
        out += [i for i in self.seen if i not in self.waiter.exited and i not in out
                and i.pid not in self.client_side]
        self._scan_live = out
        return out

    def _stdio_holders(self, *, force: bool = True) -> list[ProcessId]:
        """Live members of the tree that hold the server's stdio ends as spawned (the
        core's open-file check, `proc.fds.holds`); only a sure "holds" counts."""
        if not self.wire_keys:
            return []
        return [p for p in self._members(force=force) if holds(p.pid, self.wire_keys)]

    # -- what the loop watches ------------------------------------------------------------
    def _on_stderr(self, chunk: bytes) -> None:
        self.stderr_tail = (self.stderr_tail + chunk)[-STDERR_TAIL:]

    def _on_client(self, ev: Any) -> None:
        """One event of the client: its kind says what it means (`handle_<kind>`)."""
        # An event with a field that does not parse is skipped, as a line that is not JSON.
        with contextlib.suppress(ValueError):
            kind = ev["kind"]
            self.client_cpu = max(self.client_cpu, float(ev.get("cpu", 0.0)))
            self.dispatch(kind, ev)

    def _on_runner(self, msg: Any) -> None:
        """Messages from the runner (EOF means it died, a SIGKILLed probe: stop)."""
        if msg.get("startup") is not None and self.spec.startup is None:
            self.spec.startup = float(msg["startup"])

    def _ctrl_closed(self) -> None:
        self.ctrl_r = None

    # -- the core's hooks -----------------------------------------------------------------
    def start(self) -> None:
        super().start()
        ctrl_r, ctrl_w = os.pipe()
        err_r, err_w = os.pipe()
        self.ctrl_r = ctrl_r
        self.follow = _container_follow(self.spec)
        if self.spec.guarded:
            self.report = ReportPipe()
        self.shutdowns = ShutdownFile()
        self.t0 = time.monotonic()

        def drop_keeper_state() -> None:  # in the client, before the core's set-up
            os.close(ctrl_r)
            os.close(err_r)
            self.inbox.restore()
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(null, 1)
            os.close(null)
            if self.report is not None:  # the guard the client starts writes to it
                self.report.offer(self.spec.env)
            if self.shutdowns is not None:  # a tethered Node server appends to it
                self.shutdowns.offer(self.spec.env)

        # The core's child set-up: own session, default signals, and death with the
        # keeper (re-checked: the keeper may already be gone).
        pid = fork_call(lambda: client_main(self.spec, ctrl_w, err_w),
                        before=drop_keeper_state, new_session=True,
                        pdeathsig=signal.SIGKILL, reset_signals=True)
        os.close(ctrl_w)
        os.close(err_w)
        if self.report is not None:
            self.report.close_writer()
        os.set_blocking(ctrl_r, False)
        os.set_blocking(err_r, False)
        self.watch(err_r, self._on_stderr, output=True)
        self.watch(ctrl_r, self._on_client, on_eof=self._ctrl_closed, lines=True)
        if self.in_r is not None:
            self.watch_parent(self.in_r, "the probe that ran this scenario died",
                              self._on_runner, lines=True, buf=self.in_buf)
        self.client = identify(pid) or ProcessId(pid, -1)
        self.client_side.add(pid)
        self._ev(self.t0, "spawn", pid, role="client", cmd="probe client")

    def interrupted(self) -> None:
        self.facts.error = self.stop_why

    def before_end(self) -> None:
        if self.follow is not None:
            self.follow.end()  # removes it if it still runs (rm -f), or if --rm / ours

    def known(self) -> set[ProcessId]:
        return {*self.seen, *self.helpers}

    def after_end(self) -> None:
        if self.follow is None:  # a guard we SIGKILLed cannot end the container it owns
            end_owned_by(self.spec.argv, self.seen)

    def result(self, outcome: None) -> ScenarioRecord:
        return result_line(self.observation())

    def observation(self) -> Observation:
        """What this keeper saw, as typed facts for the result line."""
        exited = self.waiter.exited
        return Observation(
            spec=self.spec, facts=self.facts, stderr=self.stderr_tail.decode(errors="replace"),
            status=self.status, signaled=self.signaled, server=self.server,
            exits=[Exit(p, exited[p], self.statuses.get(p.pid)) for p in self.seen if p in exited],
            cleanup_at=self.cleanup_at, t0=self.t0, events=self.events,
            at_window_end=self.at_window_end, warnings=self.warnings, startup=self.startup,
            handshake=self.handshake, error_code=self.error_code, client_cpu=self.client_cpu,
            report=self.report,
            shutdowns=self._shutdown_records(),
        )

    def _shutdown_records(self) -> list[TetherShutdown]:
        if self.shutdowns is None:
            return []
        records = self.shutdowns.read()
        self.shutdowns.close()
        return records


def _container_follow(spec: Spec) -> Any:
    """A `docker|podman run` server: follow its container (the command gets a cidfile and
    labels naming this keeper), else None."""
    if not maybe_container_run(spec.argv):
        return None
    follow = follow_for(spec.argv)
    if follow is not None:
        spec.argv = follow.argv
    return follow


def _tell_runner_ready(startup: float | None) -> None:
    """One line before the result: our start-up is over (and how long the server's took)."""
    line = "ready " + json.dumps({"startup": startup}) + "\n"
    with contextlib.suppress(OSError):  # the runner is gone: the tree is ended all the same
        os.write(1, line.encode())


def _handshake_reason(ev: dict[str, Any], timeout: float) -> str:
    method, why = ev.get("method", "initialize"), ev.get("why")
    if why == "timeout":
        waited = float(ev.get("waited") or timeout)
        if ev.get("busy"):
            return (f"no answer to {method} after {waited:.0f} s, the server still working "
                    f"(the ceiling: {READY_CEILING} x --ready-timeout {timeout:g} s)")
        return (f"no answer to {method}: the server idle and silent for {timeout:g} s "
                f"(--ready-timeout; waited {waited:.0f} s in all)")
    if why == "stdout-closed":
        return f"server closed its stdout without answering {method} (still running)"
    if why == "error-response":
        err = ev.get("error") or {}
        return f"{method} failed: {err.get('message', err)}"
    return f"handshake failed ({why})"


def _read_spec(fd: int) -> tuple[Spec, bytes]:
    """The first line on stdin is the spec; what follows it is kept for later."""
    buf = b""
    while b"\n" not in buf:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            os._exit(1)  # the runner is gone before it told us anything
        buf += chunk
    line, rest = buf.split(b"\n", 1)
    return Spec.from_json(line), rest


def main() -> None:
    # SIGTERM, not SIGKILL, at the runner's death: the keeper must live to end its tree.
    platform.set_pdeathsig(signal.SIGTERM)
    spec, rest = _read_spec(0)
    if spec.parent and os.getppid() != spec.parent:
        os._exit(1)  # our parent is already gone: nobody wants the answer
    os.set_blocking(0, False)
    out = ProbeKeeper(spec, in_fd=0, in_buf=rest).run()
    with contextlib.suppress(OSError):  # the runner is gone (a killed probe)
        os.write(1, (json.dumps(out) + "\n").encode())
    os._exit(0)


if __name__ == "__main__":
    main()
