"""The machine view never ends a live process.

A host is never a server; pid 1 is "launcher gone" only when it is an init; a far end
the scan cannot see makes the answer `unknown`, and `unknown` never reaps; bare `reap`
asks on a terminal and refuses without one. Real hosts on the SDKs' own clients, real
servers, real pid namespaces.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from mcp_tether import platform
from mcp_tether.proc import SAME, compare, identify, wait_gone
from polling import until
from scan_lab import (
    DEADLINE,
    FAR_ENDS,
    NODE_MODULES,
    PY_SDK_SERVER,
    Lab,
    assert_consistent,
    assert_ps_and_reap_agree,
    entry,
    kids,
    needs_node,
    needs_proc,
    run_cli,
)

pytestmark = [pytest.mark.linux, needs_proc]
needs_ns = pytest.mark.skipif(
    shutil.which("unshare") is None or shutil.which("nsenter") is None or os.geteuid() != 0,
    reason="needs unshare and nsenter as root")


# A server that answers `initialize`, then crashes (exit 3) half a second after the
# next request.
CRASHING_SERVER = """\
import json, os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {},
            "serverInfo": {"name": "crashy", "version": "0"}}}) + "\\n")
        sys.stdout.flush()
    elif "id" in msg:
        time.sleep(0.5)
        os._exit(3)
"""

PY_HOST = """\
import sys, time, anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    servers = [StdioServerParameters(command=sys.executable, args=a.split("|"))
               for a in sys.argv[2:]]
    async with stdio_client(servers[0]) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            if sys.argv[1] == "crash":
                # A request the server crashes on, then synchronous work in the loop (a
                # blocking call, as services make): the host keeps its ends of the dead
                # server's pipes for as long as it is busy.
                async with anyio.create_task_group() as tg:
                    tg.start_soon(s.send_ping)
                    await anyio.sleep(0.05)
                    print("ready", flush=True)
                    time.sleep(3600)
            if len(servers) > 1:
                async with stdio_client(servers[1]) as (r2, w2):
                    async with ClientSession(r2, w2) as s2:
                        await s2.initialize()
                        print("ready", flush=True)
                        await anyio.sleep_forever()
            print("ready", flush=True)
            await anyio.sleep_forever()

anyio.run(main)
"""

NODE_HOST = """\
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
const [python, server, pidfile] = process.argv.slice(2);
const client = new Client({ name: "svc", version: "0" });
await client.connect(new StdioClientTransport({ command: python, args: [server, pidfile] }));
client.ping().catch(() => {});  // the server crashes on it...
setTimeout(() => {  // ...while the host blocks its event loop in synchronous work
  console.log("ready");
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 3600e3);
}, 50);
"""

# Starts a host as a service would be (`host </dev/null >>log 2>&1 &`): a session of its
# own, stdin /dev/null read-only, stdout and stderr one open log file; then exits, so
# the host's parent is pid 1 (the suite's init). fd 0 and fd 1 look exactly as the `mcp`
# SDK leaves them while it serves from private copies.
SERVICE_LAUNCHER = """\
import subprocess, sys
log = open(sys.argv[1], "ab")
h = subprocess.Popen(sys.argv[2:], stdin=open("/dev/null", "rb"), stdout=log,
                     stderr=subprocess.STDOUT, start_new_session=True)
print(h.pid, flush=True)
"""


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _dead(pid: int) -> bool:
    """Gone, or a zombie (a blocked host has not reaped it yet): no fds either way."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _start_service(lab: Lab, argv: list[str]) -> tuple[int, Path]:
    """The host under pid 1 with stdin /dev/null and its output in a log file."""
    log = lab.tmp / "host.log"
    launcher = lab.script("service_launcher.py", SERVICE_LAUNCHER)
    out = subprocess.run([sys.executable, str(launcher), str(log), *argv],
                         stdout=subprocess.PIPE, check=True).stdout
    host = identify(int(out))
    assert host is not None
    lab.started.append(host)
    until(lambda: _ppid(host.pid) == 1, "the host to be adopted by pid 1", DEADLINE)
    return host.pid, log


