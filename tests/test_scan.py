"""`ps` and `reap` on real orphans made here: a client spawns a server-like child and is
SIGKILLed; in the suite's pid namespace the child reparents to the test init (pid 1).

Only processes these tests start are ever signalled: reap selects by evidence, and the
tests check that a bystander, a live server and pytest itself are untouched.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_tether import cli, platform, scan, scan_cli
from mcp_tether.proc import SAME, ProcessId, compare, identify, signal_process, wait_gone

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="needs /proc")

DEADLINE = 10.0

SERVER = """\
import sys, threading, time
def tick():  # a non-daemon thread: EOF alone would never end this server
    while True:
        time.sleep(0.05)
threading.Thread(target=tick).start()
sys.stdout.write("ready\\n"); sys.stdout.flush()
"""

CLIENT = """\
import os, signal, socket, subprocess, sys
argv = {argv!r}
if {socket!r}:
    mine, theirs = socket.socketpair()
    p = subprocess.Popen(argv, stdin=theirs, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, start_new_session={new_session!r})
    theirs.close()
else:
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, start_new_session={new_session!r})
p.stdout.readline()
print(p.pid, flush=True)
signal.pause()
"""


def _poll(cond, what: str, deadline: float = DEADLINE):  # type: ignore[no-untyped-def]
    end = time.monotonic() + deadline
    delay = 0.005
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(delay)  # polling for a state with a deadline
        delay = min(delay * 2, 0.1)


@dataclasses.dataclass
class Pair:
    client: subprocess.Popen[bytes]
    server: ProcessId  # the root the client started (the wrapper if there is one)
    argv: list[str]

    def orphan(self) -> ProcessId:
        """SIGKILL the client; wait until its server has been adopted by init."""
        self.client.kill()
        self.client.wait()

        def adopted() -> bool:
            try:
                return Path(f"/proc/{self.server.pid}/stat").read_text().rsplit(")", 1)[1] \
                    .split()[1] != str(self.client.pid)
            except OSError:
                return False

        _poll(adopted, "the server to be reparented")
        return self.server


class Lab:
    """Starts clients and servers; kills every one of them at the end, by identity."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.server_path = tmp / "mcp-server-fake.py"
        self.server_path.write_text(SERVER)
        self.started: list[ProcessId] = []
        self.clients: list[subprocess.Popen[bytes]] = []
        self.n = 0

    def pair(self, *, new_session: bool = False, socket: bool = False,
             wrapper: bool = False) -> Pair:
        argv = [sys.executable, str(self.server_path)]
        if wrapper:  # `sh -c` that stays around (not exec): a wrapper with the same stdin
            argv = ["/bin/sh", "-c", f"'{sys.executable}' '{self.server_path}'; true"]
        self.n += 1
        client_py = self.tmp / f"client{self.n}.py"  # argv of the client names no server
        client_py.write_text(CLIENT.format(argv=argv, socket=socket, new_session=new_session))
        c = subprocess.Popen([sys.executable, str(client_py)], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE)
        self.clients.append(c)
        assert c.stdout is not None
        pid = int(c.stdout.readline())
        ident = identify(pid)
        assert ident is not None
        self.started.append(ident)
        for kid in _kids(pid):
            self.started.append(kid)
        return Pair(c, ident, argv)

    def bystander(self) -> subprocess.Popen[bytes]:
        p = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
        self.clients.append(p)
        return p

    def cleanup(self) -> None:
        for c in self.clients:
            if c.poll() is None:
                c.kill()
            c.wait()
        for ident in self.started:
            signal_process(ident, signal.SIGKILL)
        for ident in self.started:
            wait_gone(ident, DEADLINE)


def _kids(pid: int) -> list[ProcessId]:
    from mcp_tether.proc import descendants

    return [p.ident for p in descendants(pid)]


PR_SET_CHILD_SUBREAPER, PR_GET_CHILD_SUBREAPER = 36, 37


