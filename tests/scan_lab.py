"""Test helpers for the scan tests: real clients, real servers, real leaks.

A client process starts a server (pipes, or a socketpair as Node hosts do), proves it
serves (an MCP `initialize` round trip, or a "ready" line), prints its pid and waits.
SIGKILL of the client leaks the server: in the suite's pid namespace it is adopted by
the test init (pid 1). `Lab.cleanup` SIGKILLs every process it started, by identity.
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_tether.errors import TetherError
from mcp_tether.lab import node_env
from mcp_tether.proc import ProcessId, descendants, identify, signal_process, wait_gone
from polling import until

DEADLINE = 15.0
# Why a scan test is marked `requires_far_ends`: its promise rests on other processes'
# fds (pipe far ends, socket peers), which the portable backend answers "unknown"; so
# there `ps` calls nothing leaked and `reap` ends nothing (what test_portable.py asserts
# instead). The Linux and darwin backends see them.
FAR_ENDS = "far ends unknown: nothing is called leaked, reap ends nothing"

FAKE_SERVER = """\
import sys, threading, time
{imports}
def tick():  # a non-daemon thread: EOF alone would never end this server
    while True:
        time.sleep(0.05)
threading.Thread(target=tick).start()
sys.stdout.write("ready\\n"); sys.stdout.flush()
"""

PY_SDK_SERVER = """\
import threading, time
from mcp.server.mcpserver import MCPServer

app = MCPServer("nameless")

@app.tool()
def echo(text: str) -> str:
    return text

def tick():  # non-daemon: the process outlives EOF (python-sdk issue 2231)
    while True:
        time.sleep(0.05)

threading.Thread(target=tick).start()
app.run()
"""

NODE_SDK_SERVER = """\
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
const server = new McpServer({ name: "nameless", version: "1.2.3" });
await server.connect(new StdioServerTransport());
setInterval(() => {}, 1000); // keeps the event loop alive after EOF: it leaks
"""

# An `npm exec X`-shaped wrapper: node rewrites its title, then runs X's bin with the
# same stdio, as npx does.
NPM_EXEC = """\
import {{ spawn }} from "node:child_process";
process.title = "npm exec {spec}";
const child = spawn(process.execPath, [{bin!r}], {{ stdio: "inherit" }});
child.on("exit", (code) => process.exit(code ?? 1));
"""

CLIENT = """\
import json, signal, socket, subprocess, sys, threading
spec = json.loads(sys.argv[1])
kw = dict(stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
          start_new_session=spec["new_session"], cwd=spec["cwd"])
if spec["socket"]:
    mine, theirs = socket.socketpair()
    p = subprocess.Popen(spec["argv"], stdin=theirs, **kw)
    theirs.close()
    send, wfd = mine.sendall, mine.fileno()
else:
    p = subprocess.Popen(spec["argv"], stdin=subprocess.PIPE, **kw)
    def send(b):
        p.stdin.write(b); p.stdin.flush()
    wfd = p.stdin.fileno()
if spec["hello"]:
    send((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}) + "\\n").encode())
line = p.stdout.readline()
assert line, "the server said nothing"
extra = []
if spec["leak_writer"]:  # a helper that inherited the write end of the server's input
    h = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"],
                         pass_fds=[wfd], stdin=subprocess.DEVNULL, start_new_session=True)
    extra.append(h.pid)
print(p.pid, *extra, flush=True)
threading.Thread(target=lambda: [None for _ in iter(lambda: p.stdout.read1(65536), b"")],
                 daemon=True).start()  # a live client keeps reading its server
signal.pause()
"""


# A live host reading a server behind a wrapper that exited (tests/test_scan_channels.py,
# bench/soak_reap.py). The server ignores its input and write errors and writes a line
# every 50 ms (identified as an MCP server by the import its script shows, so plain
# `reap --yes` would end it if it were leaked, as it is once its host is gone).
READER_SERVER = """\
import os, sys, threading, time
if False:
    import mcp
