"""Soak for `reap --watch` (by hand, not a test): wrong kills and missed leaks, counted.

    .venv/bin/python bench/soak_reap.py [--minutes 10] [--seed N] [--min-age 15]
                                        [--interval 5] [--margin 30] [--include stdio]

Inside a pid namespace of its own (bench/_pidns.py; its pid 1 is tests/pidns_init.py,
an init), `mcp-tether reap --watch --yes` runs for N minutes beside a churn of:
  live hosts      real SDK clients (the `mcp` SDK's stdio_client, the TypeScript SDK's
                  StdioClientTransport) with live servers; half of them run as services
                  (parent pid 1, stdin /dev/null, stdout and stderr to one log file),
                  the others under this soak; each is stopped after a random lifetime
                  (SIGTERM: the host closes its servers, which exit on EOF)
  crashed hosts   a service-style host (Python or Node SDK client) whose server crashed
                  while the host was busy in synchronous work: it holds its ends of the
                  dead server's pipes or sockets
  services        pid-1 children with stdin /dev/null and output to a log file
  daemons         pid-1 children with stdio at /dev/null holding sockets and pipes whose
                  other side is gone (passed by their launcher)
  leaked servers  SDK servers that ignore EOF (Python and Node), their client SIGKILLed
  reconnecting    real hosts (tests/hostcheck_hosts) that start copy A then copy B of one
  hosts           config entry and then use only B (the soak asks them for a tools/call
                  to B every 1-4 s): the Python SDK reconnecting on an AsyncExitStack
                  (the first stdio_client never closed), the TypeScript SDK with A's
                  Client dropped, a host whose config entry is edited (it starts B from
                  the edited entry; the soak used A until the edit). Their A is
                  superseded: it must be ended once idle for --min-age
  hosts that      must never lose a server: the same SDK hosts and a host reading with
  keep copies     blocking threads that stopped reading A or keep listening to both,
                  or wait in select() (no traffic to either copy after the start); hosts
                  using servers on demand (tests/hostcheck_hosts/ondemand_host.py: a
                  synchronous host, one sleeping on a timer, one polling with
                  non-blocking reads, a reader thread woken through a queue, a forked
                  helper reading a dup'd fd, one in select()) with one or two copies
                  used together every 5-90 s; and hosts that use B for a stretch shorter
                  than --min-age, then A again, and so on (an older copy used again)
  reader hosts    a live host whose server runs behind a wrapper that exited (`sh -c
                  '... & exit 0'`: the server's parent is pid 1), with its input closed
                  or half-closed and its output still read (tests/scan_lab.py
                  READER_HOST): one socketpair both ways half-closed (Node's
                  stdin.end()), two socketpairs with stdin half-closed (the TypeScript
                  SDK's close ladder during its grace), a pipe pair with stdin closed.
                  Its server must live as long as the host; when the host is stopped
                  (SIGTERM) the server is a leak and must be ended
Counted and printed:
  wrong kills     any process `reap` reported ending that was not a leaked server, and
                  any host, service, daemon or live server that died while not asked to
  missed leaks    a leaked server still alive `--margin` seconds after it was both leaked
                  and older than `--min-age`, plus one `--interval`
  failed calls    a tools/call the soak asked a host for that did not come back (the
                  symptom of a server ended under a live host)
  missed superseded  a superseded copy still alive `--margin` seconds after `--min-age`
                  of idleness (from the soak's last call to it), plus two `--interval`s
                  (the round that first sees it, the round past its minimum age); one
                  ended before `--min-age` of idleness is a wrong kill
The soak stops by itself after N minutes: it stops the watcher (SIGTERM), ends what it
started (by identity), and exits; its namespace's init then exits and the kernel ends
anything left in the namespace. Linux only (reads /proc), root (unshare).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import _pidns  # bench/, beside this script
from _soak_scripts import (
    CRASHING_SERVER,
    LAUNCHER,
    NODE_CRASH_HOST,
    NODE_HOST,
    PY_CRASH_HOST,
    PY_HOST,
    SERVICE,
)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from scan_lab import (  # noqa: E402
    NODE_MODULES,
    NODE_SDK_SERVER,
    PY_SDK_SERVER,
    READER_HOST,
    READER_SERVER,
    READER_SHAPES,
)

T = TypeVar("T")
HOSTS = ROOT / "tests" / "hostcheck_hosts"
MINI = ROOT / "tests" / "servers" / "mini.py"
RECONNECT_MODES = (("abandon", 6.0), ("listen", 3.0), ("select", 1.0))
ONDEMAND_MODES = ("sync", "sleep", "poll-nb", "queue", "fork", "select")
# reconnecting hosts that supersede A, and hosts that must keep both copies
SUPERSEDING = (("py_exitstack", 2.0), ("ts_forget", 2.0), ("edit", 2.0))
KEEPING = (("reconnect", 3.0), ("ondemand", 4.0), ("again", 2.0))

PY_LIVE_SERVER = PY_SDK_SERVER.replace("threading.Thread(target=tick).start()\n", "")
NODE_LIVE_SERVER = NODE_SDK_SERVER.replace("setInterval(() => {}, 1000);", "")

def start_time(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def alive(pid: int, start: int) -> bool:
    try:
        data = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return data[0] != "Z" and int(data[19]) == start


def children(pid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if int(Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[1]) \
                        == pid:
                    out.append(int(name))
            except (OSError, IndexError, ValueError):
                continue
    return out


@dataclass
class Proc:
    pid: int
    start: int
    # host | server | service | daemon | leak | crashed-host | client | superseded | reader-host
    kind: str
    born: float
    stop_at: float = float("inf")  # when we retire it
    stopping: bool = False  # we asked it to go: its death is ours
    leaked_at: float | None = None  # leaked, or (a superseded copy) last used, since
    quiet_from: float | None = None  # a superseded copy: its last traffic was not before
    ended_at: float | None = None
    missed: bool = False
    servers: list[Proc] = field(default_factory=list)


@dataclass
class Driven:
    """A host the soak talks to: `call I` on its stdin, `ok I` back (tests/hostcheck_hosts)."""

    host: Proc
    pop: subprocess.Popen[bytes]
    copies: list[Proc]
    scheme: str  # newer | edit | together | again
    next_at: float
    last_used: dict[int, tuple[float, float]] = field(default_factory=dict)  # i -> sent, ok
    edit_at: float = float("inf")
    phase_end: float = 0.0
    phase: int = 1  # `again`: the copy in use this stretch
    config: str = ""
    entry: str = ""


class Soak:
    def __init__(self, args: argparse.Namespace, tmp: Path) -> None:
        self.a = args
        self.tmp = tmp
        self.rng = random.Random(args.seed)
        self.procs: list[Proc] = []
        self.by_pid: dict[int, Proc] = {}
        self.popens: list[subprocess.Popen[bytes]] = []
        self.reaped: list[tuple[float, str, int]] = []  # time, outcome, pid
        self.wrong: dict[tuple[int, int], list[str]] = {}  # (pid, start) -> what we saw
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()
        self.node = NODE_MODULES is not None and bool(_which("node"))
        self.driven: list[Driven] = []
        self.failed: list[str] = []
        self.calls = 0
        self.entries: dict[str, list[str]] = {"mini": [str(MINI)]}
        self._files()

    # ----- setup ---------------------------------------------------------------------

    def _write(self, name: str, text: str) -> str:
        path = self.tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return str(path)

    def _files(self) -> None:
        w = self._write
        self.f = {"py_host": w("py_host.py", PY_HOST), "crash_host": w("crash_host.py",
                  PY_CRASH_HOST), "crashy": w("crashy.py", CRASHING_SERVER),
                  "py_live": w("weather/server.py", PY_LIVE_SERVER),
                  "py_leak": w("notes/server.py", PY_SDK_SERVER),
                  "service": w("svc/worker.py", SERVICE), "launcher": w("launch.py", LAUNCHER),
                  "reader_host": w("reader_host.py", READER_HOST),
                  "reader_server": w("reader/mcp-server-reader.py", READER_SERVER)}
        if self.node:
            for name, text in (("node_live", NODE_LIVE_SERVER), ("node_leak", NODE_SDK_SERVER),
                               ("node_host", NODE_HOST), ("node_crash", NODE_CRASH_HOST)):
                d = self.tmp / name
                d.mkdir()
                (d / "node_modules").symlink_to(NODE_MODULES)  # type: ignore[arg-type]
                (d / "package.json").write_text(json.dumps({
                    "name": f"soak-{name}", "version": "1.0.0", "type": "module",
                    "dependencies": {"@modelcontextprotocol/sdk": "^1.0.0"}}))
                self.f[name] = str(d / "index.mjs")
                (d / "index.mjs").write_text(text)
            d = self.tmp / "node_reconnect"
            d.mkdir()
            (d / "node_modules").symlink_to(NODE_MODULES)  # type: ignore[arg-type]
            self.f["node_reconnect"] = str(d / "ts_reconnect_host.mjs")
            (d / "ts_reconnect_host.mjs").write_text(
                (HOSTS / "ts_reconnect_host.mjs").read_text())
        self.f["config"] = w("mcp.json", json.dumps({"mcpServers": {"mini": {
            "command": sys.executable, "args": [str(MINI)]}}}))
        self.f["host_config"] = w("host.json", json.dumps({"mcpServers": {"mini": {
            "command": sys.executable, "args": [str(MINI)]}}}))

    def track(self, pid: int, kind: str, **kw: object) -> Proc | None:
        st = start_time(pid)
        if st is None:
            return None
        # Born when the process started, not when we saw it (--min-age counts from there).
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        born = time.monotonic() - max(0.0, uptime - st / os.sysconf("SC_CLK_TCK"))
        p = Proc(pid, st, kind, born, **kw)  # type: ignore[arg-type]
        with self.lock:
            self.procs.append(p)
            self.by_pid[pid] = p
        self.counts[kind] = self.counts.get(kind, 0) + 1
        return p

    def _launch(self, argv: list[str], log: str | None, fds: list[int] | None = None) -> int:
        out = subprocess.run([sys.executable, self.f["launcher"], json.dumps(
            {"argv": argv, "log": log, "fds": fds or []})], stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL, check=True, pass_fds=fds or []).stdout
        return int(out)

    def _wait_ready(self, log: Path | None, popen: subprocess.Popen[bytes] | None,
                    deadline: float = 120.0) -> bool:
        end = time.monotonic() + deadline
        if popen is not None:
            assert popen.stdout is not None
            line = popen.stdout.readline()  # the host's first line; EOF if it died
            return line.startswith(b"ready")
        assert log is not None
        while time.monotonic() < end:
            if log.exists() and b"ready" in log.read_bytes():
                return True
            time.sleep(0.2)
        return False

    def _servers_of(self, host: Proc, n: int) -> None:
        end = time.monotonic() + 30
        while time.monotonic() < end:
            kids = children(host.pid)
            if len(kids) >= n:
                for k in kids:
                    s = self.track(k, "server")
                    if s is not None:
                        host.servers.append(s)
                return
            time.sleep(0.1)

    # ----- churn ---------------------------------------------------------------------

    def live_host(self) -> None:
        node = self.node and self.rng.random() < 0.5
        service = self.rng.random() < 0.5
        n = self.rng.choice([1, 2])
        argv = (["node", self.f["node_host"], self.f["node_live"], str(n)] if node
                else [sys.executable, self.f["py_host"], self.f["py_live"], str(n)])
        life = self.rng.uniform(30, 150)
        if service:
            log = self.tmp / f"host-{len(self.procs)}.log"
            pid = self._launch(argv, str(log))
            h = self.track(pid, "host", stop_at=time.monotonic() + life)
            ok = self._wait_ready(log, None)
        else:
            pop = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL)
            self.popens.append(pop)
            h = self.track(pop.pid, "host", stop_at=time.monotonic() + life)
            ok = self._wait_ready(None, pop)
        if h is not None and ok:
            self._servers_of(h, n)
        elif h is not None:
            h.stopping = True  # it never came up: not ours to judge
            print(f"soak: a host did not start ({' '.join(argv[:2])})", file=sys.stderr)

    def crashed_host(self) -> None:
        log = self.tmp / f"crash-{len(self.procs)}.log"
        argv = ([sys.executable, self.f["crash_host"], self.f["crashy"]]
                if not self.node or self.rng.random() < 0.5
                else ["node", self.f["node_crash"], sys.executable, self.f["crashy"]])
        pid = self._launch(argv, str(log))
        h = self.track(pid, "crashed-host", stop_at=time.monotonic() + self.rng.uniform(60, 200))
        if not self._wait_ready(log, None) and h is not None:
            h.stopping = True

    def service(self) -> None:
        log = self.tmp / f"svc-{len(self.procs)}.log"
        pid = self._launch([sys.executable, self.f["service"]], str(log))
        self.track(pid, "service", stop_at=time.monotonic() + self.rng.uniform(60, 400))

    def daemon(self) -> None:
        import socket

        a, b = socket.socketpair()
        r, w = os.pipe()
        try:
            pid = self._launch([sys.executable, self.f["service"]], None,
                               [b.fileno(), w, r])
        finally:
            a.close()  # its socket's peer is gone, and the pipe has both ends only there
            b.close()
            os.close(r)
            os.close(w)
        self.track(pid, "daemon", stop_at=time.monotonic() + self.rng.uniform(60, 400))

    def reader_host(self) -> None:
        shape = self.rng.choice(READER_SHAPES)
        n = len(self.procs)
        pop = subprocess.Popen([sys.executable, self.f["reader_host"], shape,
                                self.f["reader_server"], str(self.tmp / f"received-{n}")],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
        self.popens.append(pop)
        h = self.track(pop.pid, "reader-host", stop_at=time.monotonic() + self.rng.uniform(30, 150))
        assert pop.stdout is not None
        line = pop.stdout.readline()  # the server's pid, once the wrapper has exited
        if h is None or not line.strip().isdigit():
            if h is not None:
                h.stopping = True
            print(f"soak: a reader host did not start ({shape})", file=sys.stderr)
            return
        s = self.track(int(line), "server")
        if s is not None:
            h.servers.append(s)
        self.counts[f"reader-host {shape}"] = self.counts.get(f"reader-host {shape}", 0) + 1

    def leak(self) -> None:
        node = self.node and self.rng.random() < 0.5
        if node:
            code = ("import { Client } from '@modelcontextprotocol/sdk/client/index.js';\n"
                    "import { StdioClientTransport } from "
                    "'@modelcontextprotocol/sdk/client/stdio.js';\n"
                    "const c = new Client({ name: 'doomed', version: '0' });\n"
                    "await c.connect(new StdioClientTransport({ command: process.execPath, "
                    f"args: [{json.dumps(self.f['node_leak'])}] }}));\n"
                    "console.log('ready'); setInterval(() => {}, 1000);\n")
            path = Path(self.f["node_host"]).with_name(f"doomed{len(self.procs)}.mjs")
            path.write_text(code)
            argv = ["node", str(path)]
        else:
            argv = [sys.executable, self.f["py_host"], self.f["py_leak"], "1"]
        pop = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
        self.popens.append(pop)
        client = self.track(pop.pid, "client")
        if client is None or not self._wait_ready(None, pop):
            if client is not None:
                client.stopping = True
            pop.kill()
            return
        servers = children(pop.pid)
        client.stopping = True
        tracked = [s for s in (self.track(k, "leak") for k in servers) if s is not None]
        pop.kill()  # the client dies mid-session: its server ignores EOF and leaks
        pop.wait()
        now = time.monotonic()
        for s in tracked:
            s.leaked_at = now

    def _host(self, argv: list[str], kind: str, life: float,
              cwd: str | None = None) -> tuple[Proc, subprocess.Popen[bytes], list[int]] | None:
        """Start a host that prints `ready PID...`; None (and a line) if it did not."""
        pop = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, cwd=cwd)
        self.popens.append(pop)
        h = self.track(pop.pid, "host", stop_at=time.monotonic() + life)
        assert pop.stdout is not None
        words = pop.stdout.readline().split()
        if h is None or len(words) < 2 or words[0] != b"ready":
            if h is not None:
                h.stopping = True
            print(f"soak: a {kind} host did not start", file=sys.stderr)
            return None
        self.counts[kind] = self.counts.get(kind, 0) + 1
        return h, pop, [int(w) for w in words[1:]]

    def _copies(self, h: Proc, pids: list[int], kinds: list[str]) -> list[Proc]:
        out = []
        for pid, kind in zip(pids, kinds, strict=False):  # a host may start fewer
            c = self.track(pid, kind)
            if c is not None:
                h.servers.append(c)
                out.append(c)
        return out

    def _life(self) -> float:
        """Long enough for a superseded copy's due time to pass while the host lives."""
        a = self.a
        return self.rng.uniform(a.min_age + 2 * a.interval + a.margin + 40, 300)

    def superseding_host(self) -> None:
        """A real host starts copies A and B, then uses only B: A is superseded."""
        kind = _weighted(self.rng, SUPERSEDING)
        if kind == "ts_forget" and not self.node:
            kind = "py_exitstack"
        if kind == "edit":
            self.edit_host()
            return
        argv = ([sys.executable, str(HOSTS / "py_sdk_exitstack_host.py"), sys.executable,
                 str(MINI)] if kind == "py_exitstack"
                else ["node", self.f["node_reconnect"], "forget", sys.executable, str(MINI)])
        got = self._host(argv, f"superseding {kind}", self._life())
        if got is None:
            return
        h, pop, pids = got
        copies = self._copies(h, pids, ["superseded", "server"])
        now = time.monotonic()
        if copies and copies[0].kind == "superseded":
            # its last traffic was the host's setup: after A started, before `ready`
            copies[0].leaked_at, copies[0].quiet_from = now, copies[0].born
        self.driven.append(Driven(h, pop, copies, "newer", now + self.rng.uniform(1, 4)))

    def edit_host(self) -> None:
        """A host with one copy of its own entry, used until the entry is edited; then the
        host starts B from the edited entry, and only B is used: A is superseded."""
        n = len(self.procs)
        name = f"mini-{n}"
        own = self._write(f"host-{n}.json", "")
        self._entry(name, [str(MINI), "--host", str(n)], own)
        got = self._host([sys.executable, str(HOSTS / "ondemand_host.py"), "sync", "1", own],
                         "superseding edit", self._life())
        if got is None:
            return
        h, pop, pids = got
        copies = self._copies(h, pids, ["server"])
        now = time.monotonic()
        # the watcher must have seen A match the entry before the edit: two rounds
        self.driven.append(Driven(h, pop, copies, "edit", now + 1, {0: (h.born, now)},
                                  edit_at=now + self.rng.uniform(2.5 * self.a.interval, 40),
                                  config=own, entry=name))

    def keeping_host(self) -> None:
        """A host that must keep every copy it has: a reconnecting host with no traffic
        after its start, an on-demand host, or one that goes back to its older copy."""
        kind = _weighted(self.rng, KEEPING)
        if kind == "reconnect":
            kinds = ["threaded", "py_sdk"] + (["node"] if self.node else [])
            host = self.rng.choice(kinds)
            mode = _weighted(self.rng, RECONNECT_MODES)
            if mode == "select":
                host = "threaded"  # only the threaded host has a select() mode
            head = {"threaded": [sys.executable, str(HOSTS / "threaded_host.py")],
                    "py_sdk": [sys.executable, str(HOSTS / "py_sdk_reconnect_host.py")],
                    "node": ["node", self.f.get("node_reconnect", "")]}[host]
            got = self._host([*head, mode, sys.executable, str(MINI)],
                             f"keeping reconnect-{host}-{mode}", self._life())
            if got is not None:
                self._copies(got[0], got[2], ["server", "server"])
            return
        mode = self.rng.choice(ONDEMAND_MODES)
        count = 2 if kind == "again" else self.rng.choice([1, 2])
        got = self._host([sys.executable, str(HOSTS / "ondemand_host.py"), mode, str(count),
                          self.f["host_config"]], f"keeping {kind}-{mode}", self._life())
        if got is None:
            return
        h, pop, pids = got
        copies = self._copies(h, pids, ["server"] * count)
        now = time.monotonic()
        if kind == "again":
            self.driven.append(Driven(h, pop, copies, "again", now + 1,
                                      phase_end=now + self._stretch()))
        else:
            self.driven.append(Driven(h, pop, copies, "together",
                                      now + self.rng.uniform(5, 90)))

    def _pause(self, scheme: str) -> float:
        """Until a driven host's next request: 5-90 s for `together`; else a burst of
        calls 1-4 s apart, and now and then a pause of 6-15 s (a model thinking: what
        lets a look see the copy in use quiet)."""
        if scheme == "together":
            return self.rng.uniform(5, 90)
        if scheme == "again":  # no pause: the copy left alone must stay under --min-age
            return self.rng.uniform(1, 4)
        return self.rng.uniform(6, 15) if self.rng.random() < 0.3 else self.rng.uniform(1, 4)

    def _stretch(self) -> float:
        """How long an `again` host uses one copy: with the next call at most 4 s after
        the stretch ends, the other copy's idle time stays under --min-age."""
        return self.rng.uniform(0.2, 0.5) * self.a.min_age

    def _entry(self, name: str, args: list[str], own: str) -> None:
        """Set config entry `name` in the watcher's config and in the host's own file,
        each written whole and renamed into place (the watcher reads it every round)."""
        with self.lock:
            self.entries[name] = args
            for path, doc in ((self.f["config"], {"mcpServers": {
                    k: {"command": sys.executable, "args": v} for k, v in self.entries.items()}}),
                    (own, {"mcpServers": {"mini": {"command": sys.executable, "args": args}}})):
                tmp = path + ".tmp"
                Path(tmp).write_text(json.dumps(doc))
                os.replace(tmp, path)

    def _call(self, d: Driven, i: int) -> bool:
        """`call i` to the host; its `ok i` within 30 s, else a failed call."""
        assert d.pop.stdin is not None and d.pop.stdout is not None
        try:
            d.pop.stdin.write(f"call {i}\n".encode())
            d.pop.stdin.flush()
        except OSError:
            return False
        fd = d.pop.stdout.fileno()
        if not select.select([fd], [], [], 30)[0]:
            return False
        return d.pop.stdout.readline().split() == [b"ok", str(i).encode()]

    def drive(self) -> None:
        """Each driven host's due requests (module docstring)."""
        now = time.monotonic()
        for d in self.driven:
            if d.host.stopping or now < d.next_at:
                continue
            if d.scheme == "edit" and now >= d.edit_at:
                self._edit(d)
                continue
            if d.scheme == "again" and now >= d.phase_end:
                d.phase = 1 - d.phase if len(d.copies) > 1 else 0
                d.phase_end = now + self._stretch()
            use = {"newer": [1], "edit": [len(d.copies) - 1], "again": [d.phase],
                   "together": list(range(len(d.copies)))}[d.scheme]
            for i in use:
                if i >= len(d.copies) or d.copies[i].ended_at is not None:
                    continue
                sent = time.monotonic()
                if not self._call(d, i):
                    self.failed.append(f"{d.host.pid} ({d.scheme}) call {i} to pid "
                                       f"{d.copies[i].pid} failed")
                    d.host.stopping = True  # judged once; its death is counted as wrong
                    break
                d.last_used[i] = (sent, time.monotonic())
            self.calls += len(use)
            d.next_at = time.monotonic() + self._pause(d.scheme)

    def _edit(self, d: Driven) -> None:
        """Edit the host's entry, have it start B from it; A is superseded from its last use."""
        d.edit_at = float("inf")
        self._entry(d.entry, [*self.entries[d.entry], "--generation", "2"], d.config)
        assert d.pop.stdin is not None and d.pop.stdout is not None
        try:
            d.pop.stdin.write(b"start\n")
            d.pop.stdin.flush()
        except OSError:
            return
        fd = d.pop.stdout.fileno()
        words = d.pop.stdout.readline().split() if select.select([fd], [], [], 30)[0] else []
        if len(words) != 2 or words[0] != b"started":
            self.failed.append(f"{d.host.pid} (edit) did not start its new copy")
            return
        [b] = self._copies(d.host, [int(words[1])], ["server"]) or [None]
        a = d.copies[0]
        a.kind = "superseded"
        a.quiet_from, a.leaked_at = d.last_used[0]
        self.counts["superseded (edited entry)"] = \
            self.counts.get("superseded (edited entry)", 0) + 1
        if b is not None:
            d.copies.append(b)
        d.next_at = time.monotonic() + 1

    # ----- bookkeeping ---------------------------------------------------------------

    def on_line(self, line: str) -> None:
        head, _, rest = line.partition(": pid ")
        outcome = head.split(" ")[0]
        if not rest or outcome not in ("ended", "survived", "denied"):
            return
        pid = int(rest.split()[0])
        now = time.monotonic()
        with self.lock:
            p = self.by_pid.get(pid)
        self.reaped.append((now, outcome, pid))
        early = p is not None and p.kind == "superseded" and p.quiet_from is not None \
            and now < p.quiet_from + self.a.min_age
        if p is None or p.kind not in ("leak", "superseded") or early:
            key = (pid, p.start if p else 0)
            why = " before --min-age of idleness" if early else ""
            for d in self.driven:  # a copy the soak talks to: how long since its last call
                if p is not None and p in d.copies:
                    i = d.copies.index(p)
                    last = d.last_used.get(i)
                    why += (f" (a {d.scheme} host's copy {i}, last called "
                            f"{now - last[1]:.0f}s before)" if last else
                            f" (a {d.scheme} host's copy {i}, never called)")
            self.wrong.setdefault(key, []).append(
                f"reap {outcome} pid {pid} ({p.kind if p else 'not ours'}){why}: {line}")
        elif p.ended_at is None:
            p.ended_at = now

    def check(self) -> None:
        now = time.monotonic()
        a = self.a
        for p in list(self.procs):
            if p.kind == "leak":
                if p.ended_at is None and not alive(p.pid, p.start):
                    p.ended_at = now
                due = max(p.born + a.min_age, p.leaked_at or now) + a.interval + a.margin
                if p.ended_at is None and now > due and not p.missed:
                    p.missed = True
                continue
            if p.kind == "superseded":
                if p.ended_at is None and not alive(p.pid, p.start):
                    p.ended_at = now  # by reap (its line says so) or with its host
                due = (p.leaked_at or now) + a.min_age + 2 * a.interval + a.margin
                if p.ended_at is None and not p.stopping and now > due and not p.missed:
                    p.missed = True
                continue
            if p.stopping or p.kind == "client":
                continue
            if not alive(p.pid, p.start):
                p.stopping = True
                self.wrong.setdefault((p.pid, p.start), []).append(
                    f"{p.kind} pid {p.pid} died while not asked to")
            elif now >= p.stop_at:
                self.retire(p)

    def retire(self, p: Proc) -> None:
        p.stopping = True
        for s in p.servers:
            s.stopping = p.kind != "reader-host"
        if alive(p.pid, p.start):  # identity checked: the process we started
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGTERM)
        if p.kind == "reader-host":  # once its host is gone, its server is a leak
            end = time.monotonic() + 10
            while alive(p.pid, p.start) and time.monotonic() < end:
                time.sleep(0.05)
            for s in p.servers:
                s.leaked_at = time.monotonic()
                s.kind = "leak"
                self.counts["leak (reader host stopped)"] = \
                    self.counts.get("leak (reader host stopped)", 0) + 1

    # ----- the run -------------------------------------------------------------------

    def run(self) -> int:
        a = self.a
        cmd = [sys.executable, "-m", "mcp_tether", "reap", "--watch", "--yes",
               "--min-age", str(a.min_age), "--interval", str(a.interval),
               "--config", self.f["config"]]
        for inc in a.include:
            cmd += ["--include", inc]
        watcher = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True, cwd=self.tmp)
        lines: list[str] = []

        def read() -> None:
            assert watcher.stdout is not None
            for line in watcher.stdout:
                lines.append(line.rstrip("\n"))
                self.on_line(line.rstrip("\n"))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        t0 = time.monotonic()
        end = t0 + a.minutes * 60
        # Standing population first, then churn until the end.
        for make in (self.service, self.service, self.daemon, self.daemon, self.crashed_host,
                     self.crashed_host):
            make()
        actions = [(self.live_host, 3.0), (self.leak, 3.0), (self.service, 1.0),
                   (self.daemon, 1.0), (self.crashed_host, 1.0), (self.superseding_host, 3.0),
                   (self.keeping_host, 4.0), (self.reader_host, 3.0)]
        while time.monotonic() < end:
            self.check()
            self.drive()
            live_hosts = sum(1 for p in self.procs if p.kind == "host" and not p.stopping)
            make = _weighted(self.rng, actions)
            if make in (self.live_host, self.superseding_host, self.keeping_host) \
                    and live_hosts >= a.max_hosts:
                make = self.leak
            if make == self.reader_host and sum(
                    1 for p in self.procs if p.kind == "reader-host" and not p.stopping) \
                    >= a.max_hosts:
                make = self.leak
            make()
            pause = end - time.monotonic()
            step = min(self.rng.uniform(2, 6), max(0.0, pause))
            stop = time.monotonic() + step
            while time.monotonic() < stop:
                self.check()
                self.drive()
                time.sleep(0.5)
        # Leaks made in the last minutes get their full due time before the count.
        grace_end = time.monotonic() + a.min_age + a.interval + a.margin
        grace_end += a.interval  # a superseded copy's due time has a second interval
        while time.monotonic() < grace_end and any(
                p.kind in ("leak", "superseded") and p.ended_at is None and not p.missed
                and not p.stopping for p in self.procs):
            self.check()
            self.drive()
            time.sleep(0.5)
        self.check()
        stop_watcher(watcher)
        reader.join(timeout=5)
        self.report(time.monotonic() - t0, lines)
        self.cleanup()
        bad = self.wrong or self.failed or any(p.missed for p in self.procs)
        return 1 if bad else 0  # wrong kills, failed calls, missed leaks and copies

    def report(self, elapsed: float, lines: list[str]) -> None:
        leaks = [p for p in self.procs if p.kind == "leak"]
        times = sorted(p.ended_at - max(p.born + self.a.min_age, p.leaked_at or 0)
                       for p in leaks if p.ended_at is not None and p.leaked_at is not None)
        missed = [p for p in leaks if p.missed]
        started = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        print(f"soak_reap: {elapsed / 60:.1f} min, reap --watch --min-age {self.a.min_age:g} "
              f"--interval {self.a.interval:g} --include {','.join(self.a.include) or '-'} "
              f"(node hosts: {'yes' if self.node else 'no'}), seed {self.a.seed}")
        print(f"  started: {started}")
        print(f"  reap lines: {len(lines)}; ended by reap: "
              f"{sum(1 for _, o, _ in self.reaped if o == 'ended')}")
        if times:
            mid = times[len(times) // 2]
            print(f"  leak ended after it was eligible: median {mid:.1f} s, max {times[-1]:.1f} s")
        print(f"  wrong kills: {len(self.wrong)}")
        for seen in self.wrong.values():
            print(f"    {'; '.join(seen)}")
        print(f"  missed leaks: {len(missed)} of {len(leaks)}")
        for p in missed:
            print(f"    pid {p.pid} leaked {p.leaked_at and p.leaked_at - p.born:.0f}s after "
                  "start, still alive")
        print(f"  tools/calls asked of live hosts: {self.calls}; failed: {len(self.failed)}")
        for f in self.failed:
            print(f"    {f}")
        gone = [p for p in self.procs if p.kind == "superseded"]
        by_reap = {pid for _, o, pid in self.reaped if o == "ended"}
        ended = [p for p in gone if p.pid in by_reap]
        late = sorted(p.ended_at - (p.leaked_at + self.a.min_age) for p in ended
                      if p.ended_at is not None and p.leaked_at is not None)
        first = sum(1 for p in gone if p.stopping and p not in ended)
        print(f"  superseded copies: {len(gone)}, ended by reap {len(ended)}, "
              f"retired with their host first {first}")
        if late:
            print(f"  superseded copy ended after --min-age of idleness: median "
                  f"{late[len(late) // 2]:.1f} s, max {late[-1]:.1f} s")
        smissed = [p for p in gone if p.missed]
        print(f"  missed superseded: {len(smissed)} of {len(gone)}")
        for p in smissed:
            scheme = next((d.scheme for d in self.driven if p in d.copies), "?")
            alive_now = "still alive" if alive(p.pid, p.start) else "gone since"
            print(f"    pid {p.pid} ({scheme} host) last called "
                  f"{time.monotonic() - (p.leaked_at or 0):.0f}s ago, {alive_now}")

    def cleanup(self) -> None:
        for p in self.procs:
            if alive(p.pid, p.start):  # identity checked just above: ours
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signal.SIGKILL)
        for pop in self.popens:
            if pop.poll() is None:
                pop.kill()
            pop.wait()