def _is_subreaper() -> bool:
    import ctypes

    flag = ctypes.c_int(0)
    platform.prctl(PR_GET_CHILD_SUBREAPER, ctypes.addressof(flag))
    return bool(flag.value)


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Lab]:
    # No real host configs: an empty home and a project directory of our own.
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    # Orphans must go to init, as on a user's machine: if code run in-process by an
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


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _entry(doc: dict, pid: int) -> dict | None:  # type: ignore[type-arg]
    return next((s for s in doc["servers"] if s["pid"] == pid), None)


# ----- ps ----------------------------------------------------------------------------


def test_ps_reports_an_orphan_with_parent_gone_and_stdin_without_writer(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. a client starts the server; 2. the client is SIGKILLed; 3. ps --json shows both."""
    orphan = lab.pair().orphan()
    rc, out, _ = _run(capsys, "ps", "--json")
    assert rc == 0
    doc = json.loads(out)
    e = _entry(doc, orphan.pid)
    assert e is not None, doc
    assert e["state"] == "orphan"
    assert {"parent-gone", "stdin-no-writer"} <= set(e["evidence"])
    assert e["start"] == orphan.start and e["guess"] is True
    assert e["parent"]["pid"] == 1 and e["stdin"]["kind"] == "pipe"
    assert e["rss_bytes"] > 0 and doc["totals"]["orphans"] >= 1
    assert doc["servers"][0]["state"] == "orphan"  # orphans first


def test_a_live_server_whose_client_is_alive_is_not_an_orphan(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    pair = lab.pair()
    twin = lab.pair()  # two live copies, as Claude Desktop runs them
    doc = json.loads(_run(capsys, "ps", "--json")[1])
    for p in (pair, twin):
        e = _entry(doc, p.server.pid)
        assert e is not None
        assert e["state"] == "live" and e["evidence"] == []
        assert e["stdin"]["writer"] == "yes" and e["parent"]["pid"] == p.client.pid


def test_a_socket_stdin_whose_peer_died_has_no_writer(lab: Lab) -> None:
    """The TypeScript SDK gives servers a UNIX socketpair: the peer is read via sock_diag."""
    pair = lab.pair(socket=True)
    live = {s.pid: s for s in scan.scan().servers}[pair.server.pid]
    assert live.stdin.kind == "socket" and live.stdin.writer == "yes" and not live.orphan
    orphan = pair.orphan()
    e = {s.pid: s for s in scan.scan().servers}[orphan.pid]
    assert e.stdin.writer == "no" and set(scan.STRONG) <= set(e.evidence)


def test_a_wrapper_and_the_server_it_runs_are_one_entry(lab: Lab) -> None:
    pair = lab.pair(wrapper=True)
    result = scan.scan()
    e = {s.pid: s for s in result.servers}.get(pair.server.pid)
    assert e is not None, [s.command for s in result.servers]
    assert len(e.members) == 2 and e.members[0].ident == pair.server
    assert not any(s.pid == e.members[1].ident.pid for s in result.servers)


def test_permission_denied_processes_are_skipped_quietly(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    hidden = lab.pair()
    shown = lab.pair()
    real = scan.read_process

    def reader(pid: int, *args: object) -> scan.Proc | None:
        if pid == hidden.server.pid:
            raise PermissionError(13, "Permission denied")
        return real(pid, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(scan, "read_process", reader)
    result = scan.scan()
    pids = {s.pid for s in result.servers}
    assert hidden.server.pid not in pids and shown.server.pid in pids
    assert result.unreadable >= 1


def test_a_malformed_host_config_gives_a_message_and_the_scan_still_works(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. a broken Cursor config; 2. a good Claude Code config naming our server;
    3. ps warns with the file and still matches the server to the good config."""
    pytest.importorskip("mcp_tether.hosts")
    home = Path(os.environ["HOME"])
    (home / ".cursor").mkdir()
    bad = home / ".cursor" / "mcp.json"
    bad.write_text('{"mcpServers": {"x": {"command": "a",, }}}')
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"fake": {
        "command": sys.executable, "args": [str(lab.server_path)]}}}))
    pair = lab.pair()
    rc, out, err = _run(capsys, "ps", "--json")
    assert rc == 0
    assert str(bad) in err
    doc = json.loads(out)
    assert any(str(bad) in m for m in doc["config_errors"])
    e = _entry(doc, pair.server.pid)
    assert e is not None and e["found_by"][0] == "config"
    assert e["config"][0]["host"] == "claude-code" and e["config"][0]["name"] == "fake"