def _assert_host_kept(lab: Lab, capsys: pytest.CaptureFixture[str], host: int) -> None:
    """ps never lists the host as a server it could end; reap --yes, also with --include
    stdio, leaves it. On Linux the fds show it is a host, so it is not listed at all; the
    portable backend reads no fds, and an adopted process whose script loads an MCP SDK
    is listed `unknown` there (docs/platforms.md), which nothing ends."""
    host_id = identify(host)
    assert host_id is not None
    doc = assert_ps_and_reap_agree(capsys, host, "stdio", "guess")
    listed = entry(doc, host)
    if platform.backend.NAME == "portable" and listed is not None:
        assert listed["state"] == "unknown", listed
    else:
        assert listed is None, listed
        assert not any(host in [m["pid"] for m in s["members"]] for s in doc["results"])
    for extra in ([], ["--include", "stdio"], ["--include", "stdio", "--include", "guess"]):
        rc, out, err = run_cli(capsys, "reap", "--yes", "--json", "--min-age", "0", *extra)
        assert rc == 0, err
        done = json.loads(out)
        assert host not in [r["pid"] for r in done["results"]], done
        assert compare(host_id) == SAME


def test_a_python_service_host_whose_server_crashed_is_no_server_and_survives_reap(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. a host on the `mcp` SDK's stdio_client runs as a service (parent pid 1, stdin
    /dev/null read-only, stdout and stderr one log file: fd 0 and 1 as the `mcp` SDK's
    servers leave theirs); 2. its server crashes while the host is busy in synchronous
    work, so it holds its ends of the dead server's pipes; 3. ps lists no server for it,
    and `reap --yes` (also `--include stdio`) leaves it running."""
    pytest.importorskip("mcp")
    server = lab.script("crashy.py", CRASHING_SERVER)
    pidfile = lab.tmp / "server.pid"
    host_py = lab.script("svc_host.py", PY_HOST)
    host, log = _start_service(lab, [sys.executable, str(host_py), "crash",
                                     f"{server}|{pidfile}"])
    until(lambda: b"ready" in log.read_bytes(), "the host to start its server", 60)
    srv = int(pidfile.read_text())
    until(lambda: _dead(srv), "the server to crash", DEADLINE)
    _assert_host_kept(lab, capsys, host)


SOCKETPAIR_HOST = """\
import socket, subprocess, sys, time
a, b = socket.socketpair()  # one socketpair both ways; the host keeps one end, at one fd
p = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(3)"], stdin=b, stdout=b)
b.close()
p.wait()  # its server crashed; the host goes on holding its end
print("ready", flush=True)
time.sleep(3600)
"""


def test_a_python_service_host_holding_a_crashed_servers_socketpair_survives_reap(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """A service-style Python host (pid 1 its parent, stdin /dev/null, output one log)
    that gave its server one socketpair both ways holds one socket, at one fd, whose
    peer is gone: not the `mcp` SDK's copies of a stdio channel (those are two fds of
    it), so the host is no server and `reap --yes` (also `--include stdio`) leaves it."""
    host_py = lab.script("svc_sock_host.py", SOCKETPAIR_HOST)
    host, log = _start_service(lab, [sys.executable, str(host_py)])
    until(lambda: b"ready" in log.read_bytes(), "the host's server to crash", 60)
    _assert_host_kept(lab, capsys, host)

@needs_node
def test_a_node_service_host_whose_server_crashed_is_no_server_and_survives_reap(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same with a Node host on the TypeScript SDK's StdioClientTransport (it holds
    a socketpair per stream of the dead server)."""
    server = lab.script("crashy.py", CRASHING_SERVER)
    pidfile = lab.tmp / "server.pid"
    hdir = lab.tmp / "nodehost"
    hdir.mkdir()
    (hdir / "node_modules").symlink_to(NODE_MODULES)  # type: ignore[arg-type]
    (hdir / "package.json").write_text('{"name": "svc-host", "type": "module"}')
    host_js = hdir / "host.mjs"
    host_js.write_text(NODE_HOST)
    host, log = _start_service(lab, ["node", str(host_js), sys.executable, str(server),
                                     str(pidfile)])
    until(lambda: b"ready" in log.read_bytes(), "the host to start its server", 60)
    srv = int(pidfile.read_text())
    until(lambda: _dead(srv), "the server to crash", DEADLINE)
    _assert_host_kept(lab, capsys, host)


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_a_live_host_under_init_is_a_host_and_its_live_servers_are_listed_apart(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. a host named like an MCP program (so `ps` looks at it) runs under pid 1 with
    stdin /dev/null and two live `mcp` SDK servers (private stdio copies); 2. ps lists
    each server as live with the host as its parent, and never the host; 3. reap
    proposes nothing, with any --include."""
    pytest.importorskip("mcp")
    server = lab.script("weather/server.py", PY_SDK_SERVER)
    host_py = lab.script("mcp-host-svc.py", PY_HOST)
    host, log = _start_service(lab, [sys.executable, str(host_py), "live", str(server),
                                     str(server)])
    until(lambda: b"ready" in log.read_bytes(), "the host to start its servers", 60)
    servers = kids(host)
    assert len(servers) == 2
    lab.started += servers
    cfg = lab.script("mcp.json", json.dumps({"mcpServers": {"weather": {
        "command": sys.executable, "args": [str(server)]}}}))
    doc = assert_ps_and_reap_agree(capsys, servers[0].pid, "stdio", "guess", config=str(cfg))
    assert entry(doc, host) is None, entry(doc, host)
    for s in servers:
        e = entry(doc, s.pid)
        assert e is not None, [x["command"] for x in doc["results"]]
        assert e["state"] == "live" and e["parent"]["pid"] == host
        assert e["parent"]["role"] == "host" and "parent-gone" not in e["evidence"]
        assert [m["pid"] for m in e["members"]] == [s.pid]
    for extra in ([], ["--include", "stdio", "--include", "guess"]):
        rc, out, _ = run_cli(capsys, "reap", "--dry-run", "--json", "--config", str(cfg),
                             *extra)
        assert rc == 0 and json.loads(out)["results"] == []



# A host that gives its server one socketpair both ways and then runs `ps` itself (as
# an agent host's shell tool would), run by a launcher that exits (parent pid 1), stdin
# /dev/null, stdout and stderr two files.
SOCKET_HOST = """\
import json, os, socket, subprocess, sys
a, b = socket.socketpair()
p = subprocess.Popen([sys.executable, sys.argv[1]], stdin=b, stdout=b)
b.close()
a.sendall((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "t", "version": "0"}}}) + "\\n").encode())
a.recv(65536)
import threading  # it keeps reading its server, as a live host does (else: abandoned)
threading.Thread(target=lambda: [None for _ in iter(lambda: a.recv(65536), b"")],
                 daemon=True).start()
