"""`probe --html` / `--markdown`: the picture shows the numbers the JSON holds."""

from __future__ import annotations

import json
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from mcp_tether.cli import main

MINI = [sys.executable, str(Path(__file__).parent / "servers" / "mini.py")]


class Marks(HTMLParser):
    """Per card (data-scenario): the marks' (what, pid, t_ms) and the shaded spans."""

    def __init__(self) -> None:
        super().__init__()
        self.cards: dict[str, dict[str, Any]] = {}
        self.card: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "div" and a.get("data-scenario"):
            self.card = self.cards.setdefault(
                str(a["data-scenario"]), {"verdict": a.get("data-verdict"), "marks": set(),
                                          "spans": {}, "orphans": set()})
        elif self.card is not None and tag == "g" and a.get("class") == "orphan":
            self.card["orphans"].add(int(str(a["data-pid"])))
        elif self.card is not None and tag == "g" and a.get("class") == "mark":
            self.card["marks"].add((a["data-what"], int(str(a["data-pid"])),
                                    float(str(a["data-t-ms"]))))
        elif self.card is not None and tag == "rect" and a.get("data-what"):
            self.card["spans"][a["data-what"]] = (float(str(a["data-t-ms"])),
                                                 float(str(a["data-end-ms"])))


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, str]:
    """1. probe a server that orphans on EOF (a thread) in three scenarios, with --json,
    --html and --markdown; 2. keep all three renderings."""
    out = tmp_path_factory.mktemp("html")
    html, md = out / "t.html", out / "t.md"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["probe", "--json", "--host-style", "python", "-s", "close,exit,sigterm",
                     "--window", "1", "--html", str(html), "--markdown", str(md), "--",
                     *MINI, "--thread"])
    assert code == 1
    return json.loads(buf.getvalue()), html.read_text(), md.read_text()


def test_every_event_of_the_json_is_a_mark_at_the_same_instant(
    probed: tuple[dict[str, Any], str, str],
) -> None:
    payload, page, _ = probed
    parser = Marks()
    parser.feed(page)
    assert set(parser.cards) == {r["scenario"] for r in payload["results"]}
    for r in payload["results"]:
        card = parser.cards[r["scenario"]]
        want = {(e["what"], e["pid"], float(e["t_ms"])) for e in r["events"]
                if e["pid"] is not None}
        assert want, "the keeper records a timeline"
        assert card["marks"] == want
        assert card["verdict"] == r["verdict"]
        span = {e["what"]: e["t_ms"] for e in r["events"] if e["pid"] is None}
        assert card["spans"]["window-start"] == (span["window-start"], span["window-end"])


def test_a_survivor_alive_at_the_horizons_end_is_drawn_as_an_orphan_and_no_one_else(
    probed: tuple[dict[str, Any], str, str],
) -> None:
    """The clean-up that ends an orphan comes after the timeline: its lane ends at the
    horizon with the orphan cross, the horizon shaded; passing scenarios have none."""
    payload, page, _ = probed
    parser = Marks()
    parser.feed(page)
    for r in payload["results"]:
        card = parser.cards[r["scenario"]]
        if r["verdict"] == "orphaned":
            assert card["orphans"] == {s["pid"] for s in r["survivors"]}
            span = {e["what"]: e["t_ms"] for e in r["events"] if e["pid"] is None}
            assert card["spans"]["horizon-start"] == (span["horizon-start"],
                                                      span["horizon-end"])
        else:
            assert not card["orphans"], r["scenario"]


def test_the_timeline_has_the_lanes_and_marks_of_the_scenario(
    probed: tuple[dict[str, Any], str, str],
) -> None:
    payload, _, _ = probed
    by = {r["scenario"]: r for r in payload["results"]}
    close = [e["what"] for e in by["close"]["events"]]
    for what in ("spawn", "handshake", "eof", "sigterm", "exit", "window-start", "window-end"):
        assert what in close
    roles = {e.get("role") for e in by["exit"]["events"] if e["what"] == "spawn"}
    assert roles == {"client", "server"}
    t = {e["what"]: e["t_ms"] for e in by["close"]["events"] if e["what"] != "exit"}
    assert t["spawn"] <= t["handshake"] <= t["eof"] < t["sigterm"]