def tick():
    while True:
        try:
            sys.stdout.write("tick\\n"); sys.stdout.flush()
        except OSError:
            pass  # its reader is gone: it leaks
        time.sleep(0.05)
sys.stdout.write(f"ready {os.getpid()}\\n"); sys.stdout.flush()
threading.Thread(target=tick).start()
"""

# The host: starts the server through `sh -c '... & exit 0'` on the shape's channel,
# closes or half-closes the server's input, prints the server's pid, then keeps reading
# and writes how many bytes it has received to a file after every read.
READER_HOST = """\
import os, socket, subprocess, sys
shape, server, count = sys.argv[1], sys.argv[2], sys.argv[3]
run = f"{sys.executable} {server}"
if shape == "one-socketpair":  # one socketpair both ways
    mine, theirs = socket.socketpair()
    fd = theirs.fileno()
    cmd, fds = f"{run} <&{fd} >&{fd} {fd}<&- & exit 0", [fd]
elif shape == "two-socketpairs":  # one per stream, as Node's child_process gives
    in_mine, in_theirs = socket.socketpair()
    mine, out_theirs = socket.socketpair()
    a, b = in_theirs.fileno(), out_theirs.fileno()
    cmd, fds = f"{run} <&{a} >&{b} {a}<&- {b}<&- & exit 0", [a, b]
else:  # a pipe pair
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    cmd, fds = f"{run} <&{r_in} >&{w_out} {r_in}<&- {w_out}<&- & exit 0", [r_in, w_out]
wrapper = subprocess.Popen(["/bin/sh", "-c", cmd], pass_fds=fds, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL)
for fd in fds:
    os.close(fd)
wrapper.wait()  # the wrapper is gone: the server is adopted by the init
if shape == "one-socketpair":
    mine.shutdown(socket.SHUT_WR)  # Node's stdin.end() on a socket: a half-close
    recv = mine.recv
elif shape == "two-socketpairs":
    in_mine.shutdown(socket.SHUT_WR)  # the TS SDK's first rung; its 2 s grace follows
    recv = mine.recv
else:
    os.close(w_in)  # EOF on the server's input
    recv = lambda n: os.read(r_out, n)
got = recv(4096)
print(got.split(b"\\n")[0].split()[1].decode(), flush=True)
total = len(got)
while True:
    data = recv(65536)
    if not data:
        break
    total += len(data)
    with open(count + ".tmp", "w") as fh:
        fh.write(str(total))
    os.replace(count + ".tmp", count)
"""

READER_SHAPES = ["one-socketpair", "two-socketpairs", "pipe-pair"]

# A server whose input has no writer and whose output a process named like containerd's
# shim reads (the client is beyond it): both adopted by pid 1 once the launcher exits.
SHIM_LAUNCHER = """\
import os, subprocess, sys
shim_exe, server = sys.argv[1], sys.argv[2]
out_r, out_w = os.pipe()
in_r, in_w = os.pipe()
shim = subprocess.Popen([shim_exe, "-c", "import signal; signal.pause()"], pass_fds=[out_r],
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL, start_new_session=True)
srv = subprocess.Popen([sys.executable, server], stdin=in_r, stdout=out_w,
                       stderr=subprocess.DEVNULL, start_new_session=True)