ps = subprocess.run([sys.executable, "-m", "mcp_tether", "ps", "--json"],
                    stdout=subprocess.PIPE, stdin=subprocess.DEVNULL).stdout
print(json.dumps({"server": p.pid, "ps": json.loads(ps)}), flush=True)
import signal
signal.pause()
"""

DETACH = """\
import subprocess, sys
h = subprocess.Popen(sys.argv[3:], stdin=subprocess.DEVNULL, stdout=open(sys.argv[1], "wb"),
                     stderr=open(sys.argv[2], "wb"), start_new_session=True)
print(h.pid, flush=True)
"""


def test_a_host_on_dev_null_is_no_wrapper_of_its_sdk_server(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. a host named like nothing in particular, stdin /dev/null, parent pid 1, runs a
    live `mcp` SDK server on one socketpair (the server diverts its own fd 0 to
    /dev/null), then `ps --json`; 2. that ps (the host is its ancestor, so never a
    server) lists the server as its own tree whose parent is the host, not folded into
    the host's: the same /dev/null at fd 0 is no shared conversation."""
    pytest.importorskip("mcp.server.mcpserver")  # 2.x: fd 0 diverted
    server = lab.script("weather/mcp-server-weather.py", PY_SDK_SERVER)  # found by name
    host_py = lab.script("plain_host.py", SOCKET_HOST)  # no MCP word: not a candidate
    out, err = lab.tmp / "host.out", lab.tmp / "host.err"
    launched = subprocess.run([sys.executable, str(lab.script("detach.py", DETACH)), str(out),
                               str(err), sys.executable, str(host_py), str(server)],
                              stdout=subprocess.PIPE, check=True).stdout
    host = identify(int(launched))
    assert host is not None
    lab.started.append(host)
    until(lambda: out.read_bytes().endswith(b"\n"), "the host to start its server and ps", 60)
    got = json.loads(out.read_bytes())
    srv = identify(got["server"])
    assert srv is not None
    lab.started.append(srv)
    doc = got["ps"]
    assert_consistent(doc)
    assert entry(doc, host.pid) is None, entry(doc, host.pid)
    e = entry(doc, srv.pid)
    assert e is not None, [x["command"] for x in doc["results"]]
    assert e["parent"]["pid"] == host.pid and [m["pid"] for m in e["members"]] == [srv.pid]
    assert e["state"] == "live" and "parent-gone" not in e["evidence"]
    # seen where the backend reads other processes' fds (not the portable one)
    assert e["stdin"]["private"] is platform.backend.channels().CHANNEL_DETAIL
    assert_ps_and_reap_agree(capsys, srv.pid, "stdio", "guess")  # the same, seen from here


