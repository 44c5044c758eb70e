"""`ps` and `reap` on real leaks made here: a client starts a server-like child and is
SIGKILLed; in the suite's pid namespace the child is adopted by the test init (pid 1).

Only processes these tests start are ever signalled: reap selects by evidence, and the
tests check that a bystander, a live server and pytest itself are untouched.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from mcp_tether import scan
from mcp_tether.proc import SAME, ProcessId, compare, table, wait_gone
from mcp_tether.scan import find, reap
from mcp_tether.scan.model import Member
from scan_lab import (
    DEADLINE,
    FAR_ENDS,
    Lab,
    assert_consistent,
    assert_ps_and_reap_agree,
    entry,
    kids,
    needs_proc,
    ps_json,
    run_cli,
)

pytestmark = needs_proc


# ----- ps ----------------------------------------------------------------------------


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_ps_reports_a_leak_with_parent_gone_and_stdin_without_writer(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. a client starts the server; 2. the client is SIGKILLed; 3. ps --json shows both,
    and a dry run of reap plans it (a guess: with --include guess)."""
    orphan = lab.pair().orphan()
    doc = assert_ps_and_reap_agree(capsys, orphan.pid, "guess")
    e = entry(doc, orphan.pid)
    assert e is not None, doc
    assert e["state"] == "leaked"
    assert {"parent-gone", "stdin-no-writer"} <= set(e["evidence"])
    assert e["start"] == orphan.start and e["guess"] is True
    assert e["parent"]["pid"] == 1 and e["parent"]["role"] == "adopter"
    assert e["stdin"]["kind"] == "pipe" and e["stdin"]["writer"] == "no"
    assert e["rss_bytes"] > 0 and doc["totals"]["leaked"] >= 1
    assert doc["totals"]["leaked_rss_bytes"] >= e["rss_bytes"]
    assert doc["results"][0]["state"] == "leaked"  # leaked first


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_a_live_server_whose_client_is_alive_is_not_leaked(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    pair = lab.pair()
    twin = lab.pair()  # two live copies, as Claude Desktop runs them
    doc = assert_ps_and_reap_agree(capsys, pair.server.pid, "stdio", "guess")
    for p in (pair, twin):
        e = entry(doc, p.server.pid)
        assert e is not None
        assert e["state"] == "live" and e["evidence"] == []
        assert e["stdin"]["writer"] == "yes" and e["parent"]["pid"] == p.client.pid
        assert e["parent"]["role"] == "launcher"


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_a_socket_stdin_whose_peer_died_has_no_writer(lab: Lab) -> None:
    """Node hosts give servers a UNIX socketpair: the peer is read via sock_diag."""
    pair = lab.pair(socket=True)
    live = {s.pid: s for s in scan.scan().servers}[pair.server.pid]
    assert live.stdin_kind == "socket" and live.stdin_writer() == "yes" and not live.leaked
    orphan = pair.orphan()
    e = {s.pid: s for s in scan.scan().servers}[orphan.pid]
    assert e.stdin_writer() == "no" and e.leaked
    assert {"parent-gone", "stdin-no-writer"} <= set(e.evidence)


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_a_wrapper_and_the_server_it_runs_are_one_entry(lab: Lab) -> None:
    pair = lab.pair(wrapper=True)
    result = scan.scan()
    e = {s.pid: s for s in result.servers}.get(pair.server.pid)
    assert e is not None, [s.command for s in result.servers]
    assert len(e.members) == 2 and e.members[0].ident == pair.server
    assert not any(s.pid == e.members[1].ident.pid for s in result.servers)


@pytest.mark.requires_linux_backend("patches the Linux backend's /proc parser")
def test_permission_denied_processes_are_skipped_quietly(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    hidden = lab.pair()
    shown = lab.pair()
    from mcp_tether._plat import linux as _linux_table

    real = _linux_table._parse  # each process's record, after its stat was read

    def reader(pid: int, *args: object) -> table.ProcRecord | None:
        if pid == hidden.server.pid:
            raise PermissionError(13, "Permission denied")
        return real(pid, *args)  # type: ignore[arg-type]

    with monkeypatch.context() as m:  # undone before the lab ends its processes
        m.setattr(_linux_table, "_parse", reader)
        result = scan.scan()
    pids = {s.pid for s in result.servers}
    assert hidden.server.pid not in pids and shown.server.pid in pids
    assert result.unreadable >= 1


def test_a_malformed_host_config_gives_a_message_and_the_scan_still_works(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. a broken Cursor config; 2. a good Claude Code config naming our server;
    3. ps warns with the file and still matches the server to the good config."""
    home = Path(os.environ["HOME"])
    (home / ".cursor").mkdir()
    bad = home / ".cursor" / "mcp.json"
    bad.write_text('{"mcpServers": {"x": {"command": "a",, }}}')
    server = lab.fake_server()
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"fake": {
        "command": sys.executable, "args": [str(server)]}}}))
    pair = lab.pair()
    rc, out, err = run_cli(capsys, "ps", "--json")
    assert rc == 0
    assert str(bad) in err
    doc = json.loads(out)
    assert_consistent(doc)
    assert any(str(bad) in m for m in doc["config_errors"])
    e = entry(doc, pair.server.pid)
    assert e is not None and "config" in e["found_by"] and e["mcp"] is True
    assert e["config"][0]["host"] == "claude-code" and e["config"][0]["name"] == "fake"


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_openmetrics_output_is_well_formed_and_ends_with_eof(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    lab.pair().orphan()
    rc, out, _ = run_cli(capsys, "ps", "--format", "openmetrics")
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
        elif ln.startswith("# UNIT "):
            name, unit = ln.split()[2:4]
            assert name in typed and name.endswith("_" + unit), ln
        else:
            assert sample.match(ln), ln
            assert ln.split("{")[0].split()[0] in typed, ln
    leaked = next(ln for ln in lines if ln.startswith('mcp_tether_servers{state="leaked"}'))
    assert int(leaked.split()[-1]) >= 1
    assert any(ln.startswith("mcp_tether_package_servers{") and 'state="leaked"' in ln
               for ln in lines)
    assert 'pid="' not in out  # no series per process unless --per-process
    assert lines.count("# EOF") == 1


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_plain_ps_lists_leaks_first_with_totals(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    live = lab.pair()
    orphan = lab.pair().orphan()
    rc, out, _ = run_cli(capsys, "ps")
    assert rc == 0
    out = out.split("\ncontainers:\n")[0]  # running `-i` containers, if any, come after
    rows = [ln.split() for ln in out.splitlines()[1:-1]]
    pids = [int(r[1]) for r in rows]
    assert pids.index(orphan.pid) < pids.index(live.server.pid)
    assert "leaked holding" in out.splitlines()[-1]


# ----- reap --------------------------------------------------------------------------


@pytest.mark.requires_far_ends(FAR_ENDS)
@pytest.mark.parametrize("new_session", [True, False], ids=["own-session", "client-group"])
def test_reap_yes_ends_the_leak_and_touches_nothing_else(
    lab: Lab, capsys: pytest.CaptureFixture[str], new_session: bool
) -> None:
    """1. a leak, a live pair and a bystander; 2. reap --yes; 3. only the leak is gone.

    client-group: the leak still shares pytest's process group, so a group signal would
    hit pytest; reap must signal it alone.
    """
    orphan = lab.pair(new_session=new_session).orphan()
    live = lab.pair(new_session=new_session)
    bystander = lab.popen([sys.executable, "-c", "import signal; signal.pause()"])
    rc, out, _ = run_cli(capsys, "reap", "--yes", "--include", "guess", "--json", "--grace", "5")
    assert rc == 0, out
    doc = json.loads(out)
    assert doc["schema"] == "mcp-tether/reap", doc
    ours = [r for r in doc["results"] if r["pid"] == orphan.pid]
    assert ours and ours[0]["outcome"] == "ended" and ours[0]["ended_by"] == "sigterm"
    assert ours[0]["reclaimed_bytes"] > 0
    assert [r["pid"] for r in doc["results"]] == [orphan.pid]
    assert wait_gone(orphan, DEADLINE) is not None
    assert compare(live.server) == SAME and live.client.poll() is None
    assert bystander.poll() is None


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_reap_ends_a_config_matched_leaked_tree_by_default(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --include: a configured server (not a guess) that leaked is ended,
    wrapper and server together."""
    pair = lab.pair(wrapper=True)
    members = [pair.server, *kids(pair.server.pid)]
    assert len(members) == 2
    Path(".mcp.json").write_text(json.dumps({"mcpServers": {"fake": {
        "command": "sh", "args": ["-c", pair.argv[2]]}}}))
    pair.orphan()
    rc, out, _ = run_cli(capsys, "reap", "--yes", "--json")
    assert rc == 0
    doc = json.loads(out)
    assert [r["pid"] for r in doc["results"]] == [pair.server.pid]
    for m in members:
        assert wait_gone(m, DEADLINE) is not None


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_a_pid_reused_between_scan_and_signal_is_not_signalled(lab: Lab) -> None:
    """The plan's start times are faked ("the pid now belongs to someone else")."""
    orphan = lab.pair().orphan()
    p = reap.plan(find.scan(), {"guess"})
    chosen = [s for s in p.chosen if s.pid == orphan.pid]
    assert chosen
    s = chosen[0]
    fake = ProcessId(s.pid, s.ident.start + 7)
    members = [Member(m, m.cpu_seconds) for m in s.members]
    for m in members:
        m.start += 7
    s = replace(s, ident=fake, members=members)
    [outcome] = reap.reap_servers([s], grace=0.5)
    assert outcome.outcome == "gone" and outcome.reclaimed_bytes == 0
    assert not any(x["result"] == "sent" for x in outcome.signals)
    assert compare(orphan) == SAME  # untouched


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_a_pid_reused_within_the_same_clock_tick_is_not_signalled(lab: Lab) -> None:
    """Same pid, same start tick, another process: told apart by its parent and its
    channel, checked after the pidfd pins it (a start time counted in clock ticks
    cannot tell two processes of one tick apart)."""
    orphan = lab.pair().orphan()
    [s] = [s for s in reap.plan(find.scan(), {"guess"}).chosen if s.pid == orphan.pid]
    other = Member(s.members[0], s.members[0].cpu_seconds)
    other.ppid += 4242
    s = replace(s, members=[other])
    [outcome] = reap.reap_servers([s], grace=0.5)
    assert outcome.outcome == "gone" and not outcome.signals
    assert compare(orphan) == SAME


def test_reap_without_a_terminal_or_yes_refuses(
    lab: Lab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    orphan = lab.pair().orphan()
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    rc, _, err = run_cli(capsys, "reap", "--include", "guess")
    assert rc == 2 and "--yes" in err
    assert compare(orphan) == SAME


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_reap_asks_about_what_it_will_end_counted_in_words(
    lab: Lab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """1. One leak, then two, and a person at a terminal who answers no: the question
    names what is there ("this server tree", "these 2 server trees"), no container when
    there is none; the plan counts processes and trees as such; 2. nothing is ended."""
    from mcp_tether.scan import cli as scan_cli

    asked: list[str] = []
    monkeypatch.setattr(scan_cli, "_terminal", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or "n")
    monkeypatch.setattr(scan_cli.machine, "listing", lambda: (None, []))  # no engine here
    first = lab.pair().orphan()
    rc, _, err = run_cli(capsys, "reap", "--include", "guess", "--grace", "5")
    assert rc == 0 and "nothing ended" in err
    assert asked[-1].startswith("End this server tree (minimum age 0s"), asked
    assert f"would end pid {first.pid} (1 process, " in err and "total: 1 tree, " in err
    second = lab.pair().orphan()
    run_cli(capsys, "reap", "--include", "guess", "--grace", "5")
    assert asked[-1].startswith("End these 2 server trees (minimum age"), asked
    assert not [q for q in asked if "container" in q or "(s)" in q]
    assert compare(first) == SAME and compare(second) == SAME


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_reap_dry_run_shows_the_plan_and_ends_nothing(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    orphan = lab.pair().orphan()
    rc, out, _ = run_cli(capsys, "reap", "--dry-run", "--include", "guess")
    assert rc == 0 and f"would end pid {orphan.pid}" in out
    rc, out, _ = run_cli(capsys, "reap", "--dry-run")  # a guess needs --include guess
    assert f"would end pid {orphan.pid}" not in out
    assert f"left alone: pid {orphan.pid}" in out and "--include guess" in out
    assert compare(orphan) == SAME


def test_all_users_needs_root(capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    rc, _, err = run_cli(capsys, "reap", "--all-users", "--dry-run")
    assert rc == 2 and "root" in err


@pytest.mark.parametrize("argv", [
    ["--grace", "inf"], ["--grace", "nan"], ["--grace", "-1"], ["--min-age", "inf"],
    ["--min-age", "-5"], ["--watch", "--yes", "--interval", "nan"],
])
def test_non_finite_or_negative_durations_are_usage_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """A duration that is not a finite, non-negative number of seconds is a usage error:
    exit 2 and one line at parse time, never an exception after SIGTERM was sent."""
    rc, out, err = run_cli(capsys, "reap", "--dry-run", *argv)
    assert rc == 2 and out == ""
    assert "seconds" in err and "Traceback" not in err and len(err.strip().splitlines()) <= 5


# ----- recognisers -------------------------------------------------------------------


def test_mcp_looking_commands_are_guessed_and_others_are_not() -> None:
    yes = [["npx", "-y", "@modelcontextprotocol/server-filesystem@1.2", "/tmp"],
           ["uvx", "mcp-server-git"], ["python", "-m", "mcp_server_fetch"],
           ["node", "/x/github-mcp-server"], ["fastmcp", "run", "s.py"],
           ["sh", "-c", "exec npx brave-search-mcp"], ["npm exec @x/weather-mcp"]]
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


def test_only_reap_may_signal_and_only_through_the_core() -> None:
    """The scan gathers evidence; ending processes is reap's business, via proc/."""
    pkg = Path(scan.__file__).parent
    for f in pkg.glob("*.py"):
        src = f.read_text()
        assert not re.search(r"\b(os\.kill|killpg|pidfd_send_signal|send_signal)\b", src), f
        if f.name not in ("reap.py", "cli.py", "watch.py"):
            assert not re.search(r"\b(signal_process|signal_group|\.signal\()", src), f


@pytest.mark.requires_far_ends(FAR_ENDS)
@pytest.mark.parametrize("launcher", ["module", "script"])
def test_ps_shows_the_inner_command_of_a_guarded_server(
    lab: Lab, capsys: pytest.CaptureFixture[str], launcher: str
) -> None:
    """A server behind `mcp-tether run --` is one entry rooted at the guard, shown as
    the server it guards (not `python -m mcp_tether run [+1]`), also when the guard is
    the console script a wrapped config names (the kernel shows it as `python3
    /x/bin/mcp-tether run ...`, its shebang's interpreter first)."""
    server = [sys.executable, str(lab.fake_server())]
    script = Path(sys.executable).parent / "mcp-tether"
    if launcher == "script" and not script.exists():
        pytest.skip("no mcp-tether console script beside this python")
    guard = ([sys.executable, "-m", "mcp_tether"] if launcher == "module" else [str(script)])
    pair = lab.pair([*guard, "run", "--grace", "1", "--", *server])
    doc = ps_json(capsys)
    e = entry(doc, pair.server.pid)
    assert e is not None, [s["command"] for s in doc["results"]]
    assert e["command"][-len(server) - 4:-len(server)] == ["run", "--grace", "1", "--"]
    # the guard's front (the pid the host knows), its supervisor, the server; no front
    # where the guard cannot watch its host past one (no pidfds: the darwin backend),
    # but the guard's watcher where there is no parent-death signal (the darwin one)
    from mcp_tether import platform

    others = (2 if platform.backend.WATCHES_BEYOND_PARENT else 1) \
        + (0 if platform.has_pdeathsig() else 1)
    assert e["shown_command"] == server and len(e["members"]) == others + 1
    rc, out, _ = run_cli(capsys, "ps")
    row = next(ln for ln in out.splitlines() if ln.split()[1:2] == [str(pair.server.pid)])
    assert "guarded: " in row and f"mcp-server-fake.py [+{others}]" in row
    assert "mcp_tether run" not in row and "mcp-tether run" not in row


def _pidfds_held() -> set[int]:
    """Pids this process holds a pidfd on (fdinfo of a pidfd names its `Pid:`)."""
    held = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:[pidfd]":
                continue
            with open(f"/proc/self/fdinfo/{fd}") as fh:
                held |= {int(ln.split()[1]) for ln in fh if ln.startswith("Pid:")}
        except OSError:
            continue
    return held


def test_reap_holds_a_pidfd_on_each_chosen_process_from_the_plan_to_the_last_signal(
    lab: Lab,
) -> None:
    """Pinned right after the scan (before any prompt), released after the ladder."""
    from mcp_tether import platform

    if not platform.has_pidfd():
        pytest.skip("no pidfds here")
    orphan = lab.pair(wrapper=True).orphan()
    [s] = [s for s in reap.plan(find.scan(), {"guess"}).chosen if s.pid == orphan.pid]
    members = {m.ident.pid for m in s.members}
    assert len(members) == 2
    with reap.Pins([s]) as pins:
        assert members <= _pidfds_held()
        [outcome] = reap.reap_servers([s], grace=5, pins=pins)
        assert outcome.outcome == "ended"
    assert not members & _pidfds_held()


def test_config_entries_match_the_package_a_process_was_identified_as_running() -> None:
    """`npx -y X`, `uvx X` and a guarded `mcp-tether run -- npx -y X` name package X;
    npm's and PyPI's spellings of a name are compared as each registry does."""
    from types import SimpleNamespace

    from mcp_tether.scan.match import Matcher
    from mcp_tether.scan.model import What

    def m(command: str, *args: str, wrapped: bool = False) -> Matcher:
        return Matcher.of(SimpleNamespace(command=command, args=list(args), wrapped=wrapped,
                                          host="h", name="n", path="p"))

    node = What(runtime="node", package="@acme/weather")
    assert m("npx", "-y", "@acme/weather@1.2.0").matches_package(node)
    assert m("mcp-tether", "run", "--grace", "1", "--", "npx", "-y", "@acme/weather",
             wrapped=True).matches_package(node)
    assert not m("npx", "-y", "@acme/other").matches_package(node)
    assert not m("node", "/x/index.js").matches_package(node)
    py = What(runtime="python", package="mcp-server-time")
    assert m("uvx", "mcp_server_time").matches_package(py)
    assert m("pipx", "run", "mcp-server-time==1.0").matches_package(py)
    assert not m("uvx", "mcp-server-git").matches_package(py)


def test_a_config_entry_is_run_exactly_as_written_or_not() -> None:
    """`Matcher.exactly`: one member's command line ends in the entry's command and every
    argument, flags included (a runner's words from its package on), in the entry's cwd,
    with the entry's variables; an edit of a flag, an operand, the cwd or a variable
    gives another fingerprint, and the old tree no longer runs the entry exactly."""
    from types import SimpleNamespace

    from mcp_tether.scan.match import Matcher

    def m(command: str, *args: str, env: dict[str, str] | None = None,
          cwd: str | None = None) -> Matcher:
        return Matcher.of(SimpleNamespace(command=command, args=list(args), env=env or {},
                                          cwd=cwd, host="h", name="n", path="p"))

    py = ["/usr/bin/python3", "/srv/mini.py", "--v1", "alpha"]
    v1 = m("python3", "/srv/mini.py", "--v1", "alpha")
    assert v1.exactly([py], "/srv", {})
    for edited in (m("python3", "/srv/mini.py", "--v2", "alpha"),  # a flag
                   m("python3", "/srv/mini.py", "--v1", "beta"),  # an operand
                   m("python3", "/srv/mini.py", "--v1"),  # an argument dropped
                   m("python3", "/srv/other.py", "--v1", "alpha")):  # the script
        assert edited.fingerprint != v1.fingerprint and not edited.exactly([py], "/srv", {})
    assert m("python3", "mini.py", "--v1", "alpha").exactly([py], "/srv", {})  # cwd-relative
    assert not m("python3", "mini.py", "--v1", "alpha").exactly([py], "/elsewhere", {})
    env = m("python3", "/srv/mini.py", "--v1", "alpha", env={"K": "v"})
    assert env.exactly([py], "/srv", {"K": "v", "HOME": "/root"})
    assert not env.exactly([py], "/srv", {"K": "w"}) and not env.exactly([py], "/srv", None)
    assert env.fingerprint != v1.fingerprint
    assert not m("python3", "/srv/mini.py", "--v1", "alpha", cwd="/a").exactly([py], "/b", {})
    npx = m("npx", "-y", "@acme/weather@1.2", "--units", "si")
    assert npx.exactly([["npm exec @acme/weather@1.2 --units si"]], "/", {})  # a title
    assert npx.exactly([["sh", "-c", "weather --units si"],
                        ["node", "/home/u/.npm/_npx/1/node_modules/.bin/weather", "--units",
                         "si"]], "/", {})
    assert not npx.exactly([["npm exec @acme/weather@1.2 --units imperial"]], "/", {})
    guarded = m("mcp-tether", "run", "--", "python3", "/srv/mini.py", "--v1", "alpha")
    assert guarded.exactly([["/usr/bin/mcp-tether", "run", "--", "python3", *py[1:]]], "/srv",
                           {})  # the guard's argv holds the entry's words as written


def test_every_scan_reads_the_host_configs_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real machine's discovery (no fake home): an entry added to a host's config, a
    project file that appears, another working directory are each seen by the next scan."""
    from mcp_tether.scan.match import load_config

    home, project, elsewhere = tmp_path / "home", tmp_path / "project", tmp_path / "elsewhere"
    for d in (home, project, elsewhere):
        d.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCODE_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(project)

    def names() -> list[str]:
        return sorted(m.name for m in load_config(None, None, None, None)[0])

    def servers(path: Path, **argvs: list[str]) -> None:
        path.write_text(json.dumps({"mcpServers": {
            name: {"command": argv[0], "args": argv[1:]} for name, argv in argvs.items()}}))

    servers(home / ".claude.json", weather=["npx", "-y", "@acme/weather"])
    assert names() == ["weather"]
    servers(home / ".claude.json", weather=["npx", "-y", "@acme/weather"],
            notes=["uvx", "notes-mcp"])
    assert names() == ["notes", "weather"]
    servers(project / ".mcp.json", local=["python", "server.py"])
    assert names() == ["local", "notes", "weather"]
    monkeypatch.chdir(elsewhere)
    assert names() == ["notes", "weather"]
