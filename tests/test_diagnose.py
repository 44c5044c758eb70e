"""The probe explains a failure: which guarantee failed, what kept the server alive,
and a remedy that fits the server. Real processes; the EPIPE case on a result dict."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_tether.inspect import Transport
from mcp_tether.lab import node_env
from mcp_tether.probe import ProbeOptions, build_specs
from mcp_tether.probe.diagnose import annotate, diagnose, explain_line, remedy, summary
from mcp_tether.probe.runner import run_specs
from polling import until

SERVERS = Path(__file__).parent / "servers"
MINI = [sys.executable, str(SERVERS / "mini.py")]
needs_node = pytest.mark.skipif(node_env.missing_tools() is not None, reason="needs node")


def run(argv: list[str], scenario: str, style: str = "python", **kw: Any) -> dict[str, Any]:
    """1. run one scenario for real; 2. annotate it as the probe CLI does."""
    opts = ProbeOptions(host_style=style, scenarios=(scenario,), window=1.0, **kw)
    (result,) = run_specs(build_specs(argv, opts))
    annotate([result], argv)
    return result


@needs_node
def test_a_node_timer_server_is_told_it_ignores_eof_and_given_the_one_line_fix() -> None:
    node_dir = node_env.ensure(quiet=True)
    r = run(["node", str(node_dir / "timer.mjs")], "exit", "node")
    assert r["verdict"] == "orphaned"
    assert r["diagnosis"].startswith("Does not exit on stdin EOF")
    assert "@modelcontextprotocol/sdk" in r["diagnosis"] and "does not react to EOF" in r[
        "diagnosis"]
    assert "event loop" in r["diagnosis"]  # its main thread sits in epoll_wait
    assert "`tether(server);`" in r["remedy"] and "npm install" in r["remedy"]
    assert "mcp-tether run -- node" in r["remedy"]


def test_a_guarded_node_server_is_given_the_node_fix_not_the_python_helper() -> None:
    """The guard is Python whatever it guards: the server's language is the inner one.
    (On a result dict: behind the guard every scenario now passes for real, devnull
    included, so a failing guarded run is written out here.)"""
    argv = [sys.executable, "-m", "mcp_tether", "run", "--", "node", "timer.mjs"]
    r = {"scenario": "exit", "host_style": "node", "verdict": "orphaned", "passed": False,
         "exit_ms": None, "events": [],
         "survivors": [{"pid": 4321, "evidence": {"exe": sys.executable, "cmdline": argv}}]}
    text = remedy(r, argv, [])
    assert text is not None
    assert "tether(server)" in text and "mcp_tether.run(" not in text
    assert ";;" not in text and "launch it behind the guard" not in text


def test_a_python_thread_server_is_told_which_thread_keeps_it_alive() -> None:
    r = run([sys.executable, str(SERVERS / "named_thread.py")], "exit")
    assert r["verdict"] == "orphaned"
    assert "Does not exit on stdin EOF" in r["diagnosis"]
    assert "flusher" in r["diagnosis"]
    assert "mcp_tether.run(mcp)" in r["remedy"]
    assert "tether(server)" not in r["remedy"]


def test_a_wrapper_that_does_not_forward_a_signal_is_told_to_exec() -> None:
    import shlex

    # The node host style's SIGTERM goes to sh alone (TypeScript SDK `kill()`), sh exits,
    # and the server (a thread keeps it past EOF) never gets it. Not the python style:
    # its SIGTERM goes to the whole group, as the Python SDK's killpg does.
    r = run(["sh", "-c", f"{shlex.join(MINI)} --thread; true"], "sigterm", "node")
    assert r["verdict"] in ("orphaned", "killed")
    assert "wrapper" in r["diagnosis"] and "did not pass it on" in r["diagnosis"]
    assert "exec" in r["remedy"]
    assert "wrapper forwards signals" in summary([r]).split("fails:")[1]


def test_a_server_that_ignores_sigterm_is_told_so() -> None:
    r = run([*MINI, "--ignore-term"], "sigterm")
    assert r["verdict"] == "killed"
    assert r["diagnosis"].startswith("Does not exit on SIGTERM")
    assert "it ignores SIGTERM (SIG_IGN)" in r["diagnosis"]
    assert "wrapper" not in r["diagnosis"]
    assert "mcp_tether.run" in r["remedy"]


def test_a_server_with_stdout_noise_is_told_to_log_to_stderr() -> None:
    r = run([*MINI, "--garbage"], "close")
    assert r["passed"]  # it exits on EOF: only the stdout guarantee fails
    assert "Stdout is not clean" in r["diagnosis"]
    assert "stderr" in r["remedy"] and "mcp-tether run" not in r["remedy"]
    assert "fails: stdout is clean" in summary([r])


def test_a_compliant_server_gets_no_diagnosis() -> None:
    r = run(MINI, "close")
    assert r["passed"] and "diagnosis" not in r
    assert summary([r]) == "holds: exits on stdin EOF, stdout is clean"


def test_a_start_failure_shows_the_last_line_of_stderr() -> None:
    r = run([sys.executable, "-c", "import sys; print('one', file=sys.stderr); "
             "print('API_KEY is not set', file=sys.stderr); sys.exit(3)"], "close")
    assert r["verdict"] == "early-exit"
    assert explain_line(r) == "Exited during start-up (status 3): API_KEY is not set"


def test_a_server_that_died_of_epipe_later_is_told_so() -> None:
    """On a dict: `lingered` comes from the probe stream (a survivor watched to a horizon)."""
    r = {
        "scenario": "exit", "host_style": "node", "verdict": "lingered", "passed": False,
        "exit_ms": None, "lingered_ms": 5012.0, "cause": "exit 1 (write EPIPE)",
        "exit_status": 1, "survivors": [], "warnings": [],
        "stderr_tail": "Error: write EPIPE\n    at afterWriteDispatched",
        "events": [{"t_ms": 0.0, "what": "spawn", "pid": 7, "role": "server",
                    "cmd": "node everything.js"}],
    }
    text = diagnose(r, ["node", "everything.js"], [])
    assert text is not None
    assert text.startswith("Does not exit on stdin EOF promptly")
    assert "5012 ms after the trigger of a write error (EPIPE)" in text
    fix = remedy(r, ["node", "everything.js"], [])
    assert fix is not None and "tether(server)" in fix


def test_behind_the_guard_the_child_is_diagnosed_and_the_guard_not_suggested() -> None:
    """The language and SDK are those of the guarded child, not of the guard's Python."""
    cmd = [sys.executable, "-m", "mcp_tether", "run", "--", "node", "/srv/timer.mjs"]
    r = {
        "scenario": "close", "host_style": "node", "verdict": "terminated", "passed": False,
        "exit_ms": 2010.0, "survivors": [], "warnings": [],
        "events": [
            {"t_ms": 0.0, "what": "spawn", "pid": 1, "role": "client", "cmd": "probe client"},
            {"t_ms": 5.0, "what": "spawn", "pid": 2, "role": "server", "cmd": " ".join(cmd)},
            {"t_ms": 90.0, "what": "seen", "pid": 3, "ppid": 2, "cmd": "node /srv/timer.mjs"},
        ],
    }
    sdks = [Transport(language="python", package="mcp", version="2", exits_on_eof=True),
            Transport(language="node", package="@modelcontextprotocol/sdk", version="1.30.0",
                      exits_on_eof=False, stdin_events=["data", "error"])]
    text = diagnose(r, cmd, sdks)
    assert text is not None and "@modelcontextprotocol/sdk 1.30.0" in text and "mcp 2" not in text
    fix = remedy(r, cmd, sdks)
    assert fix is not None and "tether(server)" in fix and "mcp-tether run" not in fix


