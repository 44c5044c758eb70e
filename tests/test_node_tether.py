"""The Node package `mcp-tether` (node/) on real servers of both TypeScript SDK lines.

Fixture servers (tests/node/server.mjs) keep their event loop alive as real ones do (a
timer, a socket, a child process, a cleanup hook that never settles; McpServer and the
low-level Server; ESM and CommonJS); with the one
`tether(...)` line they pass the probe at `robust`, directly, behind `sh -c` and behind
`npx`; without it they fail. The hooks prove they ran by appending to a file. The package's
own `node --test` suite runs here too.
"""

from __future__ import annotations

import dataclasses
import os
import select
import subprocess
from pathlib import Path

import pytest

import node_tap
import node_tether_env
from mcp_tether.lab import node_env
from mcp_tether.probe import ProbeOptions, ProbeReport, probe
from mcp_tether.probe.node_causes import BEFORE_ARMED, COPIED_ENV
from mcp_tether.probe.spec import ROBUST
from polling import until

pytestmark = [
    pytest.mark.skipif(node_env.missing_tools() is not None, reason="needs node and npm"),
    pytest.mark.slow,
]
REPO = Path(__file__).resolve().parents[1]
# Behind a wrapper, SIGINT stops at the wrapper: a non-interactive `sh -c '...; true'`
# that gets SIGINT waits for its foreground child without passing the signal on (and
# npm exec hands SIGINT to the `sh -c` it runs a bin in, the same). No line in the server
# can change that; every other robust scenario runs there (SIGTERM kills the shell, and
# the server sees its launcher go).
NOT_SIGINT = ("close", "exit", "crash", "devnull", "idle", "half-close", "sigterm",
              "inherited-writer")


@pytest.fixture(scope="module")
def fx() -> Path:
    return node_tether_env.ensure()


def _probe(fx: Path, tmp_path: Path, cmd: list[str], scenarios: tuple[str, ...] | None = None,
           window: float | None = None, env: dict[str, str] | None = None,
           ) -> tuple[ProbeReport, list[str]]:
    hooks = tmp_path / "hooks.txt"
    # ready_timeout 60: npx starts npm first, seconds of CPU on a loaded machine.
    opts = ProbeOptions(scenarios=scenarios, cwd=str(fx), ready_timeout=60,
                        env={**(env or {}), "TETHER_HOOK_FILE": str(hooks)})
    if window is not None:
        opts = dataclasses.replace(opts, window=window)
    report = probe(cmd, opts, level=ROBUST)
    lines = hooks.read_text().splitlines() if hooks.exists() else []
    return report, lines


def _pids(lines: list[str], word: str) -> dict[int, str]:
    """pid -> the line's first words, for lines starting with `word`."""
    out = {}
    for ln in lines:
        if ln.startswith(word):
            out[int(ln.rsplit("pid=", 1)[1])] = ln.rsplit(" pid=", 1)[0]
    return out


EXPECTED_STATUS = {"close": 0, "half-close": 0, "sigterm": 143, "sigint": 130,
                   "inherited-writer": 0}


@pytest.mark.parametrize(("argv", "scenarios"), [
    (["node", "server.mjs", "v1", "timer", "tether", "low-level"], None),
    (["node", "server.mjs", "v2", "socket", "tether"], None),
    (["node", "server.mjs", "v2", "timer", "hooks-only", "low-level"], None),
    (["sh", "-c", "node server.mjs v1 child tether; true"], NOT_SIGINT),
    (["npx", "--offline", "tether-fixture", "v2", "stuck-hook", "tether"], NOT_SIGINT),
    (["node", "server.cjs", "tether"], ("close", "sigterm")),
], ids=["v1-lowlevel-timer", "v2-socket", "v2-lowlevel-hooks-only", "v1-child-sh-c",
        "v2-stuck-hook-npx", "v1-cjs"])
