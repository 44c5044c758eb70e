"""The probe's page as a reader sees it: the title once, the span
labels clear of the handshake's, a passing guarded close in the pass colour. Pure
rendering: results are written by hand."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mcp_tether.report.html import VERDICT_COLOUR, render_html, write_html


def _result(scenario: str, verdict: str, passed: bool, last_ms: float = 1200.0
            ) -> dict[str, Any]:
    """A client, a server answering the handshake at 900 ms, triggered at 905 ms, gone at
    `last_ms`; the window is 2 s."""
    return {"scenario": scenario, "verdict": verdict, "passed": passed, "host_style": "node",
            "events": [
                {"t_ms": 0.0, "what": "spawn", "pid": 10, "role": "client", "cmd": "c"},
                {"t_ms": 5.0, "what": "spawn", "pid": 11, "role": "server", "cmd": "s"},
                {"t_ms": 900.0, "what": "handshake", "pid": 11},
                {"t_ms": 905.0, "what": "client-exit", "pid": 10},
                {"t_ms": 905.0, "what": "window-start", "pid": None},
                {"t_ms": 2905.0, "what": "window-end", "pid": None},
                {"t_ms": last_ms, "what": "exit", "pid": 11, "status": 0}]}


def _labels(page: str) -> dict[str, tuple[float, float]]:
    """The (x, y) of each small label ("init", "window", ...) of the first card."""
    out: dict[str, tuple[float, float]] = {}
    for m in re.finditer(r'<text x="([\d.]+)" y="([\d.]+)"[^>]*class="lbl"[^>]*>([^<]+)</text>',
                         page):
        out.setdefault(m.group(3), (float(m.group(1)), float(m.group(2))))
    return out


def test_the_page_title_is_shown_once(tmp_path: Path) -> None:
    """`probe --html` names its one section after the command, and so the page."""
    out = tmp_path / "p.html"
    write_html(str(out), [("mcp-tether probe: node s.js", {"results": [
        _result("exit", "exited", True)]})])
    body = out.read_text().split("<body>", 1)[1]
    assert body.count("mcp-tether probe: node s.js") == 1


def test_the_window_label_does_not_overlap_the_handshake_label() -> None:
    """On an exit card the window opens as the handshake is answered; on a long time axis
    the two labels met (a 9 px font: rows closer than 10 px overlap)."""
    slow = _result("close", "exited", True, last_ms=30000.0)  # stretches the time axis
    page = render_html([("t", {"results": [_result("exit", "exited", True), slow]})])
    labels = _labels(page)
    (ix, iy), (wx, wy) = labels["init"], labels["window"]
    assert abs(wy - iy) >= 10 or abs(wx - ix) > 40, labels


def test_a_passing_guarded_close_is_drawn_in_the_pass_colour() -> None:
    """Behind the guard, `terminated` on close is the guard's promise kept: not a warning.
    An unguarded `terminated` close (it failed) keeps the warning colour."""
    page = render_html([("t", {"results": [_result("close", "terminated", True),
                                           _result("exit", "terminated", False)]})])
    colours = re.findall(r'class="card" style="--v:(#[0-9a-f]+)"', page)
    assert colours == [VERDICT_COLOUR["exited"], VERDICT_COLOUR["terminated"]]