def test_npx_that_dies_on_sigterm_and_leaves_its_grandchild_is_a_wrapper_failure() -> None:
    """Shape of a real `npx -y @modelcontextprotocol/server-memory` sigterm run under load:
    npm exits on SIGTERM (its exit noticed only during the clean-up), sh and node live on;
    the node process never got the signal."""
    cmd = ["npx", "-y", "@modelcontextprotocol/server-memory"]
    ev = [
        {"t_ms": 0.0, "what": "spawn", "pid": 10, "role": "client", "cmd": "probe client"},
        {"t_ms": 378.2, "what": "spawn", "pid": 20, "role": "server",
         "cmd": "node /usr/bin/npx -y @modelcontextprotocol/server-memory"},
        {"t_ms": 2900.0, "what": "seen", "pid": 30, "ppid": 20, "cmd": "sh -c mcp-server-memory"},
        {"t_ms": 2900.0, "what": "seen", "pid": 40, "ppid": 30,
         "cmd": "node /x/.bin/mcp-server-memory"},
        {"t_ms": 3400.0, "what": "handshake", "pid": 20},
        {"t_ms": 3600.0, "what": "sigterm", "pid": 20},
        {"t_ms": 3600.0, "what": "window-start", "pid": None},
        {"t_ms": 5600.0, "what": "window-end", "pid": None},
        {"t_ms": 6100.0, "what": "exit", "pid": 20, "status": None, "by": "probe-cleanup"},
        {"t_ms": 6100.0, "what": "exit", "pid": 40, "status": 137, "by": "probe-cleanup"},
    ]
    r = {"scenario": "sigterm", "host_style": "node", "verdict": "orphaned", "passed": False,
         "survivors": [{"pid": 40, "ppid": 5, "cmdline": "node /x/.bin/mcp-server-memory",
                        "evidence": {"alive": True, "sig_caught": ["SIGTERM"]}}],
         "warnings": [], "events": ev}
    text = diagnose(r, cmd, [])
    assert text is not None
    assert "wrapper pid 20" in text and "exited on SIGTERM but did not pass it on" in text
    assert "it never received the SIGTERM (sent to pid 20)" in text
    assert "handler" not in text
    fix = remedy(r, cmd, [])
    assert fix is not None and fix.startswith("`npx` stays in between")