def test_a_tethered_server_passes_robust_and_its_hooks_ran_in_every_trigger(
        fx: Path, tmp_path: Path, argv: list[str], scenarios: tuple[str, ...] | None) -> None:
    """1. probe at robust; 2. every scenario passes; 3. every server that got ready ran its
    hook; 4. a direct server's exit status is 0 for EOF/host death, 128+N for signals."""
    report, lines = _probe(fx, tmp_path, argv, scenarios)
    bad = [(r.scenario, r.verdict, r.diagnosis or r.detail or r.stderr_tail[-300:] or
            {k: v for k, v in (r.record or {}).items() if k not in ("events",)})
           for r in report.results if not r.passed]
    assert report.passed and not bad, bad
    assert scenarios is not None or report.meets == ROBUST
    # The idle scenario's server is still serving when the probe ends it: not a trigger.
    idle = {e.get("pid") for r in report.results if r.scenario == "idle"
            for e in (r.record or {}).get("events", [])}
    ready, hooked = _pids(lines, "ready"), _pids(lines, "hook")
    assert ready and set(ready) - idle <= set(hooked), (ready, hooked)
    reasons = set(hooked.values())
    assert "hook reason=stdin-end" in reasons
    if argv[0] == "node":
        assert {"hook reason=signal:SIGTERM", "hook reason=host-gone"} <= reasons or \
            scenarios is not None
        for r in report.results:
            if r.scenario in EXPECTED_STATUS:
                assert r.exit_status == EXPECTED_STATUS[r.scenario], (r.scenario, r.exit_status)


@pytest.mark.parametrize("argv", [
    ["node", "server.mjs", "v1", "timer", "plain"],
    ["node", "server.mjs", "v2", "socket", "plain"],
    ["sh", "-c", "node server.mjs v2 child plain; true"],
    ["npx", "--offline", "tether-fixture", "v1", "stuck-hook", "plain"],
], ids=["v1-timer", "v2-socket", "v2-child-sh-c", "v1-stuck-hook-npx"])
def test_the_same_server_without_the_line_fails(fx: Path, tmp_path: Path,
                                                argv: list[str]) -> None:
    """Without tether(...) EOF does not end the server (v1: no listener; v2: a handle)."""
    report, _ = _probe(fx, tmp_path, argv, ("close",))
    (r,) = report.results
    assert not r.passed and r.verdict in ("terminated", "killed", "orphaned"), r.verdict
    # The fixture imports the package without calling it: the remedy is where to call it.
    assert "`tether(server);`" in r.remedy


PRELOAD = {"NODE_OPTIONS": "--import=mcp-tether/register"}
SLEEP_FORMS = {
    "line": (["server.mjs", "{line}", "sleep", "tether"], None),
    "preload-no-line": (["server.mjs", "{line}", "sleep", "plain"], PRELOAD),
    "preload-late-line": (["late.mjs", "{line}", "0", "sleep"], PRELOAD),
}


def _sleeps(r: object) -> list[dict[str, object]]:
    """The fixture's `sleep` children among what outlived the window."""
    return [s for s in [*(r.record or {}).get("survivors", []),
                        *(r.record or {}).get("killed_at_window", [])]
            if "sleep" in str(s.get("cmdline", ""))]


@pytest.mark.parametrize("line", ["v1", "v2"])
@pytest.mark.parametrize("form", list(SLEEP_FORMS))
def test_a_server_with_a_timer_and_a_forgotten_sleep_child_passes_robust_in_each_form(
        fx: Path, tmp_path: Path, form: str, line: str) -> None:
    """A server with a 100 ms timer and a `spawn("sleep", ...)` child nothing in it ends:
    1. `tether(server)` right after connect, 2. no line under NODE_OPTIONS=--import=
    mcp-tether/register, 3. a late `tether()` (after a dynamic import) under the same
    preload; probe at robust: every scenario passes, no sleep child outlives a trigger."""
    argv, env = SLEEP_FORMS[form]
    report, _ = _probe(fx, tmp_path, ["node", *(a.format(line=line) for a in argv)], env=env)
    bad = [(r.scenario, r.verdict, r.diagnosis) for r in report.results if not r.passed]
    assert report.passed and not bad, bad
    assert report.meets == ROBUST
    assert not [s for r in report.results if r.scenario != "idle" for s in _sleeps(r)]


