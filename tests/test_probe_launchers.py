"""The probe judges a launcher's tree, not its direct child: the child may only start
the process that answers.

The direct child's exit is an early exit only when nothing of its tree still holds the
client's stdio; otherwise the handshake is awaited from whoever answers and the verdict
is on the whole tree, every survivor named. Python host style: a Node host destroys the
stdio it gave a child when that child exits (docs/probe.md, "Host styles").
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcp_tether.probe.api import ProbeOptions, probe

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux: /proc")

LAUNCHER = str(Path(__file__).parent / "servers" / "launcher.py")
OPTS = ProbeOptions(host_style="python", scenarios=("exit", "crash"), window=1.0,
                    horizon=1.0)


def _by_scenario(argv: list[str], opts: ProbeOptions = OPTS) -> dict[str, object]:
    return {r.scenario: r for r in probe(argv, opts).results}


def test_a_double_forking_launcher_whose_server_ignores_eof_is_orphaned_not_early_exit() -> None:
    """1. the launcher exits at once; 2. its daemon answers; 3. EOF: the daemon is orphaned."""
    rows = _by_scenario([sys.executable, LAUNCHER, "double-fork", "--ignore-eof"])
    for name in ("exit", "crash"):
        r = rows[name]
        assert r.verdict == "orphaned", (name, r.verdict, r.detail)  # type: ignore[attr-defined]
        named = [s.cmdline for s in r.survivors]  # type: ignore[attr-defined]
        assert any("launcher.py serve" in c for c in named), named


def test_a_double_forking_launcher_whose_server_exits_at_eof_is_judged_on_its_server() -> None:
    """The same launcher with a server that exits at EOF: gone in the window at EOF; it
    still answers when idle; a host's SIGTERM to its (gone) child cannot end it."""
    rows = _by_scenario([sys.executable, LAUNCHER, "double-fork"],
                        ProbeOptions(host_style="python", idle=0.5, window=1.0, horizon=0.5,
                                     scenarios=("exit", "close", "idle", "sigterm")))
    assert {n: r.verdict for n, r in rows.items()} == {  # type: ignore[attr-defined]
        "exit": "exited", "close": "exited", "idle": "alive", "sigterm": "orphaned"}


def test_a_server_that_hands_its_stdout_to_a_helper_is_judged_on_the_helper() -> None:
    """1. the server forks a helper (own session) that keeps the stdio, then exits;
    2. the helper ignores EOF: the verdict is on it, and it is named as the survivor."""
    rows = _by_scenario([sys.executable, LAUNCHER, "hand-stdout", "--ignore-eof"])
    for name in ("exit", "crash"):
        r = rows[name]
        assert r.verdict == "orphaned", (name, r.verdict, r.detail)  # type: ignore[attr-defined]
        pids = [s.pid for s in r.survivors]  # type: ignore[attr-defined]
        assert len(pids) == 1, r.survivors  # type: ignore[attr-defined]
        assert "launcher.py hand-stdout" in r.survivors[0].cmdline  # type: ignore[attr-defined]
        assert f"pid {pids[0]}" in r.detail  # type: ignore[attr-defined]


def test_an_early_exit_names_what_it_left_running() -> None:
    """A launcher that leaves a daemon with no hold on the stdio is an early exit, and
    the daemon is named, not removed silently."""
    code = ("import os,sys,time\n"
            "if os.fork()==0:\n"
            "  os.setsid(); n=os.open(os.devnull,os.O_RDWR)\n"
            "  [os.dup2(n,f) for f in (0,1)]; time.sleep(60)\n"
            "os._exit(0)\n")
    r = probe([sys.executable, "-c", code],
              ProbeOptions(host_style="python", scenarios=("exit",))).results[0]
    assert r.verdict == "early-exit", r.detail
    assert len(r.survivors) == 1 and f"pid {r.survivors[0].pid}" in r.detail, r.detail


def test_the_python_style_sigterm_reaches_a_wrapped_server_through_its_group() -> None:
    """1. `sh -c 'server; true'` (a wrapper that passes no signal on), python style;
    2. sigterm goes to the group, as the Python SDK's killpg does: sh and the server end;
    3. sigint, sent from outside to the wrapper's pid only, never reaches the server."""
    argv = ["sh", "-c", f"{sys.executable} {LAUNCHER} serve --ignore-eof; true"]
    rows = _by_scenario(argv, ProbeOptions(host_style="python", window=1.0, horizon=0.5,
                                           scenarios=("sigterm", "sigint")))
    term, intr = rows["sigterm"], rows["sigint"]
    assert term.verdict == "exited", (term.verdict, term.detail)  # type: ignore[attr-defined]
    assert intr.verdict != "exited", intr.detail  # type: ignore[attr-defined]


def test_a_sigterm_to_the_spawned_pid_alone_leaves_a_wrapped_server_in_both_styles() -> None:
    """1. `sh -c 'server; true'` (a wrapper that passes no signal on); 2. python style:
    the group's SIGTERM (`sigterm`) ends the server, the spawned pid's alone
    (`sigterm-pid`) leaves it, named; 3. node style: `sigterm-pid` leaves it too; 4. a
    server spawned directly dies of it in both styles."""
    argv = ["sh", "-c", f"{sys.executable} {LAUNCHER} serve --ignore-eof; true"]
    for style in ("python", "node"):
        rows = _by_scenario(argv, ProbeOptions(host_style=style, window=1.0, horizon=0.5,
                                               scenarios=("sigterm", "sigterm-pid")))
        pid = rows["sigterm-pid"]
        assert pid.verdict in ("orphaned", "killed"), \
            (style, pid.verdict, pid.detail)  # type: ignore[attr-defined]
        assert any("launcher.py serve" in s.cmdline
                   for s in pid.survivors), pid.detail  # type: ignore[attr-defined]
        if style == "python":
            assert rows["sigterm"].verdict == "exited"  # type: ignore[attr-defined]
        direct = _by_scenario([sys.executable, LAUNCHER, "serve", "--ignore-eof"],
                              ProbeOptions(host_style=style, window=1.0, horizon=0.5,
                                           scenarios=("sigterm-pid",)))["sigterm-pid"]
        assert direct.verdict == "exited", (style, direct.detail)  # type: ignore[attr-defined]
