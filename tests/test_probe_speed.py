"""The probe waits what the run taught it, not its fixed allowances.

Not a timing target (those live in bench/): which allowance a scenario used, read from
its own timeline.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from mcp_tether.cli import main

pytestmark = pytest.mark.linux
MINI = str(Path(__file__).parent / "servers" / "mini.py")


def test_devnull_allows_the_start_up_a_slow_starting_server_showed_not_the_ready_timeout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A server that takes ~0.8 s to start (longer than a keeper's start-up share) and
    ignores EOF: the handshaking scenario's measured start-up still reaches the devnull
    keeper, whose window then opens after ~2x that, not after --ready-timeout (60 s).

    The two allowances are far apart (a start-up of seconds even on a loaded machine,
    against 60 s), so the assertion is which one was used, not how fast: less than half
    the ready-timeout."""
    server = f"sleep 0.8; exec {shlex.quote(sys.executable)} -S {shlex.quote(MINI)} --thread"
    main(["probe", "--json", "-s", "devnull,exit", "--ready-timeout", "60", "--window", "0.5",
          "--horizon", "0.3", "--", "sh", "-c", server])
    by = {r["scenario"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    assert by["exit"]["startup_ms"] >= 700, by["exit"]
    t = {e["what"]: e["t_ms"] for e in by["devnull"]["events"] if e["pid"] is None}
    allowance = (t["window-start"] - min(e["t_ms"] for e in by["devnull"]["events"])) / 1000
    assert allowance < 30, f"devnull waited {allowance:.1f} s: the start-up never reached it"
    assert by["devnull"]["verdict"] == "orphaned"