def test_without_the_preload_an_early_signal_orphans_the_late_servers_child(
        fx: Path, tmp_path: Path) -> None:
    """The control of the preload: the same late server (its tether() after a slow step)
    without it dies of SIGINT and SIGTERM by Node's default, before its tether() exists,
    and its sleep child is left; the probe names that cause (the signal came before
    tether(): a death by the signal itself, no shutdown record), with the preload as the
    fix and no word of updating a package that is current; with the preload, the same
    server passes."""
    argv = ["node", "late.mjs", "v1", "600000", "sleep"]
    report, _ = _probe(fx, tmp_path, argv, ("sigint", "sigterm"), env=PRELOAD)
    assert report.passed, [(r.verdict, r.diagnosis) for r in report.results]
    report, _ = _probe(fx, tmp_path, argv, ("sigint", "sigterm"))
    for r in report.results:
        sig = r.scenario.upper()
        assert not r.passed and _sleeps(r), (r.verdict, r.diagnosis)
        assert (r.record or {})["signaled"] is True, r.scenario
        assert r.diagnosis.startswith(f"The {sig} killed the server process before its "
                                      "tether() ran, and its child `sleep 1000` survived."), \
            r.diagnosis
        assert f"the {sig} came before tether()" in r.diagnosis, r.diagnosis
        assert "NODE_OPTIONS=--import=mcp-tether/register" in r.remedy, r.remedy
        assert "update" not in r.remedy.lower() and "predates" not in r.diagnosis, r.remedy


@pytest.mark.parametrize("line", ["v1", "v2"])
def test_a_child_started_before_tether_armed_is_named_with_the_preload_as_its_fix(
        fx: Path, tmp_path: Path, line: str) -> None:
    """A server that starts a helper which daemonizes (`sh -c 'sleep 901 &'`) before
    connect, then calls `tether(server)` right after connect, as the docs say:
    1. close and sigterm: the server process exits through its tether(), the daemon
       (started before the tether armed, so without its mark) survives; the headline
       says so, not "does not exit"; the remedy is the preload, never an update;
    2. the same server under NODE_OPTIONS=--import=mcp-tether/register passes both (the
       daemon carries the mark, and the shutdown finds it)."""
    argv = ["node", "server.mjs", line, "daemon", "tether"]
    report, _ = _probe(fx, tmp_path, argv, ("close", "sigterm"))
    for r in report.results:
        raw = (r.record or {})
        assert r.verdict == "orphaned" and raw["tether"], (r.scenario, r.verdict, r.diagnosis)
        trigger = "stdin EOF" if r.scenario == "close" else "SIGTERM"
        # `sh` was started before the tether armed; the `sleep` it forks usually is too,
        # but on a loaded machine it may start after the arming, with the environment
        # `sh` copied before it: both causes are true, and both have the preload as fix.
        assert any(r.diagnosis.startswith(
            f"The server process exited on {trigger}, but its child `sleep 901` "
            f"({cause}) survived.") for cause in (BEFORE_ARMED, COPIED_ENV)), r.diagnosis
        assert "does not exit" not in r.diagnosis.lower(), r.diagnosis
        assert "NODE_OPTIONS=--import=mcp-tether/register" in r.remedy, r.remedy
        assert "update" not in r.remedy.lower(), r.remedy
    report, _ = _probe(fx, tmp_path, argv, ("close", "sigterm"), env=PRELOAD)
    assert report.passed, [(r.verdict, r.diagnosis) for r in report.results]


def test_a_child_started_with_an_environment_of_its_own_is_named_as_out_of_reach(
        fx: Path, tmp_path: Path) -> None:
    """A current tether() that ran and ended the server process, but not a child started
    after it with an environment of its own (no mark) that daemonized: the probe names
    that child and why (its environment), and the fix is to pass the environment on."""
    report, _ = _probe(fx, tmp_path, ["node", "server.mjs", "v1", "own-env", "tether"],
                       ("close",))
    (r,) = report.results
    assert r.verdict == "orphaned" and (r.record or {})["tether"], r.diagnosis
    assert r.diagnosis.startswith(
        "The server process exited on stdin EOF, but its child `sleep 902` (started with an "
        "environment of its own) survived."), \
        r.diagnosis
    assert "process.env" in r.remedy and "update" not in r.remedy.lower(), r.remedy


def _server_pid(r: object) -> int | None:
    return next((e["pid"] for e in (r.record or {}).get("events", [])
                 if e.get("what") == "spawn" and e.get("role") == "server"), None)