def stop_watcher(watcher: subprocess.Popen[str]) -> None:
    """SIGTERM to `reap --watch` (it ends its round and exits), SIGKILL after a minute."""
    watcher.send_signal(signal.SIGTERM)
    try:
        watcher.wait(timeout=60)
    except subprocess.TimeoutExpired:
        watcher.kill()
        watcher.wait()


def _weighted(rng: random.Random, choices: Sequence[tuple[T, float]]) -> T:
    """One of `choices` (item, weight), drawn by weight: one `uniform` draw per call."""
    pick = rng.uniform(0, sum(w for _, w in choices))
    for item, weight in choices:
        pick -= weight
        if pick <= 0:
            return item
    return choices[-1][0]


def _which(name: str) -> str | None:
    import shutil

    return shutil.which(name)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--min-age", type=float, default=20.0)
    ap.add_argument("--interval", type=float, default=5.0)
    ap.add_argument("--margin", type=float, default=30.0,
                    help="seconds past min-age + interval before a live leak is missed")
    ap.add_argument("--include", action="append", default=None,
                    choices=("guess", "stdio", "superseded", "abandoned"),
                    help="passed to reap (default: stdio, superseded and abandoned: the "
                         "widest, abandoned to show it ends nothing)")
    ap.add_argument("--max-hosts", type=int, default=5)
    args = ap.parse_args()
    if args.include is None:
        args.include = ["stdio", "superseded", "abandoned"]
    _pidns.enter()
    with tempfile.TemporaryDirectory(prefix="soak-reap-") as tmp:
        return Soak(args, Path(tmp)).run()


if __name__ == "__main__":
    sys.exit(main())
