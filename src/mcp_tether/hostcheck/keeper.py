"""One scenario of the host check, in a process of its own: the keeper.

    hostcheck (driver) -> keeper (child subreaper) -> [ttyshell ->] host -> [wrapper ->]
        recorder -> grandchild

The loop, the subreaper, the tree scan, the signals and the end are the core's
(`proc.keeper.BaseKeeper`): the recorder and its grandchild reparent to the keeper when
the host (or the recorder) goes, so after the host is gone "what is left" is exactly the
keeper's live descendants. What the keeper is told is `spec.py`'s, the row it makes of
what it saw `outcome.py`'s; `HostKeeper` says what is the host check's own: how the host
is started, what a recorder's event means, the scenario's action and the verdict.

Guarantees:
- Every wait is event-timed: the recorder's events arrive through a FIFO, exits through
  pidfds, signals through the core's inbox; deadlines only bound them.
- Besides SIGTERM/SIGINT, the driver's death stops it (PR_SET_PDEATHSIG SIGTERM, and EOF
  on a pipe whose write end only the driver holds): a SIGKILLed check leaves nothing.
- Signals to the host go through the core's `signal_process` (identity re-checked).
- With a hold point (`CheckSpec.hold`), the trigger is sent while the recorder still holds
  its answer (to `tools/list` or `initialize`), and the hold is released right after
  it: a one-shot host is ended by the scenario, not by its own end of work. A host
  that began ending the recorder before the trigger (closed its stdin, signalled it)
  gets the verdict `preempted`, never one that would be the outcome of that race.
- The result is one JSON object written to the driver's pipe (`outcome.result_row`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from mcp_tether.hostcheck import keys, ps_view
from mcp_tether.hostcheck.config import Placement, host_env, write_recorder
from mcp_tether.hostcheck.outcome import State, preempted, recorded_events, result_row
from mcp_tether.hostcheck.record import HostCheckRow, Layer, OtherLeft, Outcome
from mcp_tether.hostcheck.scenarios import SCENARIOS, VERDICT_WORDS, decide
from mcp_tether.hostcheck.spec import PLACEHOLDER, CheckSpec, is_recorder, recorder_argv, role_of
from mcp_tether.hostcheck.who import SIGNS
from mcp_tether.proc import ProcessId, cmdline, descendants, identify, read_info, snapshot
from mcp_tether.proc.keeper import BaseKeeper, Interrupted
from mcp_tether.proc.spawn import spawn
from mcp_tether.scan.superseded import Samples

__all__ = ["HostKeeper", "run_keeper"]

PS_LOOKS = 8  # reconnect: `ps` looks spread over the window (superseded needs several)

TAIL = 2000
SCREEN = 65536  # what an --after-edit wait looks at: the terminal's last output, this long
# How long a host's helper that outlives it (a guard, a wrapper) may go on ending the
# server after the host is gone: the SDK ladders' 2 s + 2 s, and a margin.
HELPER_GRACE = 5.0
# Under a pty the host runs as the foreground job of this stand-in for a terminal's shell
# (the session leader), which tells us the host's pid; see ttyshell.py.
TTYSHELL = str(Path(__file__).resolve().parent / "ttyshell.py")


class HostKeeper(BaseKeeper[HostCheckRow]):
    """One host check scenario's keeper: the host it starts with the recorder, what the
    recorder's events mean, the scenario's action on the host and the verdict on what the
    host left."""

    def __init__(self, spec: CheckSpec, life_fd: int) -> None:
        super().__init__()
        self.spec = spec
        self.sc = SCENARIOS[spec.scenario]
        # reconnect: `ps`'s counter samples, from a look before the edit (which also
        # shows the old copy matching the entry) to the end of the window
        self.ps_samples = Samples()
        # Nothing is written to the driver's pipe; its EOF is its death: stop, leave nothing.
        self.watch_parent(life_fd, "driver died")
        self.s = State(statuses=self.statuses)
        self.events_dir = os.path.join(spec.work, "events")
        self.stdin_w: int | None = None
        self.master: int | None = None
        self.log_path: str | None = None  # the host's stdout+stderr file (not under a pty)
        self.placement: Placement | None = None
        self.shell: ProcessId | None = None  # the tty shell, under a pty
        self.release_fd: int | None = None  # the hold's FIFO; closing it releases the hold
        self.screen = b""  # the terminal's output since the last keys typed (--after-edit)
        self.others: list[OtherLeft] = []  # others_left(), before the clean-up
        self.killed: list[int] = []  # the recorder pids the clean-up had to kill
        # What a subclass adds to the host's start (the stand-in model's keeper): variables,
        # keys on the recorder's entry, TOML before it, placeholders in the host's argv,
        # and processes of the keeper's own that are not the host's (never "left").
        self.more_env: dict[str, str] = {}
        self.entry_extra: dict[str, Any] = {}
        self.toml_head = ""
        self.argv_subs: dict[str, str] = {}
        self.helpers: set[int] = set()

    # -- plumbing -----------------------------------------------------------------------
    def mark(self, t: float, what: str, pid: int | None, **extra: Any) -> None:
        self.s.marks.append({"t": t, "what": what, "pid": pid, **extra})

    def on_exit(self, pid: int, status: int) -> None:
        # The host's status: its own when it is our child, else its tty shell's (the
        # shell exits with its job's status).
        ours = [p.pid for p in (self.s.host, self.shell) if p is not None]
        if pid in ours and self.s.host_status is None:
            self.s.host_status = status

    # -- what the loop watches: the recorders' events, the terminal -----------------------
    def _on_recorder(self, ev: Any) -> None:
        """One event of a recorder: its `what` says what it means (`handle_<what>`)."""
        pid = int(ev.get("pid", 0))
        what = ev.get("what")
        self.dispatch(what, ev, pid)
        if what in SIGNS and self.s.first_sign is None:  # the host is ending it
            self.s.first_sign = ev

    def handle_start(self, ev: dict[str, Any], pid: int) -> None:
        if pid not in self.s.recorders:
            ident = identify(pid)
            # Ours only if it runs the recorder: a pid is never taken on its word alone.
            if ident is not None and is_recorder(cmdline(pid)):
                self.s.recorders[pid] = ident
                self.s.roles[pid] = ev.get("role", "server")
                self.waiter.add(ident)

    def handle_initialized(self, ev: dict[str, Any], pid: int) -> None:
        if self.s.initialized_at is None:
            self.s.initialized_at = float(ev["t"])

    def handle_hold(self, ev: dict[str, Any], pid: int) -> None:
        if self.s.hold_at is None:
            self.s.hold_at, self.s.hold_point = float(ev["t"]), str(ev.get("point"))

    def _on_screen(self, chunk: bytes) -> None:
        self.s.tail = (self.s.tail + chunk)[-TAIL:]
        self.screen = (self.screen + chunk)[-SCREEN:]

    def _master_closed(self) -> None:
        self.master = None

    def host_gone(self) -> bool:
        h = self.s.host
        if h is None:
            return True
        if h in self.waiter.exited:
            self.s.host_exit = self.s.host_exit or self.waiter.exited[h]
            return True
        return False

    def live_recorders(self) -> list[int]:
        return [pid for pid, ident in self.s.recorders.items() if ident not in self.waiter.exited]

    # -- the scenario -------------------------------------------------------------------
    def start_host(self) -> None:
        """The recorders' channels, then the host (under a pty: as its tty shell's job)."""
        spec = self.spec
        self._open_channels()
        argv, env, cwd = self._host_command()
        pid_r = pid_w = log = None
        try:
            if spec.pty or self.sc.pty:  # its output is the screen (s.tail), no host.log
                self.master, slave = os.openpty()
                os.set_blocking(self.master, False)
                self.watch(self.master, self._on_screen, on_eof=self._master_closed,
                           output=True)
                fds = (slave, slave, slave)
                pid_r, pid_w = os.pipe()
                argv = [sys.executable, TTYSHELL, str(pid_w), *argv]
            else:
                slave = None
                self.log_path = os.path.join(spec.work, "host.log")
                log = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                stdin_r, self.stdin_w = os.pipe()
                fds = (stdin_r, log, log)
            self.s.t0 = time.monotonic()
            child = spawn(argv, env=env, cwd=cwd, stdin=fds[0], stdout=fds[1], stderr=fds[2],
                          new_session=True, pass_fds=[pid_w] if pid_w is not None else [])
        finally:
            if log is not None:
                os.close(log)
            if pid_w is not None:
                os.close(pid_w)
            if self.master is not None and slave is not None:
                os.close(slave)
            elif self.stdin_w is not None:
                os.close(stdin_r)
        child.close()
        host = child.ident
        if pid_r is not None:  # the shell's foreground job is the host
            self.shell = child.ident
            self.waiter.add(child.ident)
            self.mark(self.s.t0, "spawn", child.pid, cmd="tty shell")
            host = self._read_host(pid_r) or child.ident
        self.s.host = host
        self.waiter.add(host)
        self.mark(self.s.t0, "spawn", host.pid, role="client", cmd=" ".join(spec.argv))

    def _open_channels(self) -> None:
        """The recorders' events FIFO (watched) and, with a hold, the FIFO that releases it
        (once: a subclass may open them before the host, for a helper of its own)."""
        fifo_path = os.path.join(self.events_dir, "events.fifo")
        if os.path.exists(fifo_path):
            return
        os.makedirs(self.events_dir, exist_ok=True)
        os.mkfifo(fifo_path, 0o600)
        # Read-write: opening never waits for a writer, and EOF never comes.
        self.fifo = os.open(fifo_path, os.O_RDWR | os.O_NONBLOCK)
        self.watch(self.fifo, self._on_recorder, lines=True)
        if self.spec.hold != "none":
            release = os.path.join(self.events_dir, "release.fifo")
            os.mkfifo(release, 0o600)
            # Ours is the only writer: closing it is the release (see the recorder).
            self.release_fd = os.open(release, os.O_RDWR | os.O_NONBLOCK)

    def _host_command(self) -> tuple[list[str], dict[str, str], str | None]:
        """The host's argv (PLACEHOLDER made the recorder's command), environment and
        folder; with --host, the recorder written into its config in a throwaway HOME."""
        spec = self.spec
        rec = self.recorder_argv()
        env = {**(os.environ if spec.env is None else spec.env), **self.more_env}
        cwd = spec.cwd
        argv = list(spec.argv)
        if spec.host is not None:
            home = Path(spec.work) / "home"
            project = Path(spec.work) / "project"
            home.mkdir(parents=True, exist_ok=True)
            project.mkdir(parents=True, exist_ok=True)
            self.placement = write_recorder(spec.host, home, project, rec, scope=spec.scope,
                                            env=env, extra=self.entry_extra,
                                            head=self.toml_head)
            self.placed(home, project)
            env = host_env(home, project, env)
            cwd = cwd or str(project)
        argv = [a for arg in argv for a in (rec if arg == PLACEHOLDER
                                            else [self.argv_subs.get(arg, arg)])]
        return argv, env, cwd

    def placed(self, home: Path, project: Path) -> None:
        """The recorder's entry is written: a subclass writes what else the host reads."""

    def recorder_argv(self, *extra: str) -> list[str]:
        spec = self.spec
        return [*recorder_argv(self.events_dir, spec.eof, spec.grandchild, hold=spec.hold,
                               signals=spec.signals, wrapper=spec.wrapper), *extra]

    def release(self) -> None:
        """End the hold: `released` first (for a recorder not yet holding), then the FIFO."""
        if self.release_fd is None:
            return
        with open(os.path.join(self.events_dir, "released"), "w"):
            pass
        os.close(self.release_fd)
        self.release_fd = None
        self.s.released_at = time.monotonic()
        self.mark(self.s.released_at, "release", None)

    def _read_host(self, fd: int) -> ProcessId | None:
        """The host's pid from the tty shell (event-timed: the pipe, or the shell's exit)."""
        line = self.read_line(fd, self.s.t0 + self.spec.ready_timeout)
        try:
            return identify(int(line))
        except ValueError:
            return None

    def read_line(self, fd: int, deadline: float) -> bytes:
        """The first line a child writes on pipe `fd` (closed here), waited for with its
        exits until `deadline`; b"" if it closed the pipe or died first."""
        data = b""
        os.set_blocking(fd, False)
        try:
            while b"\n" not in data and time.monotonic() < deadline:
                self.waiter.wait(deadline - time.monotonic(), extra_fds=[fd])
                try:
                    chunk = os.read(fd, 256)
                except BlockingIOError:
                    continue
                if not chunk:
                    break  # it closed the pipe (or died) before a whole line
                data += chunk
        finally:
            os.close(fd)
        return data.split(b"\n")[0] if b"\n" in data else b""

    def act(self) -> float:
        """End the host the scenario's way (or edit its config: reconnect); the instant."""
        s, sc, host = self.s, self.sc, self.s.host
        assert host is not None
        now = time.monotonic()
        s.action_at = now
        if self.host_gone():
            s.action_note = "the host had already exited by itself"
            return now
        s.triggered = True
        if sc.action == "quit":
            if self.spec.quit is not None:
                self._write_stdin((self.spec.quit + ("\r" if self.master is not None else "\n"))
                                  .encode())
            if self.master is not None:
                self._write_stdin(b"\x04")  # ^D: EOF at the start of a line in canonical mode
            elif self.stdin_w is not None:
                os.close(self.stdin_w)
                self.stdin_w = None
            self.mark(now, "eof", host.pid)
        elif sc.action == "hangup":
            if self.master is not None:
                self.unwatch(self.master)
                self.master = None
            self.mark(now, "hangup", host.pid)
        elif sc.action == "config-edit":
            assert self.placement is not None  # check() runs config scenarios with a host only
            ps_view.look(self.placement.path, self.ps_samples)
            self.placement.edit(self.recorder_argv("--generation", "2"))
            self.mark(now, "config-edit", host.pid)
        else:
            sig = getattr(signal, sc.action)
            outcome = self.signal_process(host, sig)
            if outcome != "sent":
                s.action_note = f"{sc.action} not sent to the host: {outcome}"
            self.mark(now, sc.action.lower(), host.pid)
        return now

    def after_edit(self, edited: float) -> float:
        """Type the --after-edit steps into the host's terminal, each `wait=` step bounded
        by `host_timeout` after the edit; the instant the last keys went (or the edit's)."""
        host = self.s.host
        deadline = edited + self.spec.host_timeout
        last = edited
        for step in keys.parse(self.spec.after_edit):
            if step.kind == "keys":
                self.screen = b""  # a later wait looks at what these keys brought
                self._write_stdin(step.text.encode())
                last = time.monotonic()
                self.mark(last, "keys", host.pid if host else None, keys=step.text)
                continue
            text = step.text

            def shown(text: str = text) -> bool:
                return self.host_gone() or keys.shown(self.screen, text)

            seen = self.wait_until(shown, deadline)
            if not seen or self.host_gone():
                self.s.action_note = (f"after the edit the host's terminal did not show "
                                      f"{text!r} within {self.spec.host_timeout:g} s; the "
                                      "steps after it were not typed")
                break
        return last

    def _write_stdin(self, data: bytes) -> None:
        fd = self.master if self.master is not None else self.stdin_w
        if fd is None:
            return
        with contextlib.suppress(OSError):  # the host closed its stdin or is gone
            os.write(fd, data)

    def ready(self) -> bool:
        """The trigger may come: the recorder holds the host (or, with no hold, the
        handshake is over), and the grandchild runs (its start recorded), so that what
        the scenario does reaches a recorder that can tell, not one starting. Also when
        the host is gone, or ending the handshaken recorder already (the verdict will
        say so)."""
        s, spec = self.s, self.spec
        if self.host_gone() or (s.first_sign is not None and s.initialized_at is not None):
            return True
        if spec.grandchild and "grandchild" not in s.roles.values():
            return False
        if s.hold_at is not None:
            return True
        return s.initialized_at is not None and (
            spec.hold != "tools/list" or time.monotonic() >= s.initialized_at + spec.hold_wait)

    def hold_waited(self) -> float:
        """When a tools/list hold stops waiting for the request (inf: none to wait for)."""
        s, spec = self.s, self.spec
        if s.initialized_at is not None and spec.hold == "tools/list":
            return s.initialized_at + spec.hold_wait
        return float("inf")

    def drive(self) -> Outcome:
        spec, s = self.spec, self.s
        self.start_host()
        self.wait_until(self.ready, s.t0 + spec.ready_timeout, wake=self.hold_waited)
        self.step(0)  # a one-shot host's last events may be in the FIFO still
        handshake = s.initialized_at is not None or s.hold_at is not None
        if not handshake and self.host_gone() and s.recorders:
            # It started the recorder and went without finishing the handshake (a health
            # check that timed out, a crash): what it left is still its doing.
            s.action_note = "the host exited before it initialized the recorder"
            if self.sc.name != "exit":
                return {"verdict": "skipped", "detail": s.action_note + " (its own exit is "
                        "the exit scenario)"}
            s.action_at = s.host_exit
            return self.settle()
        if not handshake:
            why = (f"the host exited (status {s.host_status}) before initializing the recorder"
                   if self.host_gone() else
                   f"the host did not initialize the recorder within {spec.ready_timeout:g} s")
            return {"verdict": "error", "detail": why}
        info = read_info(s.host.pid) if s.host is not None else None
        if info is not None and s.host is not None and info.ident == s.host:
            s.host_family = (info.pgid, info.sid)
        self.read_tree()
        before = set(s.roles)
        acted = self.act()
        self.release()
        if self.sc.action == "config-edit" and spec.after_edit:
            acted = self.after_edit(acted)
        if s.action_note.startswith("the host had already exited") and self.sc.name != "exit":
            return {"verdict": "skipped", "detail": s.action_note + " (a one-shot host: its "
                    "own exit is the exit scenario)"}
        if self.sc.action == "config-edit":
            return self.judge_reconnect(acted, before)
        exited = self.wait_until(self.host_gone, acted + spec.host_timeout)
        if not exited:
            self._adopt_unseen()
            live = self.live_recorders()
            verdict = decide(host_exited=False, left_roles=[s.roles[p] for p in live],
                             direct=self.direct)
            detail = (f"the host was still running {spec.host_timeout:g} s after "
                      f"the {self.sc.action}")
            if verdict != "host-stayed":
                detail = VERDICT_WORDS[verdict] + "; " + detail
            return {"verdict": verdict, "detail": detail, "left": live}
        return self.settle()

    def settle(self) -> Outcome:
        """After the host: the recorder's processes still exiting get `settle` seconds."""
        s = self.s
        assert s.host_exit is not None
        self.mark(s.host_exit, "window-start", None)
        self.mark(s.host_exit + self.spec.settle, "window-end", None)
        self._adopt_unseen()
        # The host's helpers (a guard, a wrapper it started) may still be ending the
        # server for it: while one lives, the settle time stretches, up to HELPER_GRACE.
        helpers = [i.ident for i in self.tree()
                   if not i.exited and i.pid not in set(self.s.recorders) | self.helpers]
        for h in helpers:
            self.waiter.add(h)
        settled = s.host_exit + self.spec.settle

        def done() -> bool:
            if not self.live_recorders():
                return True
            return time.monotonic() >= settled and all(h in self.waiter.exited for h in helpers)

        self.wait_until(done, settled + (HELPER_GRACE if helpers else 0.0))
        self._adopt_unseen()
        left = self.live_recorders()
        verdict = decide(host_exited=True, left_roles=[s.roles[p] for p in left],
                         direct=self.direct)
        return {"verdict": verdict, "detail": VERDICT_WORDS[verdict], "left": left}

    def read_tree(self) -> None:
        """The host's tree while it holds the server: which processes are the host's own,
        and which stand between the host and the first recorder of its direct role."""
        s = self.s
        if s.host is None:
            return
        snap = snapshot()
        s.host_tree = {i.pid for i in descendants(s.host.pid, snap)} | {s.host.pid}
        first = min((p for p, r in s.roles.items() if r == self.direct and p in snap),
                    default=None)
        chain: list[Layer] = []
        cur = snap[first].ppid if first is not None else None
        while cur is not None and cur != s.host.pid and cur in snap and len(chain) < 16:
            chain.append({"pid": cur, "cmdline": " ".join(cmdline(cur))[:200]})
            cur = snap[cur].ppid
        s.layers = list(reversed(chain)) if cur == s.host.pid else []

    @property
    def direct(self) -> str:
        """The role of the host's own child: the wrapper, when there is one."""
        return "wrapper" if self.spec.wrapper else "server"

    def judge_reconnect(self, acted: float, old: set[int]) -> Outcome:
        """`old`: the first copy's processes, all started before the edit."""
        s, spec = self.s, self.spec
        got = self.wait_until(
            lambda: any(r == self.direct and p not in old for p, r in s.roles.items())
            or self.host_gone(), acted + spec.host_timeout)
        if not got or self.host_gone():
            return {"verdict": "skipped", "detail": "the host did not start the server "
                    "again after its config entry changed (no reconnect)"
                    + (" and the --after-edit keys" if spec.after_edit else "")}
        started = time.monotonic()
        self.mark(started, "window-start", None)
        self.mark(started + spec.settle, "window-end", None)
        # `ps` judges `superseded` from counters seen across looks: one before the edit
        # (`act`), then PS_LOOKS spread over the window (what the host sends meanwhile to
        # each copy is what counts), ending early if the old copy goes
        config = self.placement.path if self.placement else None
        samples = self.ps_samples
        step = spec.settle / PS_LOOKS
        for i in range(1, PS_LOOKS + 1):
            ps_view.look(config, samples)
            if self.wait_until(lambda: not (set(self.live_recorders()) & old),
                               started + step * i):
                break
        left = [p for p in self.live_recorders() if p in old]
        verdict = decide(host_exited=False, left_roles=[],
                         abandoned_roles=[s.roles[p] for p in left])
        if verdict == "host-stayed":
            verdict = "clean"  # the old copy was ended while the host lives on: right
        # What `ps` makes of the copies still running: the old one `superseded`?
        copies = [p for p in self.live_recorders() if s.roles.get(p) == "server"]
        ps = ps_view.states(copies, config, samples)
        return {"verdict": verdict, "detail": VERDICT_WORDS[verdict], "left": left, "ps": ps}

    def _adopt_unseen(self) -> None:
        """Recorder processes whose start event was not read yet: from a full scan."""
        self.drain(self.fifo)
        for info in self.tree():
            if info.pid in self.s.recorders or info.exited:
                continue
            argv = cmdline(info.pid)
            if is_recorder(argv):
                self.s.recorders[info.pid] = info.ident
                self.s.roles[info.pid] = role_of(argv)
                self.waiter.add(info.ident)

    def others_left(self) -> list[OtherLeft]:
        """Live descendants that are not the recorder's (a wrapper, a helper, a layer such
        as the guard). After the host exited, each gets up to HELPER_GRACE to exit on its
        own: `exit_ms` is when it did, after the host's exit; None when it was still
        running then (left), or when the host lives on (`host_lives`)."""
        found: list[tuple[ProcessId, Layer]] = []
        for info in self.tree():
            if info.exited or info.pid in self.s.recorders or info.pid in self.helpers or any(
                    p is not None and info.pid == p.pid for p in (self.s.host, self.shell)):
                continue
            argv = cmdline(info.pid)
            if argv:  # none: it exited between the scan and the read (or a zombie)
                found.append((info.ident, {"pid": info.pid, "cmdline": " ".join(argv)[:200]}))
        since = self.s.host_exit
        if since is not None and found:
            # A layer still ending its own tree (the guard's ladder) is not one left:
            # wait, bounded, for each to exit on its own before saying which did.
            for ident, _ in found:
                self.waiter.add(ident)
            self.wait_until(lambda: all(i in self.waiter.exited for i, _ in found),
                            time.monotonic() + HELPER_GRACE)
        out: list[OtherLeft] = []
        for ident, o in found:
            at = self.waiter.exited.get(ident)
            out.append({"pid": o["pid"], "cmdline": o["cmdline"],
                        "exit_ms": None if at is None or since is None else
                        round(max(0.0, at - since) * 1000, 1),
                        # a live host's processes are not left by it
                        "host_lives": since is None})
        return out

    def before_end(self) -> None:
        """Close the host's stdin and the hold; note which recorders the clean-up kills."""
        self.s.cleanup_at = self.cleanup_at
        if self.stdin_w is not None:
            os.close(self.stdin_w)
            self.stdin_w = None
        if self.release_fd is not None:
            os.close(self.release_fd)
            self.release_fd = None
        self.killed = sorted(self.live_recorders())

    # -- the core's hooks -----------------------------------------------------------------
    def keep(self) -> Outcome:
        try:
            outcome = preempted(self.drive(), self.s, self.events_dir)
        except Interrupted:
            raise
        except Exception as exc:  # noqa: BLE001  # one line in the result, never a trace
            outcome = {"verdict": "error", "detail": f"{type(exc).__name__}: {exc}"}
        if outcome["verdict"] not in ("error", "skipped"):
            self.others = self.others_left()
        return outcome

    def interrupted(self) -> Outcome:
        return {"verdict": "error", "detail": "interrupted: the check was stopped"}

    def result(self, outcome: Outcome) -> HostCheckRow:
        for _ in range(20):  # the pidfds of what the clean-up killed: readable at once
            if not self.waiter.pending or not self.waiter.wait(0):
                break
        s = self.s
        host_exit = s.host_exit
        if s.host is not None and host_exit is None and s.host in self.waiter.exited:
            host_exit = self.waiter.exited[s.host]
        tail = s.tail
        if self.log_path is not None and os.path.exists(self.log_path):
            with open(self.log_path, "rb") as fh:
                fh.seek(max(0, os.path.getsize(self.log_path) - TAIL))
                tail = fh.read()
        return result_row(
            outcome, s, self.sc, self.spec, host_exit=host_exit,
            host_config=str(self.placement.path) if self.placement is not None else None,
            others=self.others, killed=self.killed, exited=self.waiter.exited,
            recorded=recorded_events(self.events_dir), tail=tail)


def run_keeper(spec_json: str, result_fd: int, life_fd: int,
               keeper: type[HostKeeper] = HostKeeper) -> None:
    """The keeper process's main (forked by the driver): one JSON line to `result_fd`."""
    spec = CheckSpec(**json.loads(spec_json))
    os.set_blocking(life_fd, False)
    out = keeper(spec, life_fd).run()
    data = (json.dumps(out) + "\n").encode()
    while data:
        data = data[os.write(result_fd, data):]
    os.close(result_fd)