# The hook's reason in each EOF scenario: where the client dies (exit, crash) the host
# watch may see it first, when tether() was attached before that.
EOF_REASONS = {"close": {"stdin-end"}, "devnull": {"stdin-end"}, "half-close": {"stdin-end"},
               "exit": {"stdin-end", "host-gone"}, "crash": {"stdin-end", "host-gone"}}


@pytest.mark.parametrize("line", ["v1", "v2"])
def test_a_tether_called_after_a_dynamic_import_still_sees_an_eof_that_came_first(
        fx: Path, tmp_path: Path, line: str) -> None:
    """1. probe at robust a server that awaits `import("mcp-tether")` after connect
    (tests/node/late.mjs); 2. every scenario passes (the host's death only if tether()
    was attached before it: a host that died earlier is not seen, and the remedy says
    so); 3. every EOF scenario's server ran its hook for EOF, devnull's (stdin at EOF
    from the start) included; every server that attached ran its hook."""
    report, lines = _probe(fx, tmp_path, ["node", "late.mjs", line])
    hooked = _pids(lines, "hook")
    bad, unhooked = [], set()  # unhooked: servers not expected to run their hook
    for r in report.results:
        if r.scenario == "idle":
            unhooked.add(_server_pid(r))  # still serving when the probe ends it
        if r.passed:
            continue
        if r.scenario == "inherited-writer" and "already loads mcp-tether" in r.remedy:
            unhooked.add(_server_pid(r))  # the client died before tether() ran
            continue
        bad.append((r.scenario, r.verdict, r.diagnosis or r.detail))
    assert not bad, bad
    for r in report.results:
        if r.scenario in EOF_REASONS:
            got = hooked.get(_server_pid(r) or -1, "no hook").removeprefix("hook reason=")
            assert got in EOF_REASONS[r.scenario], (r.scenario, got)
    ready = _pids(lines, "ready")
    assert set(ready) - unhooked <= set(hooked), (ready, hooked)
    print(f"late {line}: " + ", ".join(f"{r.scenario} {r.verdict}" for r in report.results))


def test_a_server_whose_tether_comes_too_late_is_told_the_placement_not_to_add_it(
        fx: Path, tmp_path: Path) -> None:
    """A server that awaits a slow step (10 min) before its tether(): EOF ends nothing,
    and the remedy names the placement of the line it has, not "add one line"."""
    report, _ = _probe(fx, tmp_path, ["node", "late.mjs", "v1", "600000"], ("close",))
    (r,) = report.results
    assert not r.passed, r.verdict
    assert "late.mjs imports 'mcp-tether'" in r.diagnosis
    assert "already loads mcp-tether" in r.remedy and "before any other `await`" in r.remedy
    assert "add one line" not in r.remedy and "npm install" not in r.remedy


@pytest.mark.parametrize("launch", ["direct", "npx"])
def test_a_sigkilled_host_with_a_leaked_stdin_writer_ends_the_server_within_1s(
        fx: Path, tmp_path: Path, launch: str) -> None:
    """The probe's inherited-writer scenario with a 1 s window: the host dies, a forked
    helper keeps stdin's writer, EOF never comes; the host watch ends the tree."""
    cmd = (["node", "server.mjs", "v1", "socket", "tether"] if launch == "direct"
           else ["npx", "--offline", "tether-fixture", "v1", "socket", "tether"])
    report, lines = _probe(fx, tmp_path, cmd, ("inherited-writer",), window=1.0)
    (r,) = report.results
    assert r.passed and r.verdict == "exited", (r.verdict, r.diagnosis)
    assert "hook reason=host-gone" in _pids(lines, "hook").values()


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        rest = fh.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])  # utime, stime (fields 14, 15)


def _wait4(pid: int, what: str, timeout: float) -> tuple[int, float]:
    """(status, CPU seconds of the whole life) once our child `pid` exits; an
    AssertionError ("timed out waiting for <what>") if it has not within `timeout`."""

    def reaped() -> tuple[int, float] | None:
        got, status, ru = os.wait4(pid, os.WNOHANG)
        return (status, ru.ru_utime + ru.ru_stime) if got == pid else None

    return until(reaped, what, timeout)