os.close(in_w)  # its input has no writer; its output's reader is the "shim"
print(shim.pid, srv.pid, flush=True)
"""

# The hosts of the abandoned and superseded tests (tests/hostcheck_hosts) and the server
# each starts copies of (the `mini` config entry).
HOSTS = Path(__file__).parent / "hostcheck_hosts"
MINI = Path(__file__).parent / "servers" / "mini.py"


def kids(pid: int) -> list[ProcessId]:
    return [p.ident for p in descendants(pid)]


def _node_sdk_modules() -> Path | None:
    """The lab's pinned Node SDK, installed on first use as `mcp-tether lab` does (so a
    fresh clone runs the Node hosts too); None without node and npm, or offline."""
    if node_env.missing_tools() is not None:
        return None
    try:
        d = node_env.ensure(quiet=True) / "node_modules"
    except TetherError:
        return None
    return d if (d / "@modelcontextprotocol" / "sdk" / "package.json").exists() else None


# Found at import, before a test points HOME at an empty directory.
NODE_MODULES = _node_sdk_modules()
# The scan tests' Node hosts need node and the lab's pinned SDK.
needs_node = pytest.mark.skipif(shutil.which("node") is None or NODE_MODULES is None,
                                reason="needs node and the lab's pinned Node SDK")
# A scan reads other processes' fds, stat and io in /proc.
needs_proc = pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="needs /proc")


@dataclasses.dataclass
class Pair:
    client: subprocess.Popen[bytes]
    server: ProcessId  # the root the client started (the wrapper if there is one)
    argv: list[str]
    helpers: list[ProcessId]

    def orphan(self) -> ProcessId:
        """SIGKILL the client; wait until its server has been adopted."""
        self.client.kill()
        self.client.wait()

        def adopted() -> bool:
            try:
                return Path(f"/proc/{self.server.pid}/stat").read_text().rsplit(")", 1)[1] \
                    .split()[1] != str(self.client.pid)
            except OSError:
                return False

        until(adopted, "the server to be reparented", DEADLINE)
        return self.server


class Lab:
    """Starts clients and servers; kills every one of them at the end, by identity."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.started: list[ProcessId] = []
        self.procs: list[subprocess.Popen[bytes]] = []
        self.n = 0

    def script(self, name: str, text: str) -> Path:
        path = self.tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def fake_server(self, name: str = "mcp-server-fake.py", *, sdk_import: bool = False) -> Path:
        # The SDK import is seen by identification (it reads the script), never executed:
        # a fake server stays small and quick to start.
        imports = "if False:\n    import mcp" if sdk_import else ""
        return self.script(name, FAKE_SERVER.format(imports=imports))

    def pair(self, argv: list[str] | None = None, *, new_session: bool = False,
             socket: bool = False, wrapper: bool = False, hello: bool = False,
             leak_writer: bool = False, cwd: str | None = None) -> Pair:
        if argv is None:
            argv = [sys.executable, str(self.fake_server())]
        if wrapper:  # `sh -c` that stays around (not exec): a wrapper with the same stdin
            argv = ["/bin/sh", "-c", " ".join(f"'{a}'" for a in argv) + "; true"]
        self.n += 1
        client_py = self.script(f"client{self.n}.py", CLIENT)  # names no server
        spec = {"argv": argv, "socket": socket, "new_session": new_session, "hello": hello,
                "leak_writer": leak_writer, "cwd": cwd}
        c = subprocess.Popen([sys.executable, str(client_py), json.dumps(spec)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        self.procs.append(c)
        assert c.stdout is not None
        line = c.stdout.readline().split()
        assert line, "the client failed to start its server"
        ident = identify(int(line[0]))
        assert ident is not None
        self.started.append(ident)
        self.started += kids(ident.pid)
        helpers = [i for i in map(identify, map(int, line[1:])) if i is not None]
        self.started += helpers
        return Pair(c, ident, argv, helpers)

    def shimmed_server(self) -> tuple[ProcessId, ProcessId]:
        """(the "shim", the SDK-identified server it reads) of SHIM_LAUNCHER, adopted."""
        shim_exe = self.tmp / "containerd-shim-runc-v2"
        shim_exe.symlink_to(os.path.realpath(sys.executable))
        server = self.fake_server("mcp-server-shimmed.py", sdk_import=True)
        launcher = self.script("shim_launch.py", SHIM_LAUNCHER)
        out = subprocess.run([sys.executable, str(launcher), str(shim_exe), str(server)],
                             stdout=subprocess.PIPE, check=True).stdout.split()
        shim, srv = identify(int(out[0])), identify(int(out[1]))
        assert shim is not None and srv is not None
        self.started += [shim, srv]

        def adopted() -> bool:
            try:
                stat = Path(f"/proc/{srv.pid}/stat").read_text()
            except OSError:
                return False
            return stat.rsplit(")", 1)[1].split()[1] == "1"

        until(adopted, "the shimmed server to be adopted by pid 1", DEADLINE)
        return shim, srv

    def popen(self, argv: list[str], **kw: Any) -> subprocess.Popen[bytes]:
        p = subprocess.Popen(argv, **kw)
        self.procs.append(p)
        ident = identify(p.pid)
        if ident is not None:
            self.started.append(ident)
        return p

    def cleanup(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for ident in self.started:
            signal_process(ident, signal.SIGKILL)
        for ident in self.started:
            wait_gone(ident, DEADLINE)


def mini_config(lab: Lab, *extra: str) -> str:
    """A config file of the lab's with one entry, `mini` (MINI with `extra` arguments):
    what ties a host's copies to one entry."""
    path = lab.tmp / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"mini": {"command": sys.executable,
                                                        "args": [str(MINI), *extra]}}}))
    return str(path)


