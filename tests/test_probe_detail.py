"""`probe --detail` for one command: each scenario's timeline as text, the JSON's events."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mcp_tether.cli import main
from mcp_tether.report.timeline import timeline_lines

pytestmark = pytest.mark.linux
MINI = str(Path(__file__).parent / "servers" / "mini.py")
FAST = ["--window", "0.5", "--grace", "0.3", "--term-grace", "0.3"]


def test_detail_prints_each_scenarios_timeline_after_the_table_for_a_single_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A server that ignores EOF: close shows the SIGTERM the ladder sent and the exit it
    caused; exit shows the client's exit, the window, the horizon and the orphan."""
    argv = [sys.executable, "-S", MINI, "--thread"]
    main(["probe", "-s", "close,exit", *FAST, "--", *argv])
    assert "timelines" not in capsys.readouterr().out  # only with --detail
    assert main(["probe", "--detail", "-s", "close,exit", *FAST, "--", *argv]) == 1
    out = capsys.readouterr().out
    text = out[out.index("timelines (ms since the probe's client was forked):"):]
    close = text[text.index("close (node): terminated"):text.index("exit (node):")]
    exit_ = text[text.index("exit (node): orphaned"):]
    for part in (close, exit_):
        assert "client " in part and "spawned: python" in part
        assert "answered the handshake" in part
    assert "EOF on its stdin" in close and "SIGTERM sent to it" in close
    assert "exited (status 143: SIGTERM)" in close
    assert "the client exited" in exit_ and "window: the tree must be gone" in exit_
    assert "horizon: survivors watched" in exit_ and "orphaned" in exit_


def test_every_event_of_the_json_is_a_line_of_the_text_timeline_at_the_same_instant(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["probe", "--json", "-s", "close,exit,sigint", *FAST, "--",
          sys.executable, "-S", MINI, "--thread"])
    for r in json.loads(capsys.readouterr().out)["results"]:
        lines = timeline_lines(r)
        assert lines, r["scenario"]
        for e in r["events"]:
            if e["what"] in ("window-end", "horizon-end"):
                assert any(f"until {e['t_ms']:.1f} ms" in line for line in lines), e
                continue
            stamp = f"{e['t_ms']:>9.1f} ms"
            assert any(line.startswith("  " + stamp) for line in lines), (e, lines)


def test_the_timeline_says_how_eof_came_and_when_a_window_opened_on_a_gone_tree(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """devnull's EOF is /dev/null, not a client closing anything; a compliant server is
    gone before its window opens, and the text says so."""
    main(["probe", "--json", "-s", "devnull,close", *FAST, "--", sys.executable, "-S", MINI])
    by = {r["scenario"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    devnull, close = "\n".join(timeline_lines(by["devnull"])), "\n".join(timeline_lines(
        by["close"]))
    assert "EOF on its stdin (it was started with stdin at /dev/null)" in devnull
    assert "EOF on its stdin (the client closed it)" in close
    for r, text in ((by["devnull"], devnull), (by["close"], close)):
        # the phrase follows the numbers: the server's exit before the window opened
        t = {e["what"]: e["t_ms"] for e in r["events"] if e["pid"] is None}
        exits = [e["t_ms"] for e in r["events"] if e["what"] == "exit"]
        assert exits and r["verdict"] == "exited", r
        said = "the tree was already gone" in text
        assert said == (max(exits) <= t["window-start"]), (r["scenario"], text)


def test_a_wrapper_passing_on_a_death_by_sigsegv_is_named_in_the_timeline_and_the_cause(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A shell wrapper exits 128+N when its server died by signal N; here 139 after the
    server's EOF: the timeline names SIGSEGV, as the lingering cause does (one list)."""
    script = f"{sys.executable} -S {MINI}; exit 139"
    main(["probe", "--json", "-s", "close", *FAST, "--", "sh", "-c", script])
    (row,) = json.loads(capsys.readouterr().out)["results"]
    text = "\n".join(timeline_lines(row))
    assert "(status 139: SIGSEGV)" in text, text
