"""Soak for `reap --include superseded` beside real hosts calling tools (by hand, not a test).

    .venv/bin/python bench/soak_superseded_hosts.py [--minutes 5] [--min-age 30]
        [--interval 5] [--seed 52] [--max-hosts 3] [--json FILE] [--claude CMD] [--codex CMD]

Inside a pid namespace and a network namespace of its own (bench/_pidns.py: loopback
only, so the hosts can reach nothing but the stand-in), `mcp-tether reap --watch --yes
--include superseded --min-age M` runs for N minutes beside sessions started one after
another (at most --max-hosts real hosts at once), each driven by the stand-in model
(src/mcp_tether/hostcheck/modelapi.py, one for all sessions, each session its agents):
  claude-reconnect  an interactive Claude Code session (under a pty): calls; its entry
                    (the shared project's .mcp.json) edited and `/mcp`, the server,
                    Reconnect typed; then calls on the new copy every 3-8 s. The old
                    copy is forgotten: reap should end it. One such session at a time
  claude-subagents  `claude -p`: two subagents in parallel, A calling every 3-6 s, B
  codex-subagents   `codex exec`: thinking longer than --min-age between its calls; then
                    the main agent calls again
  claude-idle       a call, a pause longer than --min-age, a call, the same again
  codex-idle
  gateway           one host serving two clients over TCP, one copy each
                    (tests/hostcheck_hosts/gateway_host.py): the client of the older copy
                    calls every --min-age+10..+30 s, the other every 2-5 s, with a pause
                    of 8-15 s now and then
  host-variable     the same two clients on ondemand_host.py, whose copies differ only
                    in a variable it sets itself (its VAR) while the entry sets another (K)
Counted and printed (and with --json FILE written as one JSON document):
  wrong kills       a copy reap ended while its host ran, other than a forgotten one:
                    a copy a live client still used or would use
  failed calls      a call whose result the host reported as an error (the stand-in
                    sees it), or a gateway call that got no answer; calls the host did
                    not offer the model a tool for (its server not connected yet) are
                    counted apart
  forgotten copies  Claude Code's reconnect leftovers: how many were made, ended by reap
                    (with the delay after --min-age of idleness), missed (still running
                    --margin s past their due time, or when their session ended)
  leaks ended       copies reap ended after their host was gone (right: not counted
                    as wrong)
Exit 0 when nothing was wrong (no wrong kill, no failed call, no missed forgotten copy).
Needs Linux, root (unshare --pid --net), `ip`, and Claude Code 2.1.332 / Codex 0.171.0
on PATH (or --claude/--codex); a host that is missing is left out, and said so.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _pidns  # bench/, beside this script
from soak_reap import _weighted, alive, start_time, stop_watcher

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
from mcp_tether.hostcheck import keys  # noqa: E402
from mcp_tether.hostcheck.calls import short  # noqa: E402
from mcp_tether.hostcheck.config import host_env, write_recorder  # noqa: E402
from mcp_tether.hostcheck.keeper import TTYSHELL  # noqa: E402
from mcp_tether.hostcheck.modelapi import ModelAPI, Script, serve  # noqa: E402
from mcp_tether.hostcheck.modelhosts import BUILT_IN  # noqa: E402
from mcp_tether.hostcheck.modelwire import agent_mark  # noqa: E402
from mcp_tether.hostcheck.spec import RECORDER  # noqa: E402

HOSTS = ROOT / "tests" / "hostcheck_hosts"
MINI = ROOT / "tests" / "servers" / "mini.py"
KINDS = (("claude-reconnect", 3.0), ("claude-subagents", 2.0), ("codex-subagents", 3.0),
         ("claude-idle", 1.0), ("codex-idle", 1.0))
READY = "shift+tab to cycle"  # Claude Code 2.1.332's prompt footer: it takes a prompt
RECONNECT_KEYS = ["keys=/mcp", "wait=Manage MCP servers", "keys=<Enter>",
                  "wait=mcp-tether-recorder", "keys=<Enter>", "wait=Reconnect", "keys=<Down>",
                  "wait=❯ Reconnect", "keys=<Enter>"]
REAP_LINE = re.compile(r"^(ended|survived|denied)[^:]*: pid (\d+)")  # watch.describe


def ancestors(pid: int) -> list[int]:
    out = []
    for _ in range(32):
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
        if pid <= 1:
            break
        out.append(pid)
    return out


def argv_of(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


@dataclass
class Copy:
    pid: int
    start: int
    session: Session
    generation: int
    forgotten_at: float | None = None  # a reconnect left it: forgotten since
    last_used: float = 0.0
    ended_by_reap: float | None = None
    missed: bool = False


@dataclass
class Session:
    n: int
    kind: str
    pop: subprocess.Popen[bytes]
    start: int  # the host's start time (identity)
    began: float
    agents: list[str] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)
    ended: float | None = None
    note: str = ""
    host_pid: int = 0  # the host under the tty shell (claude-reconnect)
    gates: list[str] = field(default_factory=list)
    deadline: float = float("inf")  # a host still running then is stopped (and said so)
    done_at: float = 0.0
    reconnect: dict[str, Any] = field(default_factory=dict)  # claude-reconnect: the copies

    @property
    def running(self) -> bool:
        return self.ended is None and alive(self.pop.pid, self.start)


class Soak:
    def __init__(self, args: argparse.Namespace, tmp: Path) -> None:
        self.a = args
        self.tmp = tmp
        self.rng = random.Random(args.seed)
        self.home, self.project = tmp / "home", tmp / "project"
        self.events = tmp / "events"
        for d in (self.home, self.project, self.events):
            d.mkdir(parents=True)
        self.api = ModelAPI(Script({}), listeners=[self.hear])
        self.server = serve(self.api)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.lock = threading.Lock()
        self.sessions: list[Session] = []
        self.copies: dict[int, Copy] = {}
        self.generation = 1
        self.results: list[dict[str, Any]] = []  # model-result events
        self.failed: list[str] = []
        self.missing: list[str] = []  # calls the host offered the model no tool for
        self.wrong: list[str] = []
        self.leaks: list[str] = []
        self.reap_lines: list[str] = []
        self.counts: dict[str, int] = {}
        self.cmds = {"claude": shutil.which(args.claude), "codex": shutil.which(args.codex)}
        self._configs()

    # ----- set-up --------------------------------------------------------------------

    def _recorder(self, *extra: str) -> list[str]:
        return [sys.executable, RECORDER, "--events", str(self.events), "--no-grandchild",
                *extra]

    def _configs(self) -> None:
        """Claude Code's entry (the shared project's .mcp.json) and Codex's, in one shared
        HOME; the gateway's and the host-variable host's entries in a file given to reap
        with --config."""
        base = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY",
                                                                 "OPENAI_API_KEY")}
        claude, codex = BUILT_IN["claude-code"], BUILT_IN["codex"]
        env = {**base, **claude.env_for(self.url), **codex.env_for(self.url)}
        # Project scope (.mcp.json): there Claude Code 2.1.332's Reconnect starts a copy
        # from the edited entry and leaves the old one running (in user scope it SIGINTs
        # the old copy and restarts the entry as first read: nothing is forgotten).
        self.claude_place = write_recorder("claude-code", self.home, self.project,
                                           self._recorder("--generation", "1"),
                                           scope="project", env=env)
        if claude.files is not None:
            claude.files(self.home, self.project)
        write_recorder("codex", self.home, self.project, self._recorder(), env=env,
                       extra=codex.entry, head=codex.head_for(self.url))
        self.env = host_env(self.home, self.project, env)
        self.env["TERM"] = "xterm-256color"
        self.gw_config = self.tmp / "gateway.json"
        self.gw_config.write_text(json.dumps({"mcpServers": {  # gateway_host.py's is `mini`
            "mini": {"command": sys.executable, "args": [str(MINI)]},
            "hostvar": {"command": sys.executable, "args": [str(MINI), "--host", "var"],
                        "env": {"K": "v"}}}}))

    # ----- what the stand-in hears ---------------------------------------------------

    def hear(self, ev: dict[str, Any]) -> None:
        what = ev.get("what")
        if what == "model-result" and ev.get("kind") == "call":
            m = re.fullmatch(r"s(\d+)[ab]?", str(ev.get("agent")))
            with self.lock:
                self.results.append({**ev, "session": int(m.group(1)) if m else 0})
            if not ev.get("ok"):
                self.failed.append(f"{ev.get('agent')} call {ev.get('text')}: "
                                   f"{short(str(ev.get('result')))!r}")
        elif what == "model-missing":
            self.missing.append(f"{ev.get('agent')} step {ev.get('step')}: "
                                f"{ev.get('missing')} not offered")
        elif what == "model-gate":
            for s in self.sessions:
                if str(ev.get("gate")) == f"reconnect-{s.n}":
                    s.gates.append(str(ev.get("gate")))
        elif what == "model-turn" and ev.get("agent") in {s.agents[0] for s in self.sessions
                                                          if s.agents}:
            steps = self.api.script.agents.get(str(ev["agent"]), ())
            if not ev.get("calls") and int(ev.get("step", -1)) >= len(steps) - 1:
                for s in self.sessions:
                    if s.agents and s.agents[0] == ev["agent"] and not s.done.is_set():
                        s.done_at = time.monotonic()
                        s.done.set()

    # ----- sessions ------------------------------------------------------------------

    def _script(self, kind: str, n: int) -> dict[str, Any]:
        a, rng = self.a, self.rng
        think = a.min_age + rng.uniform(10, 20)
        main, sa, sb = f"s{n}", f"s{n}a", f"s{n}b"
        if kind.endswith("-idle"):
            return {main: [{"call": 1}, {"call": 1, "pause": think}, {"call": 1, "pause": think},
                           {"say": "done"}]}
        if kind.endswith("-subagents"):
            steady = [{"call": 1, "pause": rng.uniform(3, 6)}
                      for _ in range(int((2 * think) / 4.5) + 1)]
            return {main: [{"call": 1}, {"spawn": [sa, sb]}, {"wait": [sa]}, {"close": [sa]},
                           {"wait": [sb]}, {"close": [sb]}, {"call": 1}, {"say": "done"}],
                    sa: [{"call": 1}, *steady, {"say": "done"}],
                    sb: [{"call": 1}, {"call": 1, "pause": think}, {"call": 1, "pause": think},
                         {"say": "done"}]}
        # after the reconnect, calls on the new copy for longer than the old copy's due
        # time (--min-age + two intervals + --margin, from the reconnect)
        after, steady = a.min_age + 2 * a.interval + a.margin + 20, []
        while sum(st["pause"] for st in steady) < after:
            steady.append({"call": 1, "pause": rng.uniform(3, 8)})
        # the edit comes after reap has seen the old copy match its entry for a while
        before = 2 * a.interval + rng.uniform(2, 8)
        return {main: [{"call": 1}, {"call": 1, "pause": before},
                       {"gate": f"reconnect-{n}", "call": 1}, *steady, {"say": "done"}]}

    def start_session(self, kind: str) -> None:
        n = len(self.sessions) + 1
        script = self._script(kind, n)
        self.api.script.add({"agents": script})
        prompt = agent_mark(f"s{n}") + " Follow the mcp-tether stand-in's script."
        host = "claude" if kind.startswith("claude") else "codex"
        cmd = self.cmds[host]
        assert cmd is not None
        if kind == "claude-reconnect":
            self._claude_pty(n, kind, cmd, prompt, list(script))
            return
        argv = ([cmd, "-p", prompt] if host == "claude" else
                [cmd, "exec", "--skip-git-repo-check", prompt])
        pop = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env=self.env, cwd=self.project,
                               start_new_session=True)
        self._track(Session(n, kind, pop, start_time(pop.pid) or 0, time.monotonic(),
                            agents=list(script)))

    def _track(self, s: Session) -> None:
        steps = self.api.script.agents.get(s.agents[0], ()) if s.agents else ()
        s.deadline = s.began + sum(st.pause for st in steps) * 2 + 300
        with self.lock:
            self.sessions.append(s)
        self.counts[s.kind] = self.counts.get(s.kind, 0) + 1

    def _claude_pty(self, n: int, kind: str, cmd: str, prompt: str, agents: list[str]) -> None:
        master, slave = os.openpty()
        pid_r, pid_w = os.pipe()
        pop = subprocess.Popen([sys.executable, TTYSHELL, str(pid_w), cmd], stdin=slave,
                               stdout=slave, stderr=slave, env=self.env, cwd=self.project,
                               start_new_session=True, pass_fds=[pid_w])
        os.close(slave)
        os.close(pid_w)
        s = Session(n, kind, pop, start_time(pop.pid) or 0, time.monotonic(), agents=agents)
        self._track(s)
        threading.Thread(target=self._drive_claude, args=(s, master, pid_r, prompt),
                         daemon=True).start()

    def _drive_claude(self, s: Session, master: int, pid_r: int, prompt: str) -> None:
        screen = bytearray()
        stop = threading.Event()

        def pump() -> None:
            while not stop.is_set():
                if select.select([master], [], [], 0.2)[0]:
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:
                        return
                    if not chunk:
                        return
                    screen.extend(chunk)
                    del screen[:-65536]

        threading.Thread(target=pump, daemon=True).start()
        try:
            with os.fdopen(pid_r) as fh:
                s.host_pid = int(fh.readline() or 0)

            def shown(text: str, timeout: float) -> bool:
                end = time.monotonic() + timeout
                while time.monotonic() < end and s.running:
                    if keys.shown(bytes(screen), text):
                        return True
                    time.sleep(0.1)
                return False

            if not shown(READY, 180):
                s.note = "its prompt never showed"
                return
            # its server connected first: a prompt typed before offers the model no tool
            end = time.monotonic() + 120
            while time.monotonic() < end and s.running and not any(
                    "initialized" in " ".join(self.saw(p))
                    for p in self.children_copies(s.host_pid)):
                time.sleep(0.2)
            os.write(master, prompt.encode())
            time.sleep(0.5)
            os.write(master, b"\r")
            end = time.monotonic() + 300
            while not s.gates and s.running and time.monotonic() < end:
                time.sleep(0.2)
            if not s.gates:
                s.note = "it never reached the reconnect"
                return
            old = [p for p in self.children_copies(s.host_pid)]
            with self.lock:
                self.generation += 1
                gen = self.generation
                self.claude_place.edit(self._recorder("--generation", str(gen)))
            for step in keys.parse(RECONNECT_KEYS):
                if step.kind == "wait":
                    if not shown(step.text, 60):
                        s.note = f"the reconnect menu never showed {step.text!r}"
                        break
                else:
                    screen.clear()
                    os.write(master, step.text.encode())
            end = time.monotonic() + 60
            while time.monotonic() < end and not set(self.children_copies(s.host_pid)) - set(old):
                time.sleep(0.2)
            new = set(self.children_copies(s.host_pid)) - set(old)
            now = time.monotonic()
            if new:
                self.scan_copies()
                for pid in old:
                    c = self.copies.get(pid) or self.add_copy(pid, s)
                    if c is not None and alive(c.pid, c.start):
                        c.forgotten_at = now
                    elif c is not None:
                        s.note = f"the old copy pid {pid} was gone at the reconnect"
            else:
                s.note = "Reconnect started no new copy"
            s.reconnect = {"old": sorted(old), "new": sorted(new), "host": s.host_pid, "ps": []}
            self.api.open_gate(f"reconnect-{s.n}")
            while not s.done.wait(self.a.min_age / 2) and s.running:
                s.reconnect["ps"].append(self.ps_of(old))  # what `ps` says of the old copy
        except Exception as exc:  # noqa: BLE001  # said in the summary, the soak goes on
            s.note = f"its driver failed: {type(exc).__name__}: {exc}"
        finally:
            stop.set()
            self.retire(s)
            os.close(master)

    def saw(self, pid: int) -> list[str]:
        """What recorder copy `pid` recorded (its events file), since the soak's start."""
        try:
            lines = (self.events / f"server-{pid}.jsonl").read_text().splitlines()
        except OSError:
            return []
        out = []
        for line in lines:
            with contextlib.suppress(ValueError):
                ev = json.loads(line)
                if ev.get("what") not in ("request", "start"):
                    out.append(f"{ev.get('what')} {ev.get('signal') or ev.get('text') or ''}"
                               f"@{ev.get('t', 0) - self.t0:.1f}")
        return out

    def ps_of(self, pids: list[int]) -> dict[str, Any]:
        """`mcp-tether ps --json` on these pids now: state and the superseded answer."""
        out = subprocess.run([sys.executable, "-m", "mcp_tether", "ps", "--json"],
                             capture_output=True, text=True, env=self.env, cwd=self.project)
        try:
            rows = json.loads(out.stdout)["results"]
        except (ValueError, KeyError, TypeError):
            return {"error": out.stderr.strip()[-200:]}
        got = {str(r.get("pid")): {"state": r.get("state"), "superseded": r.get("superseded")}
               for r in rows if r.get("pid") in pids}
        return {"t_s": round(time.monotonic() - self.t0, 1), **got}

    def tree(self, root: int) -> list[int]:
        return [int(p) for p in os.listdir("/proc")
                if p.isdigit() and (int(p) == root or root in ancestors(int(p)))]

    def children_copies(self, host: int) -> list[int]:
        out = []
        for name in os.listdir("/proc"):
            if name.isdigit() and host in ancestors(int(name))[:1] and RECORDER in argv_of(
                    int(name)):
                out.append(int(name))
        return out

    def gateway(self, kind: str) -> None:
        """Two copies under one host: copy 0 (older) for the rare client, 1 for the other.
        gateway: gateway_host.py, one copy per TCP connection (supergateway's, mcp-proxy's
        shape); host-variable: ondemand_host.py, copies that differ in a variable it sets."""
        n = len(self.sessions) + 1
        if kind == "gateway":
            argv = [sys.executable, str(HOSTS / "gateway_host.py"), str(self.gw_config)]
        else:  # the host sets MCP_SESSION itself, a fresh value per copy
            argv = [sys.executable, str(HOSTS / "ondemand_host.py"), "sync", "2",
                    str(self.gw_config), "MCP_SESSION"]
        err = open(self.tmp / f"host-{n}.err", "wb")  # noqa: SIM115  # the host keeps it
        pop = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=err, env={**os.environ, "ONDEMAND_ENTRY": "hostvar"},
                               start_new_session=True)
        err.close()
        s = Session(n, kind, pop, start_time(pop.pid) or 0, time.monotonic())
        self._track(s)
        threading.Thread(target=self._drive_gateway, args=(s,), daemon=True).start()

    def _clients(self, s: Session) -> Callable[[int], bool] | None:
        """How client I makes one call on its copy (False: no answer); None: no host."""
        assert s.pop.stdin is not None and s.pop.stdout is not None
        words = s.pop.stdout.readline().split()
        if not words or words[0] != b"ready":
            return None
        if s.kind != "gateway":
            stdin, stdout = s.pop.stdin, s.pop.stdout

            def ondemand(i: int) -> bool:
                stdin.write(f"call {i}\n".encode())
                stdin.flush()
                return bool(select.select([stdout], [], [], 30)[0]) and \
                    stdout.readline().split() == [b"ok", str(i).encode()]
            return ondemand
        conns = []
        for _ in range(2):  # one connection per client, each its own copy, in this order
            conn = socket.create_connection(("127.0.0.1", int(words[1])), timeout=30)
            if not s.pop.stdout.readline().startswith(b"started"):
                return None
            f = conn.makefile("rwb")
            f.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "soak-client", "version": "1"}}}).encode() + b"\n")
            f.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
            f.flush()
            f.readline()
            conns.append(f)

        def tcp(i: int) -> bool:
            f = conns[i]
            f.write(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": '
                    b'{"name": "sleep", "arguments": {"seconds": 0}}}\n')
            f.flush()
            return b'"result"' in f.readline()
        return tcp

    def _drive_gateway(self, s: Session) -> None:
        life = time.monotonic() + self.rng.uniform(3, 5) * self.a.min_age + 60
        try:
            call = self._clients(s)
            if call is None:
                s.note = "it did not start"
                return
            due = {0: time.monotonic() + self.a.min_age + self.rng.uniform(10, 30),
                   1: time.monotonic() + 2}
            while time.monotonic() < life and not self.stopping:
                i = min(due, key=lambda k: due[k])
                time.sleep(max(0.0, due[i] - time.monotonic()))
                if not call(i):
                    why = (self.tmp / f"host-{s.n}.err").read_text(errors="replace").strip()
                    self.failed.append(f"{s.kind} {s.n}: client {i}'s call got no answer"
                                       + (f" ({why.splitlines()[-1][:120]})" if why else ""))
                    return
                with self.lock:
                    self.results.append({"agent": f"client {i}", "ok": True, "session": s.n})
                # the busy client: calls 2-5 s apart, a pause of 8-15 s now and then
                # (a client thinking); the other: one call every --min-age + 10-30 s
                busy = self.rng.uniform(8, 15) if self.rng.random() < 0.25 else \
                    self.rng.uniform(2, 5)
                due[i] = time.monotonic() + (busy if i == 1 else
                                             self.a.min_age + self.rng.uniform(10, 30))
        except OSError as exc:
            self.failed.append(f"{s.kind} {s.n}: a call failed ({exc.strerror or exc})")
        finally:
            self.retire(s)

    def retire(self, s: Session) -> None:
        if s.ended is not None:
            return
        s.ended = time.monotonic()
        # Ctrl-C first (the hosts' own way out, which ends their servers), then SIGTERM
        for sig in (signal.SIGINT, signal.SIGTERM):
            if s.pop.poll() is None and alive(s.pop.pid, s.start):  # the process we started
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(s.pop.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                s.pop.wait(10)
        if s.pop.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(s.pop.pid, signal.SIGKILL)
            s.pop.wait()

    # ----- copies and reap's lines ---------------------------------------------------

    def scan_copies(self) -> None:
        """Every server copy now running: whose session (by ancestry), its generation."""
        roots = {s.pop.pid: s for s in self.sessions if s.ended is None}
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in self.copies:
                continue
            pid = int(name)
            argv = argv_of(pid)
            if not argv or not (RECORDER in argv or str(MINI) in argv):
                continue
            owner = next((roots[a] for a in ancestors(pid) if a in roots), None)
            if owner is not None:
                self.add_copy(pid, owner)

    def add_copy(self, pid: int, owner: Session) -> Copy | None:
        """Copy `pid` of `owner`'s host, once (None: it is gone)."""
        argv, st = argv_of(pid), start_time(pid)
        if st is None:
            return None
        gen = int(argv[argv.index("--generation") + 1]) if "--generation" in argv else 0
        with self.lock:
            return self.copies.setdefault(pid, Copy(pid, st, owner, gen))

    def on_reap(self, line: str) -> None:
        m = REAP_LINE.match(line)
        if not m or m.group(1) != "ended":
            return
        pid = int(m.group(2))
        c = self.copies.get(pid)
        now = time.monotonic()
        if c is None:
            self.wrong.append(f"not a copy of ours: {line}")
            return
        c.ended_by_reap = now
        if c.forgotten_at is not None:
            return
        if c.session.ended is not None and c.session.ended < now:
            self.leaks.append(f"{c.session.kind} {c.session.n}: pid {pid} after its host")
            return
        used = [r for r in self.results if r.get("session") == c.session.n]
        self.wrong.append(f"{c.session.kind} session {c.session.n}: pid {pid} "
                          f"(generation {c.generation}) ended while its host ran "
                          f"({len(used)} calls answered in the session so far)")

    def check_forgotten(self) -> None:
        a = self.a
        now = time.monotonic()
        for c in list(self.copies.values()):
            if c.forgotten_at is None or c.ended_by_reap is not None or c.missed:
                continue
            due = c.forgotten_at + a.min_age + 2 * a.interval + a.margin
            if (now > due or c.session.ended is not None) and alive(c.pid, c.start):
                c.missed = True

    # ----- the run -------------------------------------------------------------------

    stopping = False

    def run(self) -> dict[str, Any]:
        a = self.a
        kinds = [(k, w) for k, w in KINDS if self.cmds[k.split("-")[0]]
                 and (not a.kinds or k in a.kinds)]
        missing = sorted(h for h, c in self.cmds.items() if c is None)
        cmd = [sys.executable, "-m", "mcp_tether", "reap", "--watch", "--yes", "--include",
               "superseded", "--min-age", str(a.min_age), "--interval", str(a.interval),
               "--config", str(self.gw_config)]
        watcher = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True, env=self.env,
                                   cwd=self.project)

        def read() -> None:
            assert watcher.stdout is not None
            for line in watcher.stdout:
                self.scan_copies()
                self.reap_lines.append(line.rstrip("\n"))
                self.on_reap(line.rstrip("\n"))

        threading.Thread(target=read, daemon=True).start()
        t0 = self.t0 = time.monotonic()
        end = t0 + a.minutes * 60
        for kind in ("gateway", "host-variable"):
            if not a.kinds or kind in a.kinds:
                self.gateway(kind)
        while time.monotonic() < end:
            self.scan_copies()
            self.check_forgotten()
            live = [s for s in self.sessions if s.running]
            for s in [s for s in self.sessions if s.ended is None]:
                if s.kind in ("gateway", "host-variable"):
                    continue
                if s.done.is_set() and not s.note and s.pop.poll() is None \
                        and time.monotonic() > s.done_at + 20:
                    s.note = ("still running 20 s after its script: " + "; ".join(
                        " ".join(argv_of(p))[:60] for p in self.tree(s.pop.pid)))
                if time.monotonic() > s.deadline:
                    s.note = "still running past its script's time: stopped"
                if s.pop.poll() is not None or time.monotonic() > s.deadline:
                    threading.Thread(target=self.retire, args=(s,), daemon=True).start()
            real = [s for s in live if s.kind not in ("gateway", "host-variable")]
            if kinds and len(real) < a.max_hosts and end - time.monotonic() > a.min_age * 2:
                kind = _weighted(self.rng, kinds)
                # one reconnecting Claude Code session at a time: they share the project's
                # .mcp.json, and a second edit would leave the first one's new copy
                # unmatched too
                if kind == "claude-reconnect" and any(s.kind == kind for s in real):
                    kind = _weighted(self.rng, [(k, w) for k, w in kinds if k != kind]
                                     or [("claude-idle", 1.0)])
                self.start_session(kind)
            for kind in ("gateway", "host-variable"):
                if (not a.kinds or kind in a.kinds) and not any(
                        s.kind == kind and s.running for s in self.sessions) \
                        and end - time.monotonic() > a.min_age * 3:
                    self.gateway(kind)
            time.sleep(1.0)
        self.stopping = True
        grace = time.monotonic() + a.min_age + 2 * a.interval + a.margin
        while time.monotonic() < grace and any(
                c.forgotten_at is not None and c.ended_by_reap is None and not c.missed
                and c.session.ended is None for c in list(self.copies.values())):
            self.scan_copies()
            self.check_forgotten()
            time.sleep(1.0)
        self.check_forgotten()
        for s in self.sessions:
            self.retire(s)
        stop_watcher(watcher)
        doc = self.summary(time.monotonic() - t0, missing)
        me = os.getpid()
        doc["left_after"] = sorted({" ".join(argv_of(int(p)))[:120] for p in os.listdir("/proc")
                                    if p.isdigit() and int(p) not in (1, me)
                                    and me not in ancestors(int(p)) or False} - {""})
        return doc

    def summary(self, elapsed: float, missing: list[str]) -> dict[str, Any]:
        a = self.a
        forgotten = [c for c in list(self.copies.values()) if c.forgotten_at is not None]
        ended = [c for c in forgotten if c.ended_by_reap is not None]
        delays = sorted(c.ended_by_reap - (c.forgotten_at + a.min_age) for c in ended
                        if c.ended_by_reap is not None and c.forgotten_at is not None)
        return {
            "minutes": round(elapsed / 60, 2), "min_age": a.min_age, "interval": a.interval,
            "seed": a.seed, "rule": "today's superseded (this branch)",
            "hosts": {h: c for h, c in self.cmds.items()}, "hosts_missing": missing,
            "load_average": os.getloadavg(), "sessions": self.counts,
            "calls_answered": sum(1 for r in self.results if r.get("ok")),
            "wrong_kills": len(self.wrong), "wrong": self.wrong,
            "failed_calls": len(self.failed), "failed": self.failed,
            "calls_not_offered": len(self.missing), "not_offered": self.missing[:50],
            "forgotten": {"made": len(forgotten), "ended": len(ended),
                          "missed": sum(1 for c in forgotten if c.missed),
                          "ended_after_min_age_s": [round(d, 1) for d in delays]},
            "leaks_ended": len(self.leaks), "leaks": self.leaks,
            "reap_lines": len(self.reap_lines), "reap_log": self.reap_lines[:400],
            "notes": [f"{s.kind} {s.n}: {s.note}" for s in self.sessions if s.note],
            "session_detail": [
                {"n": s.n, "kind": s.kind, "began_s": round(s.began - self.t0, 1),
                 "ended_s": None if s.ended is None else round(s.ended - self.t0, 1),
                 "script_done": s.done.is_set(), "note": s.note, "reconnect": s.reconnect,
                 "copies": sorted(c.pid for c in list(self.copies.values()) if c.session is s),
                 "old_copy_saw": [self.saw(p) for p in s.reconnect.get("old", [])],
                 "calls_answered": sum(1 for r in self.results
                                       if r.get("ok") and r.get("session") == s.n)}
                for s in self.sessions],
        }