# A host that starts one server (whose command it takes from its own argv, so that its
# argv names the server's file), then closes its ends of the server's pipes without
# ending it: its only child is a server it no longer holds any far end of.
DROPPING_HOST = """\
import subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
p.stdin.close()
p.stdout.close()
print(p.pid, flush=True)
sys.stdin.read()
"""


@pytest.mark.requires_linux_backend(FAR_ENDS)
def test_a_host_that_closed_its_servers_pipes_is_still_no_server_nor_its_wrapper(
        lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """1. a host whose argv names an MCP server file (a name guess) starts that server on
    pipes of its own, then closes its ends (the server lives on, EOF ignored); 2. `ps`
    lists the server as its own tree whose parent is the host (it launched it on a
    channel of its own), never the host as a server with the server folded in."""
    server = lab.script("mcp-server-kept.py", Path(__file__).with_name("servers")
                        .joinpath("mini.py").read_text())
    host_py = lab.script("plain_host.py", DROPPING_HOST)
    p = lab.popen([sys.executable, str(host_py), sys.executable, str(server), "--thread"],
                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert p.stdout is not None
    srv = identify(int(p.stdout.readline()))
    assert srv is not None
    lab.started.append(srv)
    doc = assert_ps_and_reap_agree(capsys, srv.pid, "stdio", "guess")
    # The whole document when the host is listed: seen once in a whole-suite run on a
    # quiet machine (the host `abandoned`, `host-not-listening`), not reproduced in 80
    # runs of this test alone, with and without 4 CPU burners.
    assert entry(doc, p.pid) is None, json.dumps(doc["results"], indent=1)
    e = entry(doc, srv.pid)
    assert e is not None, [x["command"] for x in doc["results"]]
    assert e["parent"] == {**e["parent"], "pid": p.pid, "role": "host"}, e["parent"]
    assert [m["pid"] for m in e["members"]] == [srv.pid], e["members"]
    assert e["state"] == "live"


# pid 1 of a fresh pid namespace: a live program, or the project's own init.
NS_LIVE_PID1 = """\
import os, subprocess, sys
r, w = os.pipe()
child = subprocess.Popen([sys.executable, sys.argv[1]], stdin=r, stdout=int(sys.argv[2]),
                         stderr=subprocess.DEVNULL, start_new_session=True)
os.close(r); os.close(w)  # its input now has no writer; its output is read outside
print(child.pid, flush=True)
import signal
signal.pause()
"""

NS_LAUNCHER = """\
import os, subprocess, sys
r, w = os.pipe()
child = subprocess.Popen([sys.executable, sys.argv[1]], stdin=r, stdout=int(sys.argv[2]),
                         stderr=subprocess.DEVNULL, start_new_session=True)
os.close(r); os.close(w)
print(child.pid, flush=True)
"""  # ...and exits: the child is adopted by the namespace's init


@pytest.mark.requires_far_ends(FAR_ENDS)
@needs_ns
@pytest.mark.parametrize("pid1", ["live-program", "init"])
def test_a_child_in_a_pid_namespace_whose_output_is_read_from_outside_is_unknown(
    lab: Lab, capsys: pytest.CaptureFixture[str], pid1: str
) -> None:
    """1. in a pid namespace of its own, a child of pid 1 (a live program, or the
    namespace's init after its launcher exited) has no writer on stdin and its stdout
    read by this test, outside the namespace; 2. `ps` run inside the namespace says
    `unknown`, not leaked; 3. `reap --yes --include stdio --include guess` leaves it."""
    server = lab.fake_server("mcp-server-ns.py", sdk_import=True)
    r, w = os.pipe()
    if pid1 == "live-program":
        inner = [sys.executable, str(lab.script("ns_pid1.py", NS_LIVE_PID1)),
                 str(server), str(w)]
    else:
        launch = lab.script("ns_launch.py", NS_LAUNCHER)
        inner = [sys.executable, str(Path(__file__).with_name("pidns_init.py")),
                 "/bin/sh", "-c", '"$@"; exec sleep 3600', "sh",  # init's child stays
                 sys.executable, str(launch), str(server), str(w)]
    p = lab.popen(["unshare", "--pid", "--fork", "--mount-proc", *inner],
                  stdout=subprocess.PIPE, pass_fds=[w])
    os.close(w)
    try:
        assert p.stdout is not None
        assert os.read(r, 6) == b"ready\n"  # the server's own stdout, read out here
        ns_pid = int(p.stdout.readline())
        outer_pid1 = next(k for k in kids(p.pid) if _ppid(k.pid) == p.pid)
        lab.started.append(outer_pid1)
        child = next(k for k in kids(outer_pid1.pid)
                     if b"mcp-server-ns" in Path(f"/proc/{k.pid}/cmdline").read_bytes())
        lab.started.append(child)
        until(lambda: _ppid(child.pid) == outer_pid1.pid, "the child to be pid 1's", DEADLINE)
        enter = ["nsenter", "-t", str(outer_pid1.pid), "-p", "-m", sys.executable, "-m",
                 "mcp_tether"]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        got = subprocess.run([*enter, "ps", "--json"], stdout=subprocess.PIPE, env=env,
                             stdin=subprocess.DEVNULL, check=True, timeout=60).stdout
        e = entry(json.loads(got), ns_pid)
        assert e is not None and e["state"] == "unknown", e
        done = subprocess.run([*enter, "reap", "--yes", "--json", "--include", "stdio",
                               "--include", "guess"], stdout=subprocess.PIPE, env=env,
                              stdin=subprocess.DEVNULL, timeout=60)
        assert done.returncode == 0
        assert json.loads(done.stdout)["results"] == []
        assert compare(child) == SAME
    finally:
        os.close(r)
        p.kill()
        p.wait()


def _read_until(fd: int, want: bytes, deadline: float) -> bytes:
    got = b""
    end = time.monotonic() + deadline
    while want not in got:
        left = end - time.monotonic()
        if left <= 0:
            raise AssertionError(f"timed out waiting for {want!r}: {got!r}")
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            got += chunk
    return got


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_bare_reap_on_a_terminal_lists_the_leak_and_asks_stating_the_minimum_age(
    lab: Lab
) -> None:
    """1. an SDK server leaks; 2. bare `reap` on a pty lists it with its evidence and
    asks, naming the minimum age; 3. "n" ends nothing."""
    leaked = lab.pair([sys.executable, str(lab.fake_server(sdk_import=True))]).orphan()
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))
    p = lab.popen([sys.executable, "-m", "mcp_tether", "reap"], stdin=slave, stdout=slave,
                  stderr=slave, close_fds=True, start_new_session=True)
    os.close(slave)
    try:
        got = _read_until(master, b"[y/N]", DEADLINE)
        text = got.decode(errors="replace")
        assert str(leaked.pid) in text and "parent-gone" in text, text
        assert "minimum age 0s" in text, text
        os.write(master, b"n\n")
        assert p.wait(timeout=DEADLINE) == 0
    finally:
        os.close(master)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait()
    assert compare(leaked) == SAME


