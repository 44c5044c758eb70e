"""The keeper of a tool-calling scenario: the host driven by the stand-in model.

    hostcheck (driver) -> keeper -> stand-in model (modelapi, 127.0.0.1)
                                 -> [ttyshell ->] host -> recorder copies

`CallsKeeper` is a `HostKeeper` (the same start, tree, recorder events, end) that first
starts the stand-in with the scenario's script (`calls.SCRIPTS`), points the host at it
(`modelhosts.wiring`: variables, `{model_url}` in its argv, its config), gives it the
prompt (`{prompt}` in its argv, typed under a pty, or written to its stdin), then
follows the script's events and acts at its gates:

- `reconnect`: the recorder's entry is edited (and `--after-edit` keys typed); the gate
  opens once the host has started a new copy (or `--host-timeout` passed: none);
- `end-old`: `ps` is asked what it makes of every copy, then the oldest copy still
  running beside a newer one is sent SIGTERM (identity re-checked), as `reap --include
  superseded` would end it; one copy alone is left alone.

Guarantees:
- The stand-in is the keeper's own child, bound to 127.0.0.1; every URL the host gets
  is its URL. It is never counted as something the host left.
- Waits are event-timed (the stand-in's and the recorders' events come through the
  events FIFO); the run ends when the main agent's script is done, the host is gone, or
  nothing happened for `--host-timeout` beyond the pause the stand-in announced.
- What was measured is `calls.measure`'s, from the events files; the verdict is
  `measured` (`calls-reconnect`: the reconnect's `abandoned`, `clean` or `skipped`),
  `error` when the host made no call at all.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from mcp_tether.hostcheck import calls, keys, ps_view
from mcp_tether.hostcheck.keeper import HostKeeper
from mcp_tether.hostcheck.modelhosts import MODEL_URL, PROMPT, ModelWiring, wiring
from mcp_tether.hostcheck.modelwire import GATE_PATH, agent_mark
from mcp_tether.hostcheck.outcome import recorded_events
from mcp_tether.hostcheck.record import Outcome, PsState
from mcp_tether.hostcheck.scenarios import VERDICT_WORDS, decide
from mcp_tether.hostcheck.spec import CheckSpec
from mcp_tether.proc import cmdline
from mcp_tether.proc.spawn import spawn

__all__ = ["CallsKeeper", "PROMPT_TEXT"]

PROMPT_TEXT = agent_mark("main") + " Follow the mcp-tether stand-in's script."
PS_EVERY = 2.0  # seconds between `ps` looks while the script runs (superseded needs several)
END_WAIT = 5.0  # how long the ended old copy may take to exit before the gate opens


class CallsKeeper(HostKeeper):
    """A host check scenario that drives the host through tool calls (see the module)."""

    def __init__(self, spec: CheckSpec, life_fd: int) -> None:
        super().__init__(spec, life_fd)
        self.script = calls.SCRIPTS[spec.scenario](spec.min_age)
        self.wiring: ModelWiring = wiring(spec.host, spec.model_api, spec.model_env)
        self.url = ""
        self.gates: list[dict[str, Any]] = []  # reached, not yet acted on
        self.main_done: float | None = None
        self.turns = 0
        self.quiet_until = 0.0  # the stand-in announced a pause or a gate until then
        self.last_event = 0.0
        self.ps_rows: list[PsState] | None = None
        self.old_alive: list[int] = []  # calls-reconnect: old copies alive at `end-old`
        self.before_edit: set[int] = set()  # calls-reconnect: the copies before the edit

    # -- the stand-in's events --------------------------------------------------------
    def _seen(self) -> None:
        self.last_event = time.monotonic()

    def handle_model_turn(self, ev: dict[str, Any], pid: int) -> None:
        self._seen()
        self.turns += 1
        steps = self.script["agents"]["main"]
        if ev.get("agent") == "main" and not ev.get("calls") and (
                ev.get("past_end") or int(ev.get("step", -1)) >= len(steps) - 1):
            self.main_done = self.main_done or float(ev["t"])

    def handle_model_result(self, ev: dict[str, Any], pid: int) -> None:
        self._seen()

    def handle_model_gate(self, ev: dict[str, Any], pid: int) -> None:
        self._seen()
        self.gates.append(ev)

    def handle_model_pause(self, ev: dict[str, Any], pid: int) -> None:
        self._seen()
        self.quiet_until = max(self.quiet_until, float(ev["t"]) + float(ev.get("seconds", 0)))

    def handle_call(self, ev: dict[str, Any], pid: int) -> None:
        self._seen()

    # -- starting ---------------------------------------------------------------------
    def start_model(self) -> str:
        """The stand-in with this scenario's script; its URL ("" if it did not start). The
        events FIFO first: the stand-in's events come through it too."""
        self._open_channels()
        path = os.path.join(self.spec.work, "script.json")
        with open(path, "w") as fh:
            json.dump(self.script, fh)
        out_r, out_w = os.pipe()
        err = os.open(os.path.join(self.spec.work, "model.err"),
                      os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            child = spawn([sys.executable, "-m", "mcp_tether.hostcheck.modelapi", "--script",
                           path, "--events", self.events_dir], stdin=null, stdout=out_w,
                          stderr=err, new_session=True)
        finally:
            for fd in (out_w, err, null):
                os.close(fd)
        child.close()
        self.helpers.add(child.pid)
        self.waiter.add(child.ident)
        line = self.read_line(out_r, time.monotonic() + self.spec.ready_timeout)
        url = line.decode(errors="replace").strip()
        return url if url.startswith("http://127.0.0.1:") else ""

    def start_host(self) -> None:
        w = self.wiring
        self.more_env = w.env_for(self.url)
        self.entry_extra = dict(w.entry)
        self.toml_head = w.head_for(self.url)
        self.argv_subs = {MODEL_URL: self.url, PROMPT: PROMPT_TEXT}
        super().start_host()

    def placed(self, home: Path, project: Path) -> None:
        if self.wiring.files is not None:
            self.wiring.files(home, project)

    def open_gate(self, name: str) -> None:
        host_port = self.url.removeprefix("http://")
        conn = http.client.HTTPConnection(host_port, timeout=5)
        with contextlib.suppress(OSError, http.client.HTTPException):
            conn.request("POST", GATE_PATH + name, body=b"")
            conn.getresponse().read()
        conn.close()

    def give_prompt(self) -> None:
        """The prompt, unless the host's argv carried it: typed under a pty once
        `--prompt-wait` shows (without it: once the host started the recorder), else one
        line on its stdin at once (a host may start its servers only for a prompt)."""
        if PROMPT in self.spec.argv:
            if self.stdin_w is not None:  # a one-shot host reads a piped stdin to its EOF
                os.close(self.stdin_w)    # as more prompt (codex exec, claude -p)
                self.stdin_w = None
            return
        if self.master is not None:
            wait = self.spec.prompt_wait
            text = keys.parse([f"wait={wait}"])[0].text if wait else ""
            self.wait_until(lambda: self.host_gone() or (
                keys.shown(self.screen, text) if text else self.s.initialized_at is not None),
                self.s.t0 + self.spec.ready_timeout)
            self._write_stdin(PROMPT_TEXT.encode())
            # A TUI that reads a burst of text as a paste takes Enter apart from it.
            self.wait_until(lambda: False, time.monotonic() + 0.5)
            self._write_stdin(b"\r")
        else:
            self._write_stdin((PROMPT_TEXT + "\n").encode())
        self.mark(time.monotonic(), "prompt", self.s.host.pid if self.s.host else None)

    # -- the gates --------------------------------------------------------------------
    def copies(self) -> list[int]:
        """The recorder's server copies still running, oldest first."""
        live = [p for p in self.live_recorders() if self.s.roles.get(p) == "server"]
        return sorted(live, key=lambda p: self.s.recorders[p].start)

    def gate_reconnect(self, gate: dict[str, Any]) -> None:
        before = set(self.copies())
        now = time.monotonic()
        if self.placement is None:
            self.mark(now, "reconnect", None, new=None, note="no config to edit")
            return
        ps_view.look(self.placement.path, self.ps_samples)
        self.placement.edit(self.recorder_argv("--generation", "2"))
        self.mark(now, "config-edit", None)
        if self.spec.after_edit:
            self.after_edit(now)
        got = self.wait_until(lambda: bool(set(self.copies()) - before) or self.host_gone(),
                              now + self.spec.host_timeout)
        new = sorted(set(self.copies()) - before)
        self.before_edit = before
        # Did the new copy come from the edited entry, or from the host's own copy of it?
        edited = bool(new) and "--generation" in cmdline(new[0])
        self.mark(time.monotonic(), "reconnect", new[0] if new else None,
                  new=new[0] if got and new else None, old=sorted(before),
                  from_edit=edited if new else None)

    def gate_end_old(self, gate: dict[str, Any]) -> None:
        live = self.copies()
        config = self.placement.path if self.placement else None
        self.ps_rows = ps_view.states(live, config, self.ps_samples)
        self.old_alive = [p for p in live if p in self.before_edit]
        now = time.monotonic()
        if len(live) < 2:
            self.mark(now, "end-old", None, note=f"{len(live)} copy running: nothing ended")
            return
        oldest = live[0]
        outcome = self.signal_process(self.s.recorders[oldest], signal.SIGTERM)
        self.mark(now, "end-old", oldest, outcome=outcome)
        self.wait_until(lambda: oldest not in self.live_recorders(), now + END_WAIT)

    # -- the run ----------------------------------------------------------------------
    def drive(self) -> Outcome:
        spec, s = self.spec, self.s
        self.url = self.start_model()
        if not self.url:
            return {"verdict": "error", "detail": "the stand-in model did not start (see "
                    "model.err in the scenario's folder)"}
        self.start_host()
        self.give_prompt()
        self.wait_until(lambda: self.host_gone() or s.initialized_at is not None
                        or self.turns > 0, s.t0 + spec.ready_timeout)
        self.step(0)
        if s.initialized_at is None and self.turns == 0:
            why = (f"the host exited (status {s.host_status}) before it started the recorder"
                   if self.host_gone() else f"the host did not start the recorder within "
                   f"{spec.ready_timeout:g} s")
            return {"verdict": "error", "detail": why}
        self.read_tree()
        self._seen()
        s.action_at = time.monotonic()
        s.triggered = True
        next_look = time.monotonic()
        looks = spec.scenario in ("subagents", "calls-reconnect")
        while self.main_done is None and not self.host_gone():
            quiet = max(self.last_event, self.quiet_until) + spec.host_timeout
            if time.monotonic() >= quiet:
                break
            if looks and time.monotonic() >= next_look:
                ps_view.look(self.placement.path if self.placement else None, self.ps_samples)
                next_look = time.monotonic() + PS_EVERY
            self.wait_until(lambda: bool(self.gates) or self.main_done is not None
                            or self.host_gone(),
                            min(quiet, next_look) if looks else quiet)
            while self.gates:
                gate = self.gates.pop(0)
                name = str(gate.get("gate"))
                action = getattr(self, "gate_" + name.replace("-", "_"), None)
                if action is not None:
                    action(gate)
                self.open_gate(name)
        if self.main_done is not None and PROMPT in spec.argv:
            # a one-shot host ends by itself after its prompt's last turn: let it
            self.wait_until(self.host_gone, time.monotonic() + spec.host_timeout)
        return self.judge()

    def judge(self) -> Outcome:
        s = self.s
        self.drain(self.fifo)  # what the FIFO still holds (a host that exited at once)
        model = _model_events(self.events_dir)
        for ev in model:  # the file has every event, the FIFO may have dropped some
            if ev.get("what") == "model-turn":
                self.handle_model_turn(ev, 0)
        end = self.main_done or time.monotonic()
        facts = calls.measure(model, recorded_events(self.events_dir), s.marks, end=end)
        # what the stand-in saw and did, as the recorders' events are in `recorded`
        facts["model_events"] = [{k: v for k, v in e.items() if k not in ("wall", "role")}
                                 for e in model]
        detail = calls.summary(facts, self.spec.scenario)
        if not facts["calls"]:
            why = ("the host never asked the stand-in model (is it pointed at it? "
                   "--model-api, --model-env, {model_url})" if not model or all(
                       e.get("what") in ("model-start", "model-other") for e in model)
                   else "the host asked the stand-in but made no call of the recorder's tool")
            return {"verdict": "error", "detail": why, "calls": calls.in_ms(facts, s.t0)}
        if self.main_done is None:
            detail += ("; the main agent's script did not finish (the host "
                       + ("exited" if self.host_gone() else
                          f"was quiet for {self.spec.host_timeout:g} s") + ")")
        verdict = "measured"
        if self.spec.scenario == "calls-reconnect":
            r = facts["reconnect"]
            if r is None or not r.get("new"):
                verdict = "skipped"
                detail = ("the host did not start the server again after its config entry "
                          "changed (no reconnect); " + detail)
            else:
                verdict = decide(host_exited=False, left_roles=[],
                                 abandoned_roles=["server"] * len(self.old_alive))
                verdict = "clean" if verdict == "host-stayed" else verdict
                detail = VERDICT_WORDS[verdict] + "; " + detail
        return {"verdict": verdict, "detail": detail, "left": [], "ps": self.ps_rows,
                "calls": calls.in_ms(facts, s.t0)}


def _model_events(events_dir: str) -> list[dict[str, Any]]:
    out = []
    with contextlib.suppress(OSError), open(os.path.join(events_dir, "model.log"), "rb") as fh:
        for line in fh:
            with contextlib.suppress(ValueError):
                out.append(json.loads(line))
    return sorted(out, key=lambda e: float(e.get("t", 0.0)))