def test_survivors_already_exiting_at_the_window_end_are_called_slow_not_stuck() -> None:
    r = {"scenario": "crash", "host_style": "python", "verdict": "orphaned", "passed": False,
         "survivors": [{"pid": 9, "ppid": None, "cmdline": "",
                        "evidence": {"alive": False, "state": "Z", "comm": "python"}}],
         "warnings": [], "events": []}
    text = diagnose(r, ["python", "server.py"], [])
    assert text is not None and "slow, not stuck" in text and "(python)" in text
    fix = remedy(r, ["python", "server.py"], [])
    assert fix is not None and fix.startswith("In the Python server")


def test_evidence_of_a_vanished_process_is_empty_not_an_error() -> None:
    """collect() never raises: a pid that is gone gives alive False and nothing else."""
    import subprocess

    from mcp_tether.probe.evidence import collect

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    ev = collect(p.pid)
    assert ev["alive"] is False and ev["threads"] == [] and ev["holds_wire"] is None


def test_evidence_names_threads_and_sees_the_wire_of_a_live_process() -> None:
    """A live server: its named thread, its stdio ends (as spawned), its signal masks."""
    import subprocess

    from mcp_tether.probe.evidence import collect, stdio_links

    p = subprocess.Popen([sys.executable, str(SERVERS / "named_thread.py")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        wire = stdio_links(p.pid)

        def named() -> dict[str, Any] | None:
            ev = collect(p.pid, wire)
            return ev if "flusher" in ev["threads"] else None

        ev = until(named, "the server's thread to be named 'flusher'", 20)
        assert ev["alive"]
        assert ev["holds_wire"] is True and len(wire) == 2
        assert "SIGINT" in ev["sig_caught"]  # Python's KeyboardInterrupt handler
    finally:
        p.kill()
        p.wait()
        assert p.stdin is not None and p.stdout is not None
        p.stdin.close()
        p.stdout.close()


def test_a_python_server_that_leaves_children_is_told_the_helper_ends_them_too(
    tmp_path: Path,
) -> None:
    """1. A plain `app.run()` server with a child (own session) and a grandchild: it exits
    at EOF, its kids live on; 2. the remedy offers `mcp_tether.run` and says that it ends
    the server's child processes too, naming them."""
    pytest.importorskip("mcp.server.mcpserver")
    argv = [sys.executable, str(SERVERS / "tether_children.py"), str(tmp_path), "plain"]
    r = run(argv, "exit", env={"PYTHONPATH": str(Path(__file__).parents[1] / "src")},
            ready_timeout=60.0)
    assert r["verdict"] in ("orphaned", "lingered"), (r["verdict"], r.get("detail"))
    assert "mcp_tether.run(mcp)" in r["remedy"]
    assert "ends the server's own child processes (" in r["remedy"]
    assert "pid " not in r["remedy"]  # gone once the probe ended the tree: not to act on
    assert "grandchildren included" in r["remedy"]


def test_a_python_server_that_exited_in_the_window_leaving_children_is_told_they_end_too() -> None:
    """On a result dict (a loaded machine decides whether the server itself exits inside
    the window): 1. the server process exited on EOF and its child and grandchild lived
    on; 2. it is not called a wrapper, and the remedy names the children it ends."""
    argv = [sys.executable, "server.py"]
    r = {"scenario": "exit", "host_style": "python", "verdict": "orphaned", "passed": False,
         "exit_ms": None,
         "events": [
             {"what": "spawn", "role": "server", "pid": 40, "t_ms": 1.0,
              "cmd": f"{sys.executable} server.py"},
             {"what": "seen", "pid": 41, "ppid": 40, "t_ms": 2.0, "cmd": "python kid.py"},
             {"what": "seen", "pid": 42, "ppid": 41, "t_ms": 3.0, "cmd": "python grand.py"},
             {"what": "window-start", "pid": None, "t_ms": 10.0},
             {"what": "exit", "pid": 40, "status": 0, "t_ms": 20.0},
             {"what": "window-end", "pid": None, "t_ms": 1010.0}],
         "survivors": [{"pid": 41, "cmdline": "python kid.py", "evidence": {}},
                       {"pid": 42, "cmdline": "python grand.py", "evidence": {}}]}
    text = diagnose(r, argv)
    assert text is not None and "wrapper" not in text and "does not exit" not in text.lower()
    assert text.startswith("The server process exited on its client's exit, but its "
                           "children `python kid.py`, `python grand.py` survived."), text
    fix = remedy(r, argv, [Transport(language="python", state="sdk", package="mcp")])
    assert fix is not None and "mcp_tether.run(mcp)" in fix
    assert "child processes (python kid.py, python grand.py)" in fix


def test_a_signal_kept_by_a_live_launcher_is_told_to_drop_the_launcher() -> None:
    """On a result dict (the shape of a real `npx` server under the node host style's
    SIGINT): npm exec kept the SIGINT and lives on with its sh and node below it, which
    never received it; the remedy says the launcher is in between, not only the Node fix."""
    cmd = ["npx", "-y", "some-server"]
    ev = [{"t_ms": 0.0, "what": "spawn", "pid": 10, "role": "client", "cmd": "probe client"},
          {"t_ms": 5.0, "what": "spawn", "pid": 20, "role": "server",
           "cmd": "npx -y some-server"},
          {"t_ms": 9.0, "what": "seen", "pid": 30, "ppid": 20, "cmd": "sh -c some-server"},
          {"t_ms": 9.0, "what": "seen", "pid": 40, "ppid": 30, "cmd": "node some-server"},
          {"t_ms": 50.0, "what": "sigint", "pid": 20},
          {"t_ms": 50.0, "what": "window-start", "pid": None},
          {"t_ms": 2050.0, "what": "window-end", "pid": None}]
    r = {"scenario": "sigint", "host_style": "node", "verdict": "killed", "passed": False,
         "events": ev, "survivors": [],
         "killed_at_window": [{"pid": p, "evidence": {"alive": True}} for p in (20, 30, 40)]}
    fix = remedy(r, cmd, [Transport(language="node", state="sdk")])
    assert fix is not None and fix.startswith("`npx` stays in between")
    r["killed_at_window"] = [{"pid": 20, "evidence": {"alive": True}}]  # the server itself
    fix = remedy(r, ["node", "server.js"], [Transport(language="node", state="sdk")])
    assert fix is not None and "stays in between" not in fix


def test_a_node_server_that_already_loads_mcp_tether_is_told_the_placement_not_the_line() -> None:
    """inspect found `mcp-tether` among its imports: the remedy is where the call goes."""
    argv = ["node", "late.mjs"]
    r = {"scenario": "close", "host_style": "node", "verdict": "terminated", "passed": False,
         "exit_ms": 2100, "events": [], "survivors": []}
    found = Transport(language="node", state="sdk", package="@modelcontextprotocol/sdk",
                      version="1.32.2", tether="late.mjs imports 'mcp-tether'")
    text = remedy(r, argv, [found]) or ""
    assert "already loads mcp-tether (late.mjs imports 'mcp-tether')" in text
    assert "before any other `await`" in text and "`tether(null, { onShutdown })`" in text
    assert "add one line" not in text and "npm install" not in text
    assert "late.mjs imports 'mcp-tether'" in (diagnose(r, argv, [found]) or "")
    plain = remedy(r, argv, [Transport(language="node", state="sdk")]) or ""
    assert "add one line" in plain and "already loads" not in plain


def _orphaned_child(**extra: object) -> dict[str, object]:
    """A `node server.mjs` whose process exited on EOF and whose `sleep` child outlived it."""
    ev = [{"t_ms": 0.0, "what": "spawn", "pid": 10, "role": "client", "cmd": "probe client"},
          {"t_ms": 5.0, "what": "spawn", "pid": 20, "role": "server", "cmd": "node server.mjs"},
          {"t_ms": 9.0, "what": "seen", "pid": 30, "ppid": 20, "cmd": "sleep 1000"},
          {"t_ms": 50.0, "what": "close-stdin", "pid": 20},
          {"t_ms": 60.0, "what": "exit", "pid": 20, "status": 0}]
    return {"scenario": "close", "host_style": "node", "verdict": "orphaned", "passed": False,
            "events": ev, "survivors": [{"pid": 30, "evidence": {"alive": True}}], **extra}


def test_a_node_line_that_ran_and_left_children_is_not_told_it_runs_too_late() -> None:
    """1. the package's shutdown record says tether() ran: the diagnosis says so, not
    "too late", and the remedy is the guard, not the placement; 2. no record, the server
    process itself exited (not of a signal) and its child was left: it ended by another
    path before the line took hold, the preload the fix, no word of updating a package;
    3. no record and the server itself survived: the placement (too late)."""
    argv = ["node", "server.mjs"]
    found = Transport(language="node", state="sdk", package="@modelcontextprotocol/sdk",
                      version="1.32.2", tether="server.mjs imports 'mcp-tether'")
    rec = {"version": 1, "pid": 20, "start": "1", "reason": "stdin-end", "status": 0,
           "children": {"found": 0, "ended_by": "none-found", "survivors": []}}
    r = _orphaned_child(tether=[rec])
    text, fix = diagnose(r, argv, [found]) or "", remedy(r, argv, [found]) or ""
    assert "Its tether() ran (shutdown on stdin-end" in text and "too late" not in text
    assert "launch the server behind the guard" in fix and "before any other" not in fix
    r = _orphaned_child(exit_status=0, signaled=False)
    text, fix = diagnose(r, argv, [found]) or "", remedy(r, argv, [found]) or ""
    assert "ended (status 0) without a shutdown through its tether()" in text
    assert "too late" not in text and "predates" not in text
    assert "NODE_OPTIONS=--import=mcp-tether/register" in fix and "update" not in fix.lower()
    r = _orphaned_child(survivors=[{"pid": 20, "evidence": {"alive": True}},
                                   {"pid": 30, "evidence": {"alive": True}}])
    assert "too late" in (diagnose(r, argv, [found]) or "")
    assert "before any other `await`" in (remedy(r, argv, [found]) or "")


NODE_MISSING = """node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module '/srv/dist/index.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v20.20.2
"""


def test_a_missing_entry_file_is_told_by_nodes_error_line_not_its_version_banner() -> None:
    """Node prints its version after an uncaught error: the line quoted is the error's."""
    from mcp_tether.probe.diagnose import start_failure

    r = {"verdict": "early-exit", "stderr_tail": NODE_MISSING}
    assert start_failure(r) == "Error: Cannot find module '/srv/dist/index.js'"
    r["stderr_tail"] = ("Traceback (most recent call last):\n  File x\n"
                        "ModuleNotFoundError: No module named 'y'\n")
    assert start_failure(r) == "ModuleNotFoundError: No module named 'y'"
    r["stderr_tail"] = "config missing\nNode.js v20.20.2\n"
    assert start_failure(r) == "config missing"


def test_a_server_that_never_starts_does_not_pass_devnull() -> None:
    """Every handshaking scenario exited during start-up: devnull's exit is no pass."""
    from mcp_tether.probe.api import never_started

    raw = [{"scenario": "close", "verdict": "early-exit", "passed": False},
           {"scenario": "sigterm", "verdict": "early-exit", "passed": False},
           {"scenario": "devnull", "verdict": "exited", "passed": True, "exit_status": 1}]
    never_started(raw)
    assert raw[2]["verdict"] == "early-exit" and raw[2]["passed"] is False
    raw = [{"scenario": "close", "verdict": "exited", "passed": True},
           {"scenario": "sigterm", "verdict": "early-exit", "passed": False},
           {"scenario": "devnull", "verdict": "exited", "passed": True, "exit_status": 0}]
    never_started(raw)
    assert raw[2]["verdict"] == "exited" and raw[2]["passed"] is True


def test_a_survivors_children_are_named_as_pids_not_as_a_count() -> None:
    """`children: 46` read as forty-six children: the evidence says `child pid 46`, and
    `child pids 46, 47` for more than one."""
    from mcp_tether.probe.describe import kept_alive

    def line(children: list[int]) -> str:
        return kept_alive({"pid": 45, "cmdline": "node server.js",
                           "evidence": {"alive": True, "children": children}})

    assert line([46]) == "pid 45 (node server.js) is alive: child pid 46"
    assert line([46, 47]) == "pid 45 (node server.js) is alive: child pids 46, 47"
    assert line([]) == "pid 45 (node server.js) is alive"


def _record(**extra: object) -> dict[str, object]:
    return {"version": 1, "pid": 20, "start": "500", "reason": "stdin-end", "status": 0,
            "children": {"found": 0, "ended_by": "none-found", "survivors": []},
            "armed": {"by": "tether()", "at": 100.0}, **extra}


def _kid(**evidence: object) -> dict[str, object]:
    return {"pid": 30, "cmdline": "sleep 901", "evidence": {"alive": True, **evidence}}


def test_each_cause_of_a_child_out_of_a_tethers_reach_is_read_from_its_evidence() -> None:
    """On the record a tether() wrote and the survivor's evidence: 1. the record's SIGKILL
    survivor: outlived SIGKILL; 2. its mark in the environment: not found; 3. the server's
    environment without the mark: started before tether() armed, even at the same clock
    tick; 4. a start earlier than the arming: before; 5. neither the server's environment
    nor the mark: an environment of its own; 6. the server's environment, started well
    after: an environment copied before the arming; 7. nothing readable: no guess."""
    from mcp_tether.probe.node_causes import BEFORE_ARMED, OWN_ENV, out_of_reach

    killed = _record(children={"found": 1, "ended_by": "none",
                               "survivors": [{"pid": 30, "start": "9"}]})
    assert out_of_reach(_kid(), killed)[0] == "outlived SIGKILL"
    assert out_of_reach(_kid(tether_marks=["20:500"]), _record())[0] == "not found"
    same_tick = _kid(tether_marks=[], server_env=True, started_at=100.0)
    assert out_of_reach(same_tick, _record())[0] == BEFORE_ARMED
    assert out_of_reach(_kid(started_at=99.5), _record())[0] == BEFORE_ARMED
    assert out_of_reach(_kid(tether_marks=[], server_env=False, started_at=105.0),
                        _record())[0] == OWN_ENV
    assert out_of_reach(_kid(tether_marks=[], server_env=True, started_at=105.0),
                        _record())[0].startswith("started with an environment copied")
    assert out_of_reach(_kid(), _record())[0] == "left its tree"
    assert out_of_reach(_kid(tether_marks=["7:1"], server_env=True),
                        _record())[0] == BEFORE_ARMED  # another tree's mark only


def test_a_signal_that_killed_the_server_before_its_tether_is_told_apart() -> None:
    """No record, the server loads mcp-tether and died of the signal sent to it: that
    signal; an exit code (the server's own exit of 143), a record, or no mcp-tether at
    all: not that."""
    from mcp_tether.probe.node_causes import before_tether

    ev = [{"t_ms": 5.0, "what": "spawn", "pid": 20, "role": "server", "cmd": "node s.mjs"},
          {"t_ms": 50.0, "what": "sigterm", "pid": 20}]
    r = {"events": ev, "exit_status": 143, "signaled": True}
    assert before_tether(r, "s.mjs imports 'mcp-tether'") == "SIGTERM"
    assert before_tether({**r, "signaled": None}, "x") == "SIGTERM"  # status 128+15 alone
    assert before_tether({**r, "signaled": False}, "x") is None
    assert before_tether({**r, "tether": [_record()]}, "x") is None
    assert before_tether(r, None) is None
    assert before_tether({**r, "exit_status": 130}, "x") is None


def test_the_headline_says_what_survived_a_server_process_that_exited() -> None:
    """A tethered server whose process exited on EOF: the first sentence names the child
    and its cause, never "does not exit"; the remedy is the preload for a child started
    before the arming, the environment for one started with its own."""
    argv = ["node", "server.mjs"]
    found = Transport(language="node", state="sdk", package="@modelcontextprotocol/sdk",
                      version="1.32.2", tether="server.mjs imports 'mcp-tether'")
    ev = [{"t_ms": 5.0, "what": "spawn", "pid": 20, "role": "server", "cmd": "node server.mjs"},
          {"t_ms": 9.0, "what": "seen", "pid": 30, "ppid": 1, "cmd": "sleep 901"},
          {"t_ms": 50.0, "what": "eof", "pid": 20},
          {"t_ms": 60.0, "what": "exit", "pid": 20, "status": 0}]
    r = {"scenario": "close", "host_style": "node", "verdict": "orphaned", "passed": False,
         "events": ev, "tether": [_record()],
         "survivors": [_kid(tether_marks=[], server_env=True, started_at=100.0)]}
    text = diagnose(r, argv, [found]) or ""
    assert explain_line(r | {"diagnosis": text}) == (
        "The server process exited on stdin EOF, but its child `sleep 901` (started before "
        "tether() armed) survived")
    assert "NODE_OPTIONS=--import=mcp-tether/register" in (remedy(r, argv, [found]) or "")
    r["survivors"] = [_kid(tether_marks=[], server_env=False, started_at=105.0)]
    assert "`env: { ...process.env, ... }`" in (remedy(r, argv, [found]) or "")