def test_failed_scenarios_carry_diagnosis_in_json_html_and_markdown(
    probed: tuple[dict[str, Any], str, str],
) -> None:
    payload, page, md = probed
    exit_ = next(r for r in payload["results"] if r["scenario"] == "exit")
    assert exit_["verdict"] == "orphaned"
    assert exit_["diagnosis"].startswith("Does not exit on stdin EOF")
    assert exit_["survivors"][0]["evidence"]["alive"] is True
    assert "Does not exit on stdin EOF" in page and "Does not exit on stdin EOF" in md
    assert "fails: exits on stdin EOF" in payload["summary"]
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_the_table_title_quotes_the_command_as_a_shell_would(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["probe", "-s", "close", "--", sys.executable, "-c",
                 "import sys; print('no token; bye', file=sys.stderr); sys.exit(4)"])
    out = capsys.readouterr().out
    assert code == 1
    assert "-c 'import sys; print('\"'\"'no token; bye'\"'\"'" in out
    assert "↳ Exited during start-up (status 4): no token; bye" in out


def test_lab_pictures_carry_every_row_and_a_summary_per_server(
    probed: tuple[dict[str, Any], str, str], tmp_path: Path,
) -> None:
    """The lab's --html/--markdown: rows keep their label; one summary line per server."""
    from mcp_tether.lab.cli import TITLE, _annotated
    from mcp_tether.probe import ScenarioResult
    from mcp_tether.report.files import write_pictures

    payload, _, _ = probed
    rows = []
    for i, d in enumerate(payload["results"]):
        res = ScenarioResult.from_dict(d)
        res.label = f"R{i} mini thread"
        res.block = "extra"  # as run_lab sets it
        res.record = dict(d, argv=[*MINI, "--thread"])  # type: ignore[assignment]
        rows.append(res)
    html, md = tmp_path / "lab.html", tmp_path / "lab.md"
    assert write_pictures("lab", _annotated(rows, ("extra",)), html=str(html),
                          markdown=str(md), title=TITLE) is None
    parser = Marks()
    parser.feed(html.read_text())
    assert set(parser.cards) == {r["scenario"] for r in payload["results"]}
    assert "<b>mini thread</b>: holds:" in html.read_text()
    assert "- **mini thread**: holds:" in md.read_text()
    assert "R1 mini thread" in md.read_text()


def test_a_window_that_opens_after_the_tree_is_gone_does_not_stretch_the_time_axis() -> None:
    """devnull on a server that exited at once, before any scenario measured its start-up:
    its window still says --ready-timeout (10 s), which must not squeeze every other
    card into the first fifth of the page."""
    from mcp_tether.report.html import render_html

    def result(scenario: str, gone: float, window: tuple[float, float]) -> dict[str, Any]:
        return {"scenario": scenario, "verdict": "exited", "passed": True, "events": [
            {"t_ms": 0.0, "what": "spawn", "pid": 10, "role": "client", "cmd": "c"},
            {"t_ms": 5.0, "what": "spawn", "pid": 11, "role": "server", "cmd": "s"},
            {"t_ms": gone, "what": "exit", "pid": 11, "status": 0},
            {"t_ms": window[0], "what": "window-start", "pid": None},
            {"t_ms": window[1], "what": "window-end", "pid": None}]}

    page = render_html([("t", {"results": [
        result("close", 1500.0, (40.0, 2040.0)),
        result("devnull", 27.0, (10027.0, 12027.0)),
    ]})])
    assert ">2 s</text>" in page and ">3 s</text>" not in page and ">10 s</text>" not in page
