"""The suite's passes stay balanced: tests/durations.json times every test file and no
other, recording it from a run keeps it so, and each backend gets the passes its files
need (tests/shards.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import shards


def test_durations_json_times_every_test_file_and_no_file_that_is_gone() -> None:
    """A test file added, renamed or deleted without its seconds would silently unbalance
    tests/run's passes (an untimed file weighs the median): fail, saying how to fix."""
    seconds, estimated = shards.load()
    assert seconds, f"{shards.DURATIONS} is missing or unreadable; refresh: {shards.REFRESH}"
    gone, untimed = shards.stale(seconds, shards.test_files())
    assert not (gone or untimed), (
        f"tests/durations.json is stale: it names {len(gone)} test file(s) that are gone "
        f"{gone} and misses {len(untimed)} that exist {untimed}. Refresh it from a whole "
        f"run: `{shards.REFRESH}`, then commit tests/durations.json (or, until then, add "
        f"each new file under \"seconds\" with a guess and list it under \"estimated\", "
        f"and drop the gone ones)."
    )
    assert set(estimated) <= set(seconds), sorted(set(estimated) - set(seconds))


def test_the_halves_get_whole_files_heaviest_first_to_the_lighter_half() -> None:
    seconds = {"a.py": 10.0, "b.py": 6.0, "c.py": 5.0, "d.py": 1.0}
    owner = shards.deal(seconds, seconds, 2)
    assert owner == {"a.py": 0, "b.py": 1, "c.py": 1, "d.py": 0}
    halves = [sum(s for f, s in seconds.items() if owner[f] == i) for i in (0, 1)]
    assert halves == [11.0, 11.0]


def test_a_file_without_seconds_weighs_the_median() -> None:
    owner = shards.deal(["a.py", "b.py", "c.py", "new.py"], {"a.py": 9.0, "b.py": 5.0,
                                                             "c.py": 1.0}, 2)
    # median 5: a (9) -> 0; b (5) -> 1; new (5) -> 1, the lighter (5 < 9); c (1) -> 0
    assert owner == {"a.py": 0, "b.py": 1, "new.py": 1, "c.py": 0}


def test_a_pass_times_each_file_as_the_sum_of_its_tests_phases() -> None:
    t = shards.Timings()
    for nodeid, s in [("tests/test_x.py::test_a", 0.5), ("tests/test_x.py::test_a", 2.0),
                      ("test_x.py::test_b[1-2]", 0.25), ("tests/test_y.py::T::test_c", 1.0)]:
        t.add(nodeid, s)
    assert t.seconds == {"test_x.py": 2.75, "test_y.py": 1.0}


def test_each_backend_gets_a_pass_and_the_rest_go_where_the_longest_pass_is() -> None:
    """1. every backend runs its own files (the portable and darwin-sim ones their
    subsets) in a pass of its own; 2. a further pass goes to the backend whose heaviest
    pass is the heaviest, while that splits it; 3. a pass that is one file alone is not
    split again."""
    files = ["test_a.py", "test_b.py", "test_c.py", "test_guard.py", "test_tether.py"]
    linux = {"test_a.py": 40.0, "test_b.py": 30.0, "test_c.py": 30.0, "test_guard.py": 20.0,
             "test_tether.py": 20.0}
    seconds = {"linux": linux, "portable": {"test_guard.py": 30.0, "test_tether.py": 10.0},
               "darwin-sim": {"test_guard.py": 25.0}}
    assert shards.plan(files, seconds, 1) == [
        ("linux", sorted(files)), ("portable", ["test_guard.py", "test_tether.py"]),
        ("darwin-sim", ["test_guard.py"])]
    five = shards.plan(files, seconds, 5)  # Linux 140 s > 40 s, then 80 s > 40 s
    assert [p[0] for p in five] == ["linux", "linux", "linux", "portable", "darwin-sim"]
    assert [p[1] for p in five[:3]] == [["test_a.py"], ["test_b.py", "test_guard.py"],
                                        ["test_c.py", "test_tether.py"]]
    # Four Linux passes: 40 s each at most (test_a.py alone). Then the longest pass is
    # 40 s, Linux's, and it cannot be split: more passes would not end any sooner.
    assert [p[0] for p in shards.plan(files, seconds, 50)] == \
        ["linux"] * 4 + ["portable", "darwin-sim"]


def test_a_backend_weighs_its_own_seconds_and_the_linux_ones_where_it_has_none(
    tmp_path: Path,
) -> None:
    out = tmp_path / "durations.json"
    out.write_text(shards.dump({"seconds": {"test_a.py": 5.0, "test_b.py": 2.0},
                                "backends": {"portable": {"test_a.py": 1.0}}}))
    assert shards.seconds_on("linux", out) == {"test_a.py": 5.0, "test_b.py": 2.0}
    assert shards.seconds_on("portable", out) == {"test_a.py": 1.0, "test_b.py": 2.0}


def test_recording_keeps_every_file_and_drops_the_gone_and_the_estimates(
    tmp_path: Path,
) -> None:
    """1. durations.json before: a gone file, an estimated one, an old time; 2. two Linux
    passes and a portable one write their parts; 3. the file now holds exactly the test
    files beside it, each recorded time rounded, a file no pass timed keeps its seconds
    as an estimate, and the portable pass's seconds stand apart."""
    for name in ("test_a.py", "test_b.py", "test_new.py", "test_quiet.py"):
        (tmp_path / name).write_text("")
    out = tmp_path / "durations.json"
    out.write_text(shards.dump({"how": "", "estimated": ["test_b.py"], "seconds": {
        "test_a.py": 50.0, "test_b.py": 3.0, "test_gone.py": 7.0, "test_quiet.py": 2.0}}))
    parts = []
    for i, (backend, seconds) in enumerate([
            ("linux", {"test_a.py": 12.34}), ("linux", {"test_b.py": 4.0, "test_new.py": 0.04}),
            ("portable", {"test_a.py": 6.66, "test_gone.py": 1.0})]):
        t = shards.Timings()
        t.seconds = seconds
        t.write(str(tmp_path / f"d{i}.json"), backend)
        parts.append(str(tmp_path / f"d{i}.json"))
    line = shards.record(out, parts)
    doc = json.loads(out.read_text())
    assert doc["seconds"] == {"test_a.py": 12.3, "test_b.py": 4.0, "test_new.py": 0.0,
                              "test_quiet.py": 2.0}
    assert doc["backends"] == {"portable": {"test_a.py": 6.7}}
    assert doc["estimated"] == ["test_quiet.py"]
    assert doc["how"] == shards.HOW and shards.REFRESH in doc["how"]
    assert "4 files" in line and "test_quiet.py" in line
    assert shards.load(out) == (doc["seconds"], ["test_quiet.py"])


def test_recording_refuses_when_a_pass_wrote_no_timings(tmp_path: Path) -> None:
    out = tmp_path / "durations.json"
    out.write_text("{}")
    shards.Timings().write(str(tmp_path / "d1.json"))
    with pytest.raises(ValueError, match="1 of 2 passes wrote no timings"):
        shards.record(out, [str(tmp_path / "d1.json"), str(tmp_path / "d2.json")])
    assert out.read_text() == "{}"