def test_openmetrics_output_is_well_formed_and_ends_with_eof(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    lab.pair().orphan()
    rc, out, _ = _run(capsys, "ps", "--format", "openmetrics")
    assert rc == 0 and out.endswith("# EOF\n")
    lines = out.splitlines()
    sample = re.compile(r'^[a-z_:][a-z0-9_:]*(\{[a-z_]+="[^"\\]*"(,[a-z_]+="[^"\\]*")*\})? '
                        r"-?[0-9.e+]+$")
    typed: set[str] = set()
    for ln in lines[:-1]:
        if ln.startswith("# TYPE "):
            name, kind = ln.split()[2:4]
            assert kind == "gauge"
            typed.add(name)
        elif ln.startswith("# HELP "):
            assert len(ln.split(None, 3)) == 4
        else:
            assert sample.match(ln), ln
            assert ln.split("{")[0].split()[0] in typed, ln
    orphans = next(ln for ln in lines if ln.startswith('mcp_tether_servers{state="orphan"}'))
    assert int(orphans.split()[-1]) >= 1
    assert lines.count("# EOF") == 1


def test_plain_ps_lists_orphans_first_with_totals(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    live = lab.pair()
    orphan = lab.pair().orphan()
    rc, out, _ = _run(capsys, "ps")
    assert rc == 0
    rows = [ln.split() for ln in out.splitlines()[1:-1]]
    pids = [int(r[1]) for r in rows]
    assert pids.index(orphan.pid) < pids.index(live.server.pid)
    assert "orphan(s) holding" in out.splitlines()[-1]


# ----- reap --------------------------------------------------------------------------


@pytest.mark.parametrize("new_session", [True, False], ids=["own-session", "client-group"])
def test_reap_yes_ends_the_orphan_and_touches_nothing_else(
    lab: Lab, capsys: pytest.CaptureFixture[str], new_session: bool
) -> None:
    """1. an orphan, a live pair and a bystander; 2. reap --yes; 3. only the orphan is gone.

    client-group: the orphan still shares pytest's process group, so a group signal would
    hit pytest; reap must signal it alone.
    """
    orphan = lab.pair(new_session=new_session).orphan()
    live = lab.pair(new_session=new_session)
    bystander = lab.bystander()
    rc, out, _ = _run(capsys, "reap", "--yes", "--include", "guess", "--json", "--grace", "5")
    assert rc == 0, out
    doc = json.loads(out)
    ours = [r for r in doc["reaped"] if r["pid"] == orphan.pid]
    assert ours and ours[0]["outcome"] == "ended" and ours[0]["ended_by"] == "sigterm"
    assert ours[0]["reclaimed_bytes"] > 0
    assert [r["pid"] for r in doc["reaped"]] == [orphan.pid]
    assert wait_gone(orphan, DEADLINE) is not None
    assert compare(live.server) == SAME and live.client.poll() is None
    assert bystander.poll() is None


def test_reap_ends_a_config_matched_orphan_tree_by_default(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --include: a configured server (not a guess) with strong evidence is ended,
    wrapper and server together."""
    pytest.importorskip("mcp_tether.hosts")
    pair = lab.pair(wrapper=True)
    members = [pair.server, *_kids(pair.server.pid)]
    assert len(members) == 2
    Path(".mcp.json").write_text(json.dumps({"mcpServers": {"fake": {
        "command": "sh", "args": ["-c", pair.argv[2]]}}}))
    pair.orphan()
    rc, out, _ = _run(capsys, "reap", "--yes", "--json")
    assert rc == 0
    doc = json.loads(out)
    assert [r["pid"] for r in doc["reaped"]] == [pair.server.pid]
    for m in members:
        assert wait_gone(m, DEADLINE) is not None


def test_a_pid_reused_between_scan_and_signal_is_not_signalled(lab: Lab) -> None:
    """The plan's start times are faked ("the pid now belongs to someone else")."""
    orphan = lab.pair().orphan()
    plan = [s for s in scan_cli.select_orphans(scan.scan(), {"guess"}) if s.pid == orphan.pid]
    assert plan
    s = plan[0]
    fake = ProcessId(s.pid, s.ident.start + 7)
    s = dataclasses.replace(s, ident=fake, members=[
        dataclasses.replace(m, ident=ProcessId(m.ident.pid, m.ident.start + 7))
        for m in s.members])
    [outcome] = scan_cli.reap_servers([s], grace=0.5)
    assert outcome.outcome == "gone" and outcome.reclaimed_bytes == 0
    assert not any(x["result"] == "sent" for x in outcome.signals)
    assert compare(orphan) == SAME  # untouched


def test_reap_without_a_terminal_or_yes_refuses(
    lab: Lab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    orphan = lab.pair().orphan()
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    rc, _, err = _run(capsys, "reap", "--include", "guess")
    assert rc == 2 and "--yes" in err
    assert compare(orphan) == SAME


def test_reap_dry_run_shows_the_plan_and_ends_nothing(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    orphan = lab.pair().orphan()
    rc, out, _ = _run(capsys, "reap", "--dry-run", "--include", "guess")
    assert rc == 0 and f"pid {orphan.pid}" in out
    rc, out, _ = _run(capsys, "reap", "--dry-run")  # a guess needs --include guess
    assert f"pid {orphan.pid}" not in out
    assert compare(orphan) == SAME


def test_all_users_needs_root(capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    rc, _, err = _run(capsys, "reap", "--all-users", "--dry-run")
    assert rc == 2 and "root" in err


# ----- recognisers -------------------------------------------------------------------


def test_mcp_looking_commands_are_guessed_and_others_are_not() -> None:
    yes = [["npx", "-y", "@modelcontextprotocol/server-filesystem@1.2", "/tmp"],
           ["uvx", "mcp-server-git"], ["python", "-m", "mcp_server_fetch"],
           ["node", "/x/github-mcp-server"], ["fastmcp", "run", "s.py"],
           ["sh", "-c", "exec npx brave-search-mcp"]]
    no = [["python", "-m", "pytest"], ["mcp-tether", "ps"], ["node", "server.js"],
          ["bash"], ["/usr/lib/mcpd"]]
    assert all(scan.looks_like_mcp(a) for a in yes)
    assert not any(scan.looks_like_mcp(a) for a in no)


def test_hosts_are_recognised_by_executable_or_install_path() -> None:
    assert scan.classify_host(["claude"]) == "claude-code"
    assert scan.classify_host(["node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"]) \
        == "claude-code"
    assert scan.classify_host(["/Applications/Cursor.app/Contents/MacOS/Cursor"]) == "cursor"
    assert scan.classify_host(["/usr/share/code/code", "--type=utility"]) == "vscode"
    assert scan.classify_host(["python", "claude.py"]) is None
    assert scan.classify_host(["vim"]) is None


def test_scan_source_has_no_signal_calls() -> None:
    """scan.py gathers evidence only; ending processes is reap's business."""
    src = Path(scan.__file__).read_text()
    assert not re.search(r"\b(os\.kill|killpg|signal_process|signal_group|send_signal)\b", src)