@pytest.mark.parametrize("mode", ["tether", "plain"])
def test_a_server_writing_to_a_vanished_client_exits_instead_of_spinning(
        fx: Path, tmp_path: Path, mode: str) -> None:
    """1. a server writes a notification every 20 ms and logs uncaught errors to stderr;
    2. its client's readers vanish (stdin's writer leaked, so no EOF); 3. tethered: it
    exits with status 0, its shutdown started by the first failed write (the hook's
    reason, stdout-error:EPIPE: no loop of failed writes before it); plain: it lives on,
    burning CPU."""
    hooks = tmp_path / "hooks.txt"
    proc = subprocess.Popen(
        ["node", "server.mjs", "v1", "writer", mode], cwd=fx,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "TETHER_HOOK_FILE": str(hooks)})
    try:
        def ready() -> bool:
            if hooks.exists() and "ready" in hooks.read_text():
                return True
            assert proc.poll() is None, f"the server exited {proc.returncode}, never ready"
            return False

        until(ready, f"the server's 'ready' line in {hooks}", 30)
        assert proc.stdout is not None
        assert select.select([proc.stdout], [], [], 10)[0]  # it is writing
        before = _cpu_ticks(proc.pid) / os.sysconf("SC_CLK_TCK")
        # The readers go; stdin's writer stays (a leaked copy): no EOF, only EPIPE tells.
        for f in (proc.stdout, proc.stderr):
            assert f is not None
            f.close()
        if mode == "tether":
            status, cpu = _wait4(proc.pid, "the tethered server to exit", 30)
            proc.returncode = os.waitstatus_to_exitcode(status)
            assert proc.returncode == 0
            print(f"{(cpu - before) * 1000:.0f} ms of CPU after the client died")
            assert "hook reason=stdout-error:EPIPE" in hooks.read_text()
        else:
            # The control: the same server without the line burns CPU while it lives. Polled
            # on its CPU ticks (a loaded machine gives it less per second), not on a clock.
            spent = 0.0

            def spun() -> bool:
                nonlocal spent
                assert proc.poll() is None, "the plain server exited by itself"
                spent = _cpu_ticks(proc.pid) / os.sysconf("SC_CLK_TCK") - before
                return spent > 0.100

            try:
                until(spun, "the orphan to spin past 100 ms of CPU", 30)
            except AssertionError as e:
                raise AssertionError(f"{e}: it used {spent * 1000:.0f} ms") from None
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        assert proc.stdin is not None
        proc.stdin.close()


def test_the_packages_own_node_tests_pass() -> None:
    """`node --test` in node/: unit and process tests of the package itself (the one line,
    the tree's end, the preload)."""
    out = subprocess.run(["node", "--test", "test/tether.test.mjs", "test/tether-late.test.mjs",
                          "test/register.test.mjs"],
                         cwd=REPO / "node",
                         capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, node_tap.report(out)


def test_npm_pack_ships_the_package_and_nothing_else(tmp_path: Path) -> None:
    """The tarball holds the entry points, the types, every lib/ module, the README and the
    LICENSE, and nothing else (no tests)."""
    out = subprocess.run(["npm", "pack", "--dry-run", "--json"], cwd=REPO / "node",
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                         env={**os.environ, "npm_config_cache": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    import json

    files = {f["path"] for f in json.loads(out.stdout)[0]["files"]}
    pkg = REPO / "node"
    code = {str(p.relative_to(pkg)) for p in pkg.rglob("*")
            if p.suffix in (".cjs", ".mjs", ".ts", ".mts")
            and p.relative_to(pkg).parts[0] != "test"}
    assert {"lib/platform/platform.cjs", "lib/tether/arm.cjs", "lib/client/launch.cjs"} <= code
    assert code | {"package.json", "README.md", "LICENSE"} == files


def test_inspect_gives_the_one_line_fix_for_both_installed_sdk_lines(fx: Path) -> None:
    """`mcp-tether inspect node_modules`: 1.x and 2.x both carry the package's fix."""
    from mcp_tether.inspect import inspect_path

    sdks = {s.package: s for s in inspect_path(str(fx / "node_modules"))}
    for name in ("@modelcontextprotocol/sdk", "@modelcontextprotocol/server"):
        assert "`tether(server);`" in (sdks[name].remedy or ""), name
