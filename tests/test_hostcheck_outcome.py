"""What the host check makes of what its keeper saw (`hostcheck/outcome.py`): pure
functions of the keeper's `State` and the recorders' events files, no process."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_tether.hostcheck.outcome import State, named_left, preempted, recorded_events


def _events(folder: Path, *events: dict[str, object]) -> str:
    folder.mkdir()
    lines = [json.dumps(e) for e in events]
    (folder / "server.jsonl").write_text("\n".join([*lines[:1], "not json", *lines[1:]]) + "\n")
    (folder / "events.fifo").write_text("ignored: not an events file\n")
    return str(folder)


def test_a_sign_of_an_ending_before_the_trigger_makes_the_verdict_preempted(
    tmp_path: Path,
) -> None:
    """1. The recorder saw its stdin close before the trigger: `preempted`, the verdict it
    would have had kept as `after`, the detail says who saw what when; 2. the same sign
    after the trigger, or a verdict that judges nothing, is left as it was."""
    s = State(t0=10.0, action_at=10.5, triggered=True)
    before = _events(tmp_path / "a", {"what": "stdin-eof", "t": 10.25, "role": "server"},
                     {"what": "start", "t": 10.1, "role": "server"})
    out = preempted({"verdict": "clean", "detail": "d"}, s, before)
    assert out["verdict"] == "preempted" and out["after"] == "clean"
    assert "the server saw stdin-eof at 250 ms, the trigger came at 500.0 ms" in out["detail"]
    after = _events(tmp_path / "b", {"what": "stdin-eof", "t": 10.75, "role": "server"})
    assert preempted({"verdict": "clean", "detail": "d"}, s, after)["verdict"] == "clean"
    assert preempted({"verdict": "error", "detail": "d"}, s, before)["verdict"] == "error"
    assert [e["what"] for e in recorded_events(before)] == ["start", "stdin-eof"]


def test_a_verdicts_detail_names_what_else_was_left_and_the_layers() -> None:
    """1. Other processes left are named, a layer and the host's own said so; 2. the layers
    between the host and its server follow; 3. an error names no leftovers."""
    s = State(layers=[{"pid": 3, "cmdline": "sh -c server"}], host_tree={3, 4})
    others = [{"pid": 3, "cmdline": "sh -c server"}, {"pid": 4, "cmdline": "helper"},
              {"pid": 5, "cmdline": "stray"}]
    assert named_left(s, others, "server-left") == (
        "; also left: pid 3 (sh -c server), a layer the host put before its server, "
        "pid 4 (helper), the host's own, pid 5 (stray)"
        "; between the host and its server: pid 3 (sh -c server)")
    layers = "; between the host and its server: pid 3 (sh -c server)"
    assert named_left(s, others, "error") == layers


def test_a_clean_rows_layers_say_whether_they_exited_by_themselves_or_were_left() -> None:
    """A layer (the guard) that exited after the host reads `exited by itself ... N ms
    after the host`, never "left"; one still running after the grace reads "also left";
    a live host's own process "still running beside the live host"."""
    s = State(layers=[{"pid": 153, "cmdline": "mcp-tether run -- srv"}], host_tree={153, 9})
    guard = {"pid": 153, "cmdline": "mcp-tether run -- srv", "exit_ms": 180.0}
    assert named_left(s, [guard], "clean") == (
        "; exited by itself after the host: pid 153 (mcp-tether run -- srv), a layer the "
        "host put before its server, 180 ms after the host"
        "; between the host and its server: pid 153 (mcp-tether run -- srv)")
    stuck = {**guard, "exit_ms": None}
    assert "; also left: pid 153 (mcp-tether run -- srv), a layer" in \
        named_left(s, [stuck], "clean")
    own = {"pid": 9, "cmdline": "helper", "exit_ms": None, "host_lives": True}
    assert named_left(s, [own], "clean").startswith(
        "; still running beside the live host: pid 9 (helper), the host's own")