def render(doc: dict[str, Any]) -> str:
    f = doc["forgotten"]
    lines = [f"soak_superseded_hosts: {doc['minutes']} min, reap --watch --include superseded "
             f"--min-age {doc['min_age']:g} --interval {doc['interval']:g}, seed {doc['seed']}, "
             f"load {doc['load_average'][0]:.2f}",
             "  sessions: " + ", ".join(f"{k} {v}" for k, v in sorted(doc["sessions"].items())),
             f"  wrong kills: {doc['wrong_kills']}", *[f"    {w}" for w in doc["wrong"]],
             f"  calls answered: {doc['calls_answered']}; failed: {doc['failed_calls']}; "
             f"not offered (the host had no tool for the model yet): "
             f"{doc['calls_not_offered']}",
             *[f"    {x}" for x in doc["failed"]],
             f"  forgotten copies: {f['made']} made, {f['ended']} ended by reap "
             f"(after --min-age: {f['ended_after_min_age_s']} s), {f['missed']} missed",
             f"  leaks ended after their host: {doc['leaks_ended']}"]
    if doc["hosts_missing"]:
        lines.append(f"  not run (not installed): {', '.join(doc['hosts_missing'])}")
    lines += [f"  note: {n}" for n in doc["notes"]]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--min-age", type=float, default=30.0)
    ap.add_argument("--interval", type=float, default=5.0)
    ap.add_argument("--margin", type=float, default=30.0,
                    help="seconds past min-age + 2 intervals before a forgotten copy is missed")
    ap.add_argument("--seed", type=int, default=52)
    ap.add_argument("--max-hosts", type=int, default=3, help="real hosts at once (3)")
    ap.add_argument("--json", metavar="FILE", help="also write the summary as JSON to FILE")
    ap.add_argument("--kind", action="append", dest="kinds", default=[],
                    choices=[k for k, _ in KINDS] + ["gateway", "host-variable"],
                    help="run only sessions of this kind (repeatable; default: all)")
    ap.add_argument("--claude", default="claude", help="Claude Code's command (claude)")
    ap.add_argument("--codex", default="codex", help="Codex's command (codex)")
    args = ap.parse_args()
    _pidns.enter(net=True)
    # A host's own daemon may still write into the throwaway HOME at the end: the
    # namespace's end kills it, the folder goes with what can be removed.
    with tempfile.TemporaryDirectory(prefix="soak-superseded-",
                                     ignore_cleanup_errors=True) as tmp:
        doc = Soak(args, Path(tmp)).run()
        print(render(doc))
        if args.json:
            Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    bad = doc["wrong_kills"] or doc["failed_calls"] or doc["forgotten"]["missed"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
