"""`mcp-tether hostcheck` against hosts whose behaviour is known from their code.

The hosts (tests/hostcheck_hosts/) each end their server one way: the TypeScript SDK's
StdioClientTransport (end stdin, 2 s, SIGTERM to the direct child, 2 s, SIGKILL), the
Python SDK's stdio_client (close stdin, 2 s, killpg SIGTERM, ...), our guarded
stdio_client (the ladder over the whole tree, and a guard for a SIGKILLed host), and a
bad host (SIGKILL to its direct child only, stdin left open). The recorder stays at EOF,
so only what the host does ends it; the verdicts follow from that code.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_tether.cli import main
from mcp_tether.hostcheck import TEMP_PREFIX, check, decide
from mcp_tether.hostcheck.spec import RECORDER
from mcp_tether.lab import node_env
from mcp_tether.proc import ProcessId, cmdline, identify, snapshot
from mcp_tether.proc.signals import signal_process
from mcp_tether.report.hostcheck import render_html, render_markdown, render_text
from mcp_tether.tempdirs import sweep_stale
from polling import until

pytestmark = pytest.mark.linux

HOSTS = Path(__file__).resolve().parent / "hostcheck_hosts"
FAST = {"settle": 0.5, "ready_timeout": 60.0, "jobs": 2}


def _verdicts(result: Any) -> dict[str, str]:
    return {r["scenario"]: r["verdict"] for r in result.results}


def test_the_verdict_follows_from_what_was_left() -> None:
    """1. Nothing left: clean. 2. The direct child left: server-left, even with its child.
    3. Only the grandchild: wrapper-child-left. 4. Host still running: host-stayed, unless
    it ended its server and left that server's child.
    5. An old copy alive beside the host's new one: abandoned."""
    assert decide(host_exited=True, left_roles=[]) == "clean"
    assert decide(host_exited=True, left_roles=["grandchild", "server"]) == "server-left"
    assert decide(host_exited=True, left_roles=["grandchild"]) == "wrapper-child-left"
    assert decide(host_exited=False, left_roles=["server", "grandchild"]) == "host-stayed"
    assert decide(host_exited=False, left_roles=["grandchild"]) == "wrapper-child-left"
    assert decide(host_exited=False, left_roles=[], abandoned_roles=["server"]) == "abandoned"


