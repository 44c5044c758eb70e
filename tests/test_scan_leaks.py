"""Leaked stdio servers found by evidence whatever their name,
identified (package, SDK and version, config entry), and reaped by strength of evidence.

Every server here is a real process leaked by a real client SIGKILLed mid-session; the
Node and Python ones are real SDK servers that answered `initialize`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_tether.proc import SAME, compare, identify, wait_gone
from polling import until
from scan_lab import (
    DEADLINE,
    FAR_ENDS,
    NODE_MODULES,
    NODE_SDK_SERVER,
    NPM_EXEC,
    PY_SDK_SERVER,
    Lab,
    assert_ps_and_reap_agree,
    entry,
    kids,
    needs_node,
    needs_proc,
    run_cli,
)

pytestmark = [pytest.mark.linux, needs_proc]


def _node_package(root: Path, name: str, version: str) -> Path:
    """A built Node SDK server package: package.json, dist/index.js, node_modules."""
    assert NODE_MODULES is not None
    root.mkdir(parents=True, exist_ok=True)
    (root / "package.json").write_text(json.dumps({
        "name": name, "version": version, "type": "module", "bin": "dist/index.js",
        "dependencies": {"@modelcontextprotocol/sdk": "^1.30.0"}}))
    (root / "dist").mkdir(exist_ok=True)
    (root / "dist" / "index.js").write_text(NODE_SDK_SERVER)
    (root / "node_modules").symlink_to(NODE_MODULES)
    return root / "dist" / "index.js"


def _sdk_version(name: str) -> str:
    doc = json.loads((NODE_MODULES / "@modelcontextprotocol" / name / "package.json")  # type: ignore[operator]
                     .read_text())
    return str(doc["version"])


def _reap_json(capsys: pytest.CaptureFixture[str], *extra: str) -> dict:  # type: ignore[type-arg]
    rc, out, err = run_cli(capsys, "reap", "--yes", "--json", *extra)
    assert rc == 0, (out, err)
    return json.loads(out)  # type: ignore[no-any-return]


@pytest.mark.requires_far_ends(FAR_ENDS)
@needs_node
def test_a_nameless_node_sdk_server_is_found_identified_and_ended_by_plain_reap(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. `node /tmp/x/dist/index.js` (no "mcp" in argv) answers initialize over a
    socketpair, as a Node host gives it; 2. the client is SIGKILLed; 3. ps finds it by
    evidence and names package, version and SDK; 4. plain `reap --yes` ends it."""
    script = _node_package(lab.tmp / "x", "x-weather", "1.2.3")
    pair = lab.pair(["node", str(script)], socket=True, hello=True)
    leaked = pair.orphan()
    doc = assert_ps_and_reap_agree(capsys, leaked.pid)
    e = entry(doc, leaked.pid)
    assert e is not None, [s["command"] for s in doc["results"]]
    assert e["state"] == "leaked" and e["found_by"][0] == "evidence"
    assert {"parent-gone", "stdin-no-writer"} <= set(e["evidence"])
    w = e["what"]
    assert (w["package"], w["version"]) == ("x-weather", "1.2.3")
    assert (w["sdk"], w["sdk_version"]) == ("@modelcontextprotocol/sdk", _sdk_version("sdk"))
    assert e["mcp"] is True and e["guess"] is False
    got = _reap_json(capsys)
    assert [(r["pid"], r["outcome"]) for r in got["results"]] == [(leaked.pid, "ended")]
    assert wait_gone(leaked, DEADLINE) is not None


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_a_nameless_python_sdk_server_is_found_identified_and_ended_by_plain_reap(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python /tmp/y/server.py` on the real `mcp` SDK, leaked by a crashed client."""
    mcp = pytest.importorskip("mcp")
    from importlib.metadata import version

    script = lab.script("y/server.py", PY_SDK_SERVER)
    pair = lab.pair([sys.executable, str(script)], hello=True)
    leaked = pair.orphan()
    doc = assert_ps_and_reap_agree(capsys, leaked.pid)
    e = entry(doc, leaked.pid)
    assert e is not None, [s["command"] for s in doc["results"]]
    assert e["state"] == "leaked" and "evidence" in e["found_by"]
    assert e["what"]["sdk"] == "mcp" and e["what"]["sdk_version"] == version("mcp")
    assert e["what"]["script"] == str(script.resolve()) and e["mcp"] is True
    assert mcp is not None
    got = _reap_json(capsys)
    assert [(r["pid"], r["outcome"]) for r in got["results"]] == [(leaked.pid, "ended")]
    assert wait_gone(leaked, DEADLINE) is not None


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_an_mcp2_server_with_a_leaked_writer_is_found_past_fd_0_and_not_ended(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """mcp 2.x points fd 0 at /dev/null and serves from private copies; a helper of the
    dead client still holds its input open, so no EOF comes. ps looks past fd 0: the
    private output has no reader; the writer is named, and its hold makes the server
    not leaked (a live process outside its tree holds an end of its channel); reap
    leaves it, and says why."""
    pytest.importorskip("mcp.server.mcpserver")  # 2.x
    script = lab.script("z/server.py", PY_SDK_SERVER)
    pair = lab.pair([sys.executable, str(script)], hello=True, leak_writer=True)
    [helper] = pair.helpers
    leaked = pair.orphan()
    doc = assert_ps_and_reap_agree(capsys, leaked.pid)
    e = entry(doc, leaked.pid)
    assert e is not None, [s["command"] for s in doc["results"]]
    assert e["stdin"]["kind"] == "null" and e["stdin"]["private"] is True
    assert e["state"] == "live"
    assert {"parent-gone", "stdout-no-reader", "writer-held"} <= set(e["evidence"])
    assert helper.pid in [w["pid"] for w in e["stdin_writers"]]
    rc, out, _ = run_cli(capsys, "reap", "--yes", "--json", "--include", "stdio")
    assert rc == 0
    got = json.loads(out)
    [why] = [s for s in got["not_selected"] if s["pid"] == leaked.pid]
    assert "live writer" in why["reason"] and str(helper.pid) in why["reason"]
    assert compare(leaked) == SAME


@pytest.mark.requires_far_ends(FAR_ENDS)
@needs_node
def test_an_npx_launched_server_is_matched_to_its_config_entry(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """`npx -y @acme/weather` runs as `npm exec @acme/weather` (the title is rewritten)
    and then node on the package's file in the npx cache: the config entry is found."""
    cache = Path(os.environ["HOME"]) / ".npm" / "_npx" / "0a1b2c3d" / "node_modules"
    script = _node_package(cache / "@acme" / "weather", "@acme/weather", "0.4.2")
    wrapper = lab.script("npm-exec.mjs", NPM_EXEC.format(spec="@acme/weather", bin=str(script)))
    Path(".mcp.json").write_text(json.dumps({"mcpServers": {"weather": {
        "command": "npx", "args": ["-y", "@acme/weather"]}}}))
    pair = lab.pair(["node", str(wrapper)], hello=True)
    lab.started += kids(pair.server.pid)
    leaked = pair.orphan()
    doc = assert_ps_and_reap_agree(capsys, leaked.pid)
    e = entry(doc, leaked.pid)
    assert e is not None, [s["command"] for s in doc["results"]]
    assert e["members"][0]["command"][0].startswith("npm exec")
    assert [(c["name"], c["host"]) for c in e["config"]] == [("weather", "claude-code")]
    assert e["what"]["package"] == "@acme/weather" and e["what"]["version"] == "0.4.2"
    assert any("npx cache" in s for s in e["what"]["source"])
    assert e["state"] == "leaked" and len(e["members"]) == 2
    got = _reap_json(capsys)
    assert [(r["pid"], r["outcome"]) for r in got["results"]] == [(leaked.pid, "ended")]
    for m in e["members"]:
        assert wait_gone(identify(m["pid"]) or leaked, DEADLINE) is not None


HOST = """\
import os, subprocess, sys, signal, threading
server = subprocess.Popen([sys.executable, {server!r}], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
server.stdout.readline()
print(os.getpid(), server.pid, flush=True)
threading.Thread(target=lambda: [None for _ in iter(lambda: server.stdout.read1(65536), b"")],
                 daemon=True).start()
signal.pause()  # a live host: it keeps its server's pipes, and reads them
"""

LAUNCHER = """\
import subprocess, sys
h = subprocess.Popen([sys.executable, {host!r}], stdin=subprocess.DEVNULL,
                     stdout=subprocess.PIPE, start_new_session=True)
print(h.stdout.readline().decode().strip(), flush=True)
"""  # ...and exits: the host is adopted by pid 1, its own stdout left with no reader


@pytest.mark.requires_far_ends(FAR_ENDS)
@pytest.mark.parametrize("include", [[], ["guess"], ["stdio"], ["guess", "stdio"]])
def test_a_live_host_with_dev_null_stdin_under_pid_1_is_never_proposed(
    lab: Lab, capsys: pytest.CaptureFixture[str], include: list[str]
) -> None:
    """1. a host named like an MCP program, stdin /dev/null, adopted by pid 1, its own
    stdout without a reader, runs a live server; 2. neither is proposed for reaping with
    any --include; the host is not a server and the server's parent is its host."""
    server = lab.fake_server()
    host = lab.script("mcp-inspector-host.py", HOST.format(server=str(server)))
    launcher = lab.script("launch.py", LAUNCHER.format(host=str(host)))
    out = subprocess.run([sys.executable, str(launcher)], stdout=subprocess.PIPE,
                         check=True).stdout.split()
    host_id, server_id = identify(int(out[0])), identify(int(out[1]))
    assert host_id is not None and server_id is not None
    lab.started += [host_id, server_id]
    until(lambda: Path(f"/proc/{host_id.pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
         == "1", "the host to be adopted by pid 1", DEADLINE)
    doc = assert_ps_and_reap_agree(capsys, server_id.pid, *include)
    assert entry(doc, host_id.pid) is None  # a host is never a server
    e = entry(doc, server_id.pid)
    assert e is not None and e["state"] == "live"
    assert e["parent"]["pid"] == host_id.pid and e["parent"]["role"] != "adopter"
    assert "parent-gone" not in e["evidence"] and "host-gone" not in e["evidence"]
    args = [a for inc in include for a in ("--include", inc)]
    rc, out_s, _ = run_cli(capsys, "reap", "--dry-run", "--json", *args)
    planned = json.loads(out_s)
    assert rc == 0 and planned["results"] == []
    assert compare(host_id) == SAME and compare(server_id) == SAME


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_a_leaked_non_mcp_stdio_process_is_listed_but_ended_only_with_include_stdio(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    worker = lab.script("worker.py", "import sys, threading, time\n"
                        "threading.Thread(target=lambda: time.sleep(3600)).start()\n"
                        "sys.stdout.write('ready\\n'); sys.stdout.flush()\n")
    leaked = lab.pair([sys.executable, str(worker)]).orphan()
    doc = assert_ps_and_reap_agree(capsys, leaked.pid, "stdio")
    e = entry(doc, leaked.pid)
    assert e is not None and e["state"] == "leaked" and e["found_by"] == ["evidence"]
    assert e["mcp"] is False and e["guess"] is False
    got = _reap_json(capsys)
    assert got["results"] == []
    [why] = [s for s in got["not_selected"] if s["pid"] == leaked.pid]
    assert "--include stdio" in why["reason"]
    assert compare(leaked) == SAME
    got = _reap_json(capsys, "--include", "stdio")
    assert [(r["pid"], r["outcome"]) for r in got["results"]] == [(leaked.pid, "ended")]
    assert wait_gone(leaked, DEADLINE) is not None


DAEMON_LAUNCHER = """\
import subprocess, sys
fds = [int(a) for a in sys.argv[1:]]
p = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"], pass_fds=fds,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     start_new_session=True)
print(p.pid, flush=True)
"""  # ...and exits: the daemon is adopted by pid 1


def test_an_adopted_daemon_whose_connections_closed_is_not_a_stdio_server(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """A daemon (stdio at /dev/null) adopted by init holding sockets its launcher passed
    it is not a leaked stdio process, whichever of them lost their peer: those sockets
    are not its stdio channel, nor the `mcp` SDK's private copies of it (counting every
    lost peer as a leak would propose to end a healthy daemon)."""
    import socket

    dead_mine, dead_theirs = socket.socketpair()
    live_mine, live_theirs = socket.socketpair()
    launcher = lab.script("launch_daemon.py", DAEMON_LAUNCHER)
    try:
        out = subprocess.run(
            [sys.executable, str(launcher), str(dead_theirs.fileno()), str(live_theirs.fileno())],
            stdout=subprocess.PIPE, check=True, pass_fds=[dead_theirs.fileno(),
                                                           live_theirs.fileno()]).stdout
        daemon = identify(int(out))
        assert daemon is not None
        lab.started.append(daemon)
        dead_theirs.close()
        live_theirs.close()
        dead_mine.close()  # one peer gone, the other (live_mine) still here
        assert entry(assert_ps_and_reap_agree(capsys, daemon.pid, "stdio"), daemon.pid) is None
        live_mine.close()  # every connection lost its other side: still no stdio server
        assert entry(assert_ps_and_reap_agree(capsys, daemon.pid, "stdio"), daemon.pid) is None
        assert compare(daemon) == SAME
    finally:
        for s in (dead_mine, dead_theirs, live_mine, live_theirs):
            s.close()