@pytest.mark.parametrize("leak", [False, True])
def test_bare_reap_without_a_terminal_refuses_in_one_line_with_exit_2(
    lab: Lab, leak: bool
) -> None:
    """A cron job's bare `reap` (no terminal, no --yes) says why and exits 2, whether or
    not there is something to end; nothing is ended."""
    leaked = lab.pair([sys.executable, str(lab.fake_server(sdk_import=True))]).orphan() \
        if leak else None
    p = subprocess.run([sys.executable, "-m", "mcp_tether", "reap"], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=60)
    assert p.returncode == 2, p
    assert p.stdout == b"" and len(p.stderr.decode().strip().splitlines()) == 1, p.stderr
    assert b"--yes" in p.stderr
    if leaked is not None:
        assert compare(leaked) == SAME
        assert wait_gone(leaked, 0.01) is None


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_a_server_whose_output_a_container_engine_shim_reads_is_unknown(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. an SDK-identified server under pid 1 has no writer on stdin, and its stdout is
    read by a process named like containerd's shim (the client is beyond it); 2. ps says
    `unknown`; 3. `reap --yes --include stdio` leaves it."""
    shim, srv = lab.shimmed_server()
    assert Path(f"/proc/{shim.pid}/comm").read_text().strip() == "containerd-shim"
    e = entry(assert_ps_and_reap_agree(capsys, srv.pid, "stdio"), srv.pid)
    assert e is not None and e["state"] == "unknown", e
    assert "far-end-unseen" in e["evidence"]
    rc, out_s, _ = run_cli(capsys, "reap", "--yes", "--json", "--include", "stdio")
    assert rc == 0 and json.loads(out_s)["results"] == []
    assert compare(srv) == SAME
