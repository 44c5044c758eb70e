"""A survey is busy for what other work did, not for its own probes: the count on real
processes (a spinning child of ours is ours), the judgement on saved figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_tether import platform
from mcp_tether.survey import SurveyResult
from mcp_tether.survey.loadshare import OthersLoad, own_pids, sample
from mcp_tether.survey.render import to_markdown
from polling import until

linux_only = pytest.mark.skipif(platform.BACKEND != "linux",
                                reason="the portable backend does not count runnable tasks")


def test_the_share_is_the_machine_less_our_own_never_below_zero() -> None:
    assert sample(9, [3, None, 2]) == 4
    assert sample(1, [3]) == 0  # two readings a few ms apart: clamped, never negative
    assert sample(None, [1]) is None


@linux_only
def test_a_spinning_child_of_ours_is_counted_as_ours() -> None:
    """A child that spins is one of our processes and has a runnable thread (seen within
    a deadline); a sleeping one is ours too and has none."""
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    nap = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        mine = own_pids()
        assert spin.pid in mine and nap.pid in mine
        until(lambda: platform.backend.running_threads(spin.pid) == 1, timeout=30,
                   what="the spinning child seen runnable")
        until(lambda: platform.backend.running_threads(nap.pid) == 0, timeout=30,
                   what="the sleeping child seen not runnable")
        assert platform.backend.running_tasks() >= 1  # this test's own thread, at least
    finally:
        for p in (spin, nap):
            p.kill()
            p.wait()


@linux_only
def test_the_sampler_takes_samples_and_stops() -> None:
    with OthersLoad(interval=0.05) as others:
        until(lambda: len(others.samples) >= 3, "three samples", timeout=30)
    summary = others.summary()
    assert summary is not None and summary["samples"] >= 3
    assert summary["max"] >= summary["median"] >= 0
    assert others._thread is not None and not others._thread.is_alive()


def test_where_the_backend_cannot_count_there_is_no_figure(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform.backend, "running_tasks", lambda: None)
    with OthersLoad(interval=0.01) as others:
        pass
    assert others._thread is not None and not others._thread.is_alive()
    assert others.summary() is None


def _doc(load: float, others: dict[str, float] | None) -> dict[str, object]:
    doc: dict[str, object] = {
        "started": "2026-01-01T00:00:00Z", "seconds": 10, "jobs": 2, "cpus": 2,
        "pid_namespace": True, "load_average": {"start": 0.4, "end": load},
        "results": [{"label": "a", "spec": "npm:a", "loads": {"node": load}}]}
    if others is not None:
        doc["others_running"] = others
    return doc


def test_busy_is_judged_on_other_work_where_it_was_counted(tmp_path: Path) -> None:
    """1. The survey's own probes hold the load average at 12, other work at a median of
    0.5 runnable tasks: not busy, and the header gives both figures. 2. Other work at a
    median of 3 on 2 CPUs: busy, said in those terms. 3. Not counted (an older JSON):
    judged on the load average, and the line says the survey's own probes are in it.
    4. Surveys put together: busy when any one of them was; a part that did not count
    other work sends the whole back to the load average."""
    quiet = SurveyResult.from_dict(_doc(12.0, {"median": 0.5, "max": 4, "samples": 300}))
    assert not quiet.busy
    head = to_markdown(quiet).splitlines()[0]
    assert "load average 0.4 at the start and 12 at the end" in head
    assert "other work's runnable tasks (the survey's own not counted) median 0.5, max 4" \
        in head
    assert json.loads(json.dumps(quiet.to_dict()))["others_running"]["median"] == 0.5
    busy = SurveyResult.from_dict(_doc(12.0, {"median": 3, "max": 9, "samples": 300}))
    assert busy.busy and to_markdown(busy).startswith(
        "BUSY MACHINE: other work kept more tasks runnable than the 2 CPUs (median 3")
    old = SurveyResult.from_dict(_doc(12.0, None))
    assert old.busy and "the survey's own probes included" in to_markdown(old)
    both = SurveyResult.merge([quiet, busy], ["a"])
    assert both.busy
    assert not SurveyResult.merge([quiet, quiet], ["a"]).busy
    assert SurveyResult.merge([quiet, old], ["a"]).busy  # the old part: load average 12