def test_bad_input_gets_one_line_and_its_code(capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    """Missing host command 127, not executable 126, no {server} and no --host 2."""
    script = tmp_path / "host.sh"
    script.write_text("#!/bin/sh\n")
    assert main(["hostcheck", "--", "no-such-host-xyz", "{server}"]) == 127
    assert main(["hostcheck", "--", str(script), "{server}"]) == 126
    assert main(["hostcheck", "--", "true"]) == 2
    assert main(["hostcheck", "-s", "reconnect", "--", "true", "{server}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(line.startswith("mcp-tether hostcheck: ") for line in err)


@pytest.mark.slow
def test_a_bad_host_leaves_the_wrapped_child_and_a_crash_leaves_the_server(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """1. The bad host SIGKILLs its direct child only: the grandchild is left.
    2. SIGKILLed itself, it leaves the server (which stays at EOF) and the grandchild.
    3. --json: one document, a result per scenario with `scenario` and `verdict`; exit 1."""
    code = main(["hostcheck", "--json", "--settle", "0.5", "-j", "2", "-s", "exit", "-s", "sigkill",
                 "--", sys.executable, str(HOSTS / "bad_host.py"), "{server}"])
    out, err = capsys.readouterr()
    rows = json.loads(out)["results"]
    assert code == 1
    assert "mcp-tether hostcheck: 2/2 after " in err  # progress: stderr only
    assert {r["scenario"]: r["verdict"] for r in rows} == {
        "exit": "wrapper-child-left", "sigkill": "server-left"}
    exit_row = rows[0]
    server_saw = [e for e in exit_row["recorded"] if e["role"] == "server"]
    # Never EOF before the kill: the bad host does not close stdin.
    assert not any(e["what"] == "stdin-eof" for e in server_saw)
    assert exit_row["left"] and {x["role"] for x in exit_row["left"]} == {"grandchild"}


@pytest.mark.slow
def test_the_python_sdk_host_ends_the_group_but_not_after_a_crash() -> None:
    """The SDK's ladder reaches the grandchild (killpg): clean; SIGKILLed, nothing runs it."""
    result = check([sys.executable, str(HOSTS / "py_sdk_host.py"), "{server}"],
                   scenarios=["exit", "sigkill"], **FAST)
    assert _verdicts(result) == {"exit": "clean", "sigkill": "server-left"}
    saw = {e["what"] for e in result.results[0]["recorded"] if e["role"] == "server"}
    assert {"stdin-eof", "signal"} <= saw  # EOF first, then the group's SIGTERM
    page = render_html(result)
    assert 'data-verdict="clean"' in page and 'data-verdict="server-left"' in page
    out = io.StringIO()
    render_markdown(result, out)
    assert "| exit | **clean** |" in out.getvalue()


@pytest.mark.slow
def test_the_guarded_client_leaves_nothing_even_when_its_host_is_killed() -> None:
    """mcp_tether.client.stdio_client: clean on exit and on SIGKILL (its guard)."""
    result = check([sys.executable, str(HOSTS / "tether_host.py"), "{server}"],
                   scenarios=["exit", "sigkill"], **FAST)
    assert _verdicts(result) == {"exit": "clean", "sigkill": "clean"}
    assert result.exit_code == 0
    out = io.StringIO()
    render_text(result, out)
    assert "every scenario clean" in out.getvalue()


@pytest.mark.slow
@pytest.mark.node
def test_the_typescript_sdk_host_reaches_only_its_direct_child() -> None:
    """StdioClientTransport.close(): EOF, 2 s, SIGTERM to the recorder; its child is left."""
    if node_env.missing_tools():
        pytest.skip(node_env.missing_tools() or "")
    folder = node_env.ensure(quiet=True)
    shutil.copy2(HOSTS / "ts_host.mjs", folder / "hostcheck_ts_host.mjs")
    result = check(["node", str(folder / "hostcheck_ts_host.mjs"), "{server}"],
                   scenarios=["exit", "sigkill"], **FAST)
    assert _verdicts(result) == {"exit": "wrapper-child-left", "sigkill": "server-left"}
    exit_row = result.results[0]
    signals = [e["signal"] for e in exit_row["recorded"]
               if e["role"] == "server" and e["what"] == "signal"]
    assert signals == ["SIGTERM"]


def test_a_host_that_reloads_its_config_ends_the_old_server_or_abandons_it() -> None:
    """--host cursor writes the recorder into a throwaway ~/.cursor/mcp.json.
    1. The reconnect scenario edits the entry; the host starts a second copy.
    2. A host that ends the old copy first: clean. 3. One that drops it: abandoned."""
    script = str(HOSTS / "reconnect_host.py")
    good = check([sys.executable, script], host="cursor", scenarios=["reconnect"], **FAST)
    bad = check([sys.executable, script, "--abandon"], host="cursor",
                scenarios=["reconnect", "exit"], **FAST)
    assert _verdicts(good) == {"reconnect": "clean"}
    assert _verdicts(bad) == {"reconnect": "abandoned", "exit": "clean"}
    row = bad.results[0]
    assert row["host_config"].endswith("/home/.cursor/mcp.json")
    assert any(e["what"] == "second-copy" for e in row["recorded"])
    assert {x["role"] for x in row["left"]} == {"server", "grandchild"}
    # 4. `ps` at the end: the dropped copy is abandoned, the one in use live.
    old = {x["pid"] for x in row["left"] if x["role"] == "server"}
    found = {p["pid"]: p["state"] for p in row["ps"]}
    assert {found[p] for p in old} == {"abandoned"}, row["ps"]
    assert [st for p, st in found.items() if p not in old] == ["live"], row["ps"]
    assert [p["state"] for p in good.results[0]["ps"]] == ["live"]


@pytest.mark.slow
@pytest.mark.node
def test_a_typescript_sdk_host_that_drops_and_stops_reading_its_old_copy_shows_it_abandoned(
) -> None:
    """ts_config_host.mjs abandon: on the config edit it connects a new Client and drops
    the old one unclosed, no longer reading it; `ps` at the end: old abandoned, new live."""
    if node_env.missing_tools():
        pytest.skip(node_env.missing_tools() or "")
    folder = node_env.ensure(quiet=True)
    shutil.copy2(HOSTS / "ts_config_host.mjs", folder / "hostcheck_ts_config_host.mjs")
    result = check([shutil.which("node") or "node", str(folder / "hostcheck_ts_config_host.mjs"),
                    "abandon"],
                   host="cursor", scenarios=["reconnect"], **FAST)
    assert _verdicts(result) == {"reconnect": "abandoned"}
    row = result.results[0]
    old = {x["pid"] for x in row["left"] if x["role"] == "server"}
    found = {p["pid"]: p["state"] for p in row["ps"]}
    assert {found[p] for p in old} == {"abandoned"}, row["ps"]
    assert [st for p, st in found.items() if p not in old] == ["live"], row["ps"]


def _recorders(tag: str) -> list[ProcessId]:
    out = []
    for info in snapshot().values():
        if info.exited:
            continue
        argv = cmdline(info.pid)
        if RECORDER in argv and any(tag in a for a in argv):
            out.append(info.ident)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=["sigkill", "sigint", "sigterm", "sighup"])
def test_a_stopped_check_leaves_neither_host_nor_recorder(tmp_path: Path, sig: int) -> None:
    """1. The check runs a host that starts the recorder behind `sh -c` and never
       initializes it: the keeper would wait its whole --ready-timeout (120 s).
    2. Once the recorder runs, the check itself is SIGKILLed, Ctrl-C'd, SIGTERMed or
       hung up.
    3. Its keeper notices (PDEATHSIG, the pipe's EOF; or the driver's SIGTERM) and ends
       host, recorder and grandchild at once; a stopped check exits 128+N with one line
       and leaves no folder; a SIGKILLed one's folder is swept once its keeper is gone."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_tether", "hostcheck", "-s", "exit", "--ready-timeout",
         "120", "--", "sh", "-c", '"$@"; true', "sh", "{server}"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def grandchild_started() -> bool:  # a file another process writes
        assert proc.poll() is None, f"the check exited {proc.returncode} first"
        return any(b'"start"' in f.read_bytes()
                   for f in tmp_path.glob("*/exit/events/grandchild-*.jsonl"))

    until(grandchild_started, "the recorder to start its grandchild", 60)
    ident = identify(proc.pid)
    assert ident is not None and signal_process(ident, sig) == "sent"
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == (-signal.SIGKILL if sig == signal.SIGKILL else 128 + sig), err
    tag = str(tmp_path)
    try:
        until(lambda: not _recorders(tag), "the recorders to end", 15)
    except AssertionError as e:
        raise AssertionError(f"{e}; still running: {_recorders(tag)}") from None
    folders = list(tmp_path.glob(f"{TEMP_PREFIX}*"))
    if sig == signal.SIGKILL:  # 4. the next check's sweep removes it once its keeper is gone
        assert len(folders) == 1
        until(lambda: sweep_stale(TEMP_PREFIX, str(tmp_path)) == [str(folders[0])],
              "the stale folder to be swept", 15)
        return
    name = signal.Signals(sig).name
    assert err.decode().splitlines() == [f"mcp-tether hostcheck: stopped by {name}; "
                                         "nothing left running"], err
    assert folders == []


def test_a_host_that_leaves_before_the_handshake_ends_is_still_judged(tmp_path: Path) -> None:
    """A config probe that sends `initialize`, reads the answer and exits (no
    `notifications/initialized`): its exit leaves the server; the signal scenarios are
    skipped (a one-shot host), never reported as a failure of the check."""
    host = tmp_path / "probe_host.py"
    host.write_text(
        "import subprocess, sys\n"
        "p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)\n"
        "p.stdin.write(b'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\\n')\n"
        "p.stdin.flush()\n"
        "p.stdout.readline()\n")
    result = check([sys.executable, str(host), "{server}"], scenarios=["exit", "sigterm"], **FAST)
    assert _verdicts(result) == {"exit": "server-left", "sigterm": "skipped"}
    assert "before it initialized" in result.results[0]["detail"]


def test_under_a_pty_eof_is_a_keypress_and_a_hangup_reaches_the_foreground_group() -> None:
    """The bad host under a pty (--pty). 1. exit: ^D reads as EOF, the host SIGKILLs its
    direct child only: wrapper-child-left. 2. sighup: the pty's master is closed; the
    host (session leader) kills its child and exits, and the kernel's SIGHUP to the
    terminal's foreground group, which the grandchild shares, ends the rest: clean."""
    result = check([sys.executable, str(HOSTS / "bad_host.py"), "{server}"], pty=True,
                   scenarios=["exit", "sighup"], **FAST)
    assert _verdicts(result) == {"exit": "wrapper-child-left", "sighup": "clean"}
    hup = result.results[1]
    got = [e.get("signal") for e in hup["recorded"] if e["role"] == "grandchild"]
    assert "SIGHUP" in got


def test_under_a_pty_the_host_output_tail_is_what_its_terminal_showed() -> None:
    """Under --pty the host writes to its terminal, not to host.log: the row's
    host_output_tail is the screen's last bytes (an empty host.log once replaced them)."""
    say = ("import os, sys\nprint('the host greets its terminal', flush=True)\n"
           "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")
    result = check([sys.executable, "-c", say, str(HOSTS / "bad_host.py"), "{server}"],
                   pty=True, scenarios=["exit"], **FAST)
    (row,) = result.results
    assert "the host greets its terminal" in row["host_output_tail"]


def _procs(row: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The row's per-process records by role (one copy of each here)."""
    return {p["role"]: p for p in row["processes"]}


def _signals(p: dict[str, Any]) -> list[str]:
    return [s["signal"] for s in p["signals"]]


def test_a_one_shot_host_held_at_tools_list_is_ended_by_the_scenario() -> None:
    """The one-shot host ends its server (SIGTERM to the direct child) right after the
    `tools/list` answer. 1. The recorder holds that answer until the trigger.
    2. sigkill: the host dies waiting, nothing signals the server: server-left (the
    scenario's outcome, not the race with its own shutdown). 3. exit: released, it
    SIGTERMs its direct child only: wrapper-child-left. The report names the hold.
    4. Held at `initialize`, the SIGKILL gives the same verdict."""
    result = check([sys.executable, str(HOSTS / "oneshot_host.py"), "{server}"],
                   scenarios=["sigkill", "exit"], **FAST)
    assert _verdicts(result) == {"sigkill": "server-left", "exit": "wrapper-child-left"}
    killed, done = result.results
    for row in (killed, done):
        assert row["hold_point"] == "tools/list"
        assert row["held_ms"] <= row["action_ms"] <= row["released_ms"]
    assert _signals(_procs(killed)["server"]) == []
    assert _procs(killed)["server"]["ended"] == "left running"
    server = _procs(done)["server"]
    assert _signals(server) == ["SIGTERM"] and server["stdin_closed_first"] is False
    assert server["direct_child"] is True and server["group"] == "the host's"
    out = io.StringIO()
    render_text(result, out)
    assert "held at tools/list" in out.getvalue()
    # 4. Held at `initialize` instead (mid-handshake): the same verdict.
    early = check([sys.executable, str(HOSTS / "oneshot_host.py"), "{server}"],
                  scenarios=["sigkill"], hold="initialize", **FAST)
    assert _verdicts(early) == {"sigkill": "server-left"}
    assert early.results[0]["hold_point"] == "initialize"


def test_a_host_already_ending_the_server_before_the_trigger_gets_no_verdict() -> None:
    """The host closes the server's stdin right after the handshake (never lists tools),
    then waits. The trigger comes after that EOF: `preempted`, naming the EOF, with what
    was left after it kept apart (`after`); it does not fail the check."""
    result = check([sys.executable, str(HOSTS / "oneshot_host.py"), "--early", "{server}"],
                   scenarios=["sigterm"], **FAST)
    row = result.results[0]
    assert row["verdict"] == "preempted" and result.exit_code == 0
    # The first sign: the server's EOF or the grandchild's hang-up, whichever came first.
    assert row["after"] == "server-left" and "saw stdin-" in row["detail"]
    assert row["hold_point"] is None
    out = io.StringIO()
    render_text(result, out)
    assert "not judged: sigterm" in out.getvalue()


def test_behind_a_non_forwarding_wrapper_a_signal_to_the_child_and_to_the_group_differ() -> None:
    """--wrapper: host -> wrapper (forwards nothing, as `sh -c 'SERVER; true'`) -> server
    -> grandchild. 1. SIGTERM to the direct child: only the wrapper gets it, the server
    and its child are left. 2. SIGTERM to the group: all three get it: clean. 3. Every
    process is in the host's group and session; none had its stdin closed before its
    signal."""
    host = [sys.executable, str(HOSTS / "oneshot_host.py")]
    child = check([*host, "{server}"], scenarios=["exit"], wrapper=True, **FAST)
    group = check([*host, "--group", "{server}"], scenarios=["exit"], wrapper=True, **FAST)
    assert _verdicts(child) == {"exit": "wrapper-child-left"}
    assert _verdicts(group) == {"exit": "clean"}
    c, g = _procs(child.results[0]), _procs(group.results[0])
    assert c["wrapper"]["direct_child"] is True and c["server"]["direct_child"] is False
    assert [_signals(c[r]) for r in ("wrapper", "server", "grandchild")] == [["SIGTERM"], [], []]
    assert [_signals(g[r]) for r in ("wrapper", "server", "grandchild")] == [["SIGTERM"]] * 3
    assert {c["server"]["ended"], c["grandchild"]["ended"]} == {"left running"}
    for p in [*c.values(), *g.values()]:
        assert (p["group"], p["session"]) == ("the host's", "the host's")
        assert not p["signals"] or p["stdin_closed_first"] is False
    out = io.StringIO()
    render_markdown(child, out)
    assert "| wrapper |" in out.getvalue().splitlines()[2]


def test_host_configs_carry_what_the_host_needs_to_start_a_projects_servers(
        tmp_path: Path) -> None:
    """1. --host gemini-cli also trusts the throwaway project (Gemini starts no server in
    an untrusted folder). 2. --host qwen-code, a fork with Gemini's shape, writes its own
    ~/.qwen files, read back as written. 3. A YAML host is refused with the reason."""
    from mcp_tether.errors import UsageError
    from mcp_tether.hostcheck.config import write_recorder

    home, project = tmp_path / "home", tmp_path / "project"
    argv = [sys.executable, RECORDER, "--events", str(tmp_path)]
    write_recorder("gemini-cli", home, project, argv)
    trusted = json.loads((home / ".gemini" / "trustedFolders.json").read_text())
    assert trusted == {str(project): "TRUST_FOLDER"}
    place = write_recorder("qwen-code", home, project, argv)
    assert place.path == home / ".qwen" / "settings.json"
    assert (home / ".qwen" / "trustedFolders.json").exists()
    with pytest.raises(UsageError, match="YAML"):
        write_recorder("goose", home, project, argv)


@pytest.mark.parametrize("scope", ["user", "project"])
def test_every_host_shape_writes_an_entry_its_host_reads_back_as_written(
        tmp_path: Path, scope: str) -> None:
    """For every --host of every shape the hosts package knows: 1. the recorder's entry is
    written into the host's file of that scope; 2. the project's own reader of that host
    finds it as a stdio server, enabled, with exactly the argv written; 3. its "type", if
    any, is one the host's shape reads as stdio (OpenCode's `local`)."""
    from mcp_tether.errors import UsageError
    from mcp_tether.hostcheck.config import ENTRY_NAME, host_names, write_recorder
    from mcp_tether.hosts import read_servers

    argv = [sys.executable, RECORDER, "--events", str(tmp_path), "a b"]
    written = 0
    for host in host_names():
        home, project = tmp_path / host / "home", tmp_path / host / "project"
        try:
            place = write_recorder(host, home, project, argv, scope=scope)
        except UsageError as exc:  # YAML hosts, and hosts without a file of this scope
            assert "YAML" in str(exc) or f"no {scope}-scope" in str(exc), (host, exc)
            continue
        found = [e for e in read_servers(place.path, place.host) if e.name == ENTRY_NAME]
        assert len(found) == 1, host
        entry = found[0]
        assert (entry.transport, entry.disabled) == ("stdio", False), host
        assert [entry.command, *entry.args] == argv, host
        assert entry.extra.get("type") in place.shape.stdio_types, host
        written += 1
    assert written >= (8 if scope == "user" else 4)


def test_an_opencode_entry_says_it_is_local() -> None:
    """OpenCode reads an `mcp` entry without `type: "local"` as no local server."""
    from mcp_tether.hosts.locations import REGISTRY

    assert REGISTRY["opencode"].shape.stdio_type == "local"
    assert REGISTRY["claude-code"].shape.stdio_type == "stdio"


def test_a_verdict_names_the_hosts_own_process_left_and_the_layer_it_put_before_the_server(
) -> None:
    """1. A launcher whose native half starts the server behind a hidden `sh -c`; 2. a
    SIGTERM ends the launcher only: the verdict says the server was left, and its detail
    names the native half and the `sh -c` (layers the host put before its server) and
    the native half's helper (the host's own), left with it; 3. the Markdown lists them
    under the table."""
    result = check([sys.executable, str(HOSTS / "layered_host.py"), "{server}"],
                   scenarios=["sigterm"], **FAST)
    [r] = result.results
    assert r["verdict"] == "server-left", r["detail"]
    assert [x["cmdline"].split()[:2] for x in r["layers"]] == \
        [[sys.executable, str(HOSTS / "layered_host.py")], ["sh", "-c"]]
    assert "--native" in r["layers"][0]["cmdline"]
    native = next(o for o in r["others_left"] if "--native" in o["cmdline"])
    helper = next(o for o in r["others_left"] if o["cmdline"].startswith("sleep"))
    assert native["hosts_own"] is True and helper["hosts_own"] is True
    assert f"pid {native['pid']} (" in r["detail"]
    assert "a layer the host put before its server" in r["detail"]
    assert f"pid {helper['pid']} (sleep 3600), the host's own" in r["detail"]
    assert "between the host and its server: pid" in r["detail"] and "(sh -c " in r["detail"]
    out = io.StringIO()
    render_markdown(result, out)
    assert "- sigterm: also left: " in out.getvalue()