def ts_reconnect_host(*args: str) -> tuple[list[str], Path]:
    """The TypeScript SDK host (hostcheck_hosts/ts_reconnect_host.mjs) with `args`: its
    argv and the folder to run it in, beside the lab's node_modules (the script must sit
    there to import the SDK)."""
    assert NODE_MODULES is not None
    folder = NODE_MODULES.parent
    script = folder / "ts_reconnect_host.mjs"
    shutil.copy2(HOSTS / "ts_reconnect_host.mjs", script)
    return ["node", str(script), *args], folder


def host_line(proc: subprocess.Popen[bytes], what: str) -> bytes:
    """A host's next line on stdout, once there is one: polled with a deadline, so a host
    that never says it fails the test (timed out waiting for `what`) instead of hanging."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    until(lambda: select.select([fd], [], [], 0)[0], what, DEADLINE * 2)
    return proc.stdout.readline()


class Host:
    """A host process that started copies of the `mini` config entry and uses them on
    demand: `use(i)` asks it for a tools/call to copy i and waits for its `ok i`."""

    def __init__(self, lab: Lab, argv: list[str], cwd: Path | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.proc = lab.popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd,
                              env=env)
        self.lab = lab
        words = self._line().split()
        assert words and words[0] == "ready", words
        self.copies = [self._ident(int(w)) for w in words[1:]]
        lab.started += self.copies

    @staticmethod
    def _ident(pid: int) -> ProcessId:
        got = identify(pid)
        assert got is not None
        return got

    def _line(self) -> str:
        return host_line(self.proc, "the host to answer").decode()

    def tell(self, command: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()
        return self._line().strip()

    def use(self, i: int) -> None:
        assert self.tell(f"call {i}") == f"ok {i}"

    def start(self) -> ProcessId:
        words = self.tell("start").split()
        assert words[0] == "started", words
        ident = self._ident(int(words[1]))
        self.lab.started.append(ident)
        self.copies.append(ident)
        return ident


PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37


def _is_subreaper() -> bool:
    import ctypes

    from mcp_tether import platform

    flag = ctypes.c_int(0)
    platform.prctl(PR_GET_CHILD_SUBREAPER, ctypes.addressof(flag))
    return bool(flag.value)


def lab_fixture(tmp_path: Path, monkeypatch: Any) -> Any:
    """The body of the `lab` fixture (tests/conftest.py), a generator."""
    from mcp_tether import platform

    # No real host configs: an empty home and a project directory of our own.
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    # Leaks must go to init, as on a user's machine: if code run in-process by an
    # earlier test (guard, probe) made pytest a subreaper, they would come to us instead.
    was_subreaper = _is_subreaper()
    if was_subreaper:
        platform.prctl(PR_SET_CHILD_SUBREAPER, 0)
    lab = Lab(tmp_path)
    try:
        yield lab
    finally:
        lab.cleanup()
        if was_subreaper:
            platform.set_subreaper()


def run_cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    from mcp_tether import cli

    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def entry(doc: dict[str, Any], pid: int) -> dict[str, Any] | None:
    return next((s for s in doc["results"] if s["pid"] == pid), None)


def assert_consistent(doc: dict[str, Any]) -> None:
    """The JSON never contradicts itself: checked on every document."""
    for s in doc["results"]:
        ev = set(s["evidence"])
        assert ("parent-gone" in ev) == (s["parent"]["role"] == "adopter"), s
        channel_gone = bool(ev & {"stdin-no-writer", "stdout-no-reader"})
        unseen = "far-end-unseen" in ev
        assert (s["state"] == "unknown") == unseen, s
        held = bool(ev & {"writer-held", "reader-held"})
        assert (s["state"] == "leaked") == ("parent-gone" in ev and channel_gone
                                            and not unseen and not held), s
        if held:  # a far end held by a live process: the launcher is gone, yet not leaked
            assert "parent-gone" in ev and channel_gone and s["state"] != "leaked", s
        if s["state"] == "live":
            assert "host-gone" not in ev, s
        assert not (s["mcp"] and s["guess"]), s
        if "stdin-no-writer" in ev:
            assert s["stdin"]["writer"] == "no", s
        # superseded exactly when a newer copy was seen used: never leaked or unknown
        assert (s["state"] == "superseded") == (s["superseded"]["answer"] == "yes"
                                                and "newer-copy-used" in ev
                                                and s["state"] not in ("leaked", "unknown")), s
    t = doc["totals"]
    for state in ("leaked", "superseded"):
        assert t[state] == sum(s["state"] == state for s in doc["results"])
        assert t[f"{state}_rss_bytes"] == sum(s["rss_bytes"] for s in doc["results"]
                                              if s["state"] == state)


def ps_json(capsys: Any, *argv: str) -> dict[str, Any]:
    """`ps --json` (and `argv`, e.g. `--config`), checked for consistency."""
    rc, out, _ = run_cli(capsys, "ps", "--json", *argv)
    assert rc == 0
    doc: dict[str, Any] = json.loads(out)
    assert_consistent(doc)
    return doc


def assert_ps_and_reap_agree(capsys: Any, pid: int, *include: str,
                             config: str | None = None) -> dict[str, Any]:
    """`ps --json` shows the verdict `reap` acts on (docs/leaked-servers.md, "The rules").

    A dry run with `--min-age 0` and these `--include`s plans only what ps lists as
    leaked (or superseded, with `--include superseded`; never abandoned, a hint only),
    and leaves a leaked one out only
    for a reason its options give (`--include`, `--allow`), never as not leaked or
    unknown. For `pid`, whose shape the caller's options admit: planned exactly when
    ps says so; if not, a `--yes` run leaves it too. Returns the ps document."""
    opts = [a for inc in include for a in ("--include", inc)]
    if config is not None:
        opts += ["--config", config]
    doc = ps_json(capsys, *(["--config", config] if config is not None else []))
    rc, out, err = run_cli(capsys, "reap", "--dry-run", "--json", "--min-age", "0", *opts)
    assert rc == 0, err
    dry = json.loads(out)  # a reap-plan document
    planned = {s["pid"] for s in dry["results"]}
    left = {s["pid"]: s["reason"] for s in dry["not_selected"]}
    states = {s["pid"]: s["state"] for s in doc["results"]}

    def plannable(state: str | None) -> bool:
        return state == "leaked" or (state == "superseded" and "superseded" in include)

    for p in planned:
        assert plannable(states.get(p)), (p, states.get(p), doc["results"])
    for p, state in states.items():
        if state == "leaked" and p not in planned:
            assert p in left and ("--include" in left[p] or "--allow" in left[p]), \
                (p, left.get(p))
    e = entry(doc, pid)
    state = e["state"] if e is not None else None
    assert plannable(state) == (pid in planned), (e, planned, left.get(pid))
    if not plannable(state):
        rc, out, err = run_cli(capsys, "reap", "--yes", "--json", "--min-age", "0", *opts)
        assert rc == 0, err
        done = json.loads(out)
        reaped = done["results"] if done["schema"] == "mcp-tether/reap" else []
        assert pid not in [r["pid"] for r in reaped], out
    return doc


def codex_standin(lab: Lab) -> tuple[Path, dict[str, str]]:
    """A stand-in for the process of Codex 0.171.0, NOT Codex: this Python interpreter
    copied to where npm installs Codex's native binary
    (`node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex`,
    its platform package's manifest beside it), so that its /proc/PID/exe has the real
    one's shape. Run with `ondemand_host.py`, it starts its copies as Codex does: children
    of the one process, each with the same argv, cwd and environment (`start`: one more
    agent's copy). Returns the executable and the environment to run it in (the copy
    finds its shared libpython there)."""
    root = lab.tmp / "node_modules" / "@openai" / "codex-linux-x64"
    exe = root / "vendor" / "x86_64-unknown-linux-musl" / "bin" / "codex"
    exe.parent.mkdir(parents=True)
    shutil.copy2(os.path.realpath(sys.executable), exe)
    (root / "package.json").write_text(json.dumps(
        {"name": "@openai/codex", "version": "0.171.0-linux-x64"}))
    env = dict(os.environ)
    libdir = sysconfig.get_config_var("LIBDIR")
    if sysconfig.get_config_var("Py_ENABLE_SHARED") and libdir:
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (libdir, env.get("LD_LIBRARY_PATH")) if p)
    return exe, env


class GatewayClient:
    """One MCP client of `gateway_host.py`: connects, initializes, calls `sleep`."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
        self.file = self.sock.makefile("rwb")
        self.n = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "gateway-client", "version": "0"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, msg: dict[str, Any]) -> None:
        self.file.write(json.dumps(msg).encode() + b"\n")
        self.file.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.n += 1
        self._send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        while True:
            line = self.file.readline()
            assert line, f"the gateway hung up on {method}"
            msg: dict[str, Any] = json.loads(line)
            if msg.get("id") == self.n:
                return msg

    def call(self) -> None:
        got = self.request("tools/call", {"name": "sleep", "arguments": {"seconds": 0}})
        assert "result" in got, got

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def watch_while(cfg: str, use: Any, rounds: int, *, interval: float = 0.5,
                min_age: float = 2.0, every: float = 0.5,
                ended: list[int] | None = None) -> list[str]:
    """`reap --watch --include superseded --min-age MIN_AGE` (the tests' short equivalent
    of `--min-age 20`) for `rounds` rounds while `use()` runs every `every` seconds in a
    thread; the lines it printed. A failed `use()` fails the test. With `ended`: stops
    after the first round that ended something, its number appended to `ended`."""
    from mcp_tether.scan.watch import watch

    stop = threading.Event()
    failed: list[BaseException] = []

    def traffic() -> None:
        while not stop.wait(every):
            try:
                use()
            except BaseException as exc:  # noqa: BLE001  # reported by the test below
                failed.append(exc)
                return

    n = [0]

    def counted(result: Any, outcomes: Any) -> None:
        n[0] += 1
        if ended is not None and any(o.outcome == "ended" for o in outcomes):
            ended.append(n[0])

    user = threading.Thread(target=traffic)
    user.start()
    lines: list[str] = []
    try:
        watch(interval=interval, min_age=0, superseded_min_age=min_age,
              include={"superseded"}, scan_kwargs={"config": cfg}, emit=lines.append,
              rounds=rounds, after_round=counted, should_stop=lambda: bool(ended))
    finally:
        stop.set()
        user.join()
    assert not failed, failed
    return lines
