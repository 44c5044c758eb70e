"""What a server, a path or a command line says never becomes markup or terminal control.

A hostile server (tests/servers/hostile.py: HTML, `]]>`, Markdown pipes and links, ANSI
escapes, BEL, invalid UTF-8, a 1 MB stderr line) is probed from a hostile folder with
hostile arguments; each writer's output goes through a real parser or renderer: JUnit
through xml.etree and xml.dom.minidom, Markdown through markdown-it-py (CommonMark, raw
HTML let through so that any that leaks shows) and then html.parser, HTML through
html.parser. Terminal text must hold no ESC, BEL or CR; a leaked server whose argv
holds a newline is one row of `ps`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.dom.minidom
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from mcp_tether.escape import md_cell, md_code, md_text, rich_text, terminal, xml_text
from scan_lab import Lab, run_cli

HERE = Path(__file__).parent
HOSTILE_SERVER = HERE / "servers" / "hostile.py"
HOSTILE = ("<script>alert(1)</script> <img src=x onerror=alert(1)> ]]> | a | b |\n"
           "| --- | [x](javascript:alert(1)) \x1b[31mred\x1b[0m \x1b]0;owned\x07 \x07 \x9b2J "
           "\udcff")
CONTROL = ("\x1b", "\x07", "\r", "\x9b")
# The elements our own Markdown writes; anything else in a rendering came from the input.
OURS = {"h1", "h2", "h3", "p", "strong", "em", "code", "pre", "table", "thead", "tbody",
        "tr", "th", "td", "ul", "ol", "li", "details", "summary", "br", "hr"}


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _elements(page: str) -> _Elements:
    p = _Elements()
    p.feed(page)
    p.close()
    return p


def _live(page: str, allowed: set[str] | None = None) -> list[Any]:
    """Elements and attributes of `page` that could run or fetch something; with
    `allowed`, also every element not in it."""
    bad: list[Any] = []
    for tag, attrs in _elements(page).tags:
        if tag in ("script", "img", "iframe", "object", "embed", "base", "meta") \
                and not (tag == "meta" and attrs == [("charset", "utf-8")]) \
                or (allowed is not None and tag not in allowed):
            bad.append((tag, attrs))
        bad += [(tag, k, v) for k, v in attrs if k.startswith("on") or "javascript:" in (v or "")]
    return bad


def render_markdown(text: str) -> str:
    """CommonMark with GFM tables, raw HTML passed through (so any that leaks shows)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("table").render(text)


def assert_markdown_is_text(text: str, *, hostile_words: tuple[str, ...] = ("<script>",)
                            ) -> None:
    """`text` rendered has only our own elements; the hostile words are there as text."""
    page = render_markdown(text)
    assert _live(page, OURS) == [], page[:2000]
    shown = "".join(_elements(page).text)
    for word in hostile_words:
        assert word in shown, (word, shown[:2000])
    assert not any(c in text for c in CONTROL), [c for c in CONTROL if c in text]


# 1. The escaping functions themselves.


def test_every_code_point_xml_forbids_is_shown_and_the_document_parses() -> None:
    """Every C0/C1 control, DEL, a lone surrogate and U+FFFE in text and attributes."""
    nasty = "".join(map(chr, range(0x00, 0xA0))) + "\ud800\udcff\ufffe\uffff]]><&\"'"
    root = ET.Element("t", a=xml_text(nasty))
    root.text = xml_text(nasty)
    data = ET.tostring(root, encoding="utf-8")
    back = ET.fromstring(data)
    xml.dom.minidom.parseString(data)
    assert back.text is not None and "\\x1b" in back.text and "\\x07" in back.text
    assert "\x1b" not in back.text and "]]><&" in back.text


def test_markdown_text_is_text_in_a_table_a_list_and_a_heading() -> None:
    """The hostile string as a cell, a list item, a heading and a code span."""
    doc = "\n".join([f"### {md_text(HOSTILE)}", "", "| a | b |", "|---|---|",
                     f"| {md_cell(HOSTILE)} | {md_cell('`<b>|x` ' + HOSTILE)} |", "",
                     f"- **{md_text(HOSTILE)}**: {md_code(HOSTILE)}", "",
                     f"{md_text('`' + HOSTILE)} {md_text('``' + HOSTILE + '`')}", ""])
    assert_markdown_is_text(doc)
    rows = [ln for ln in render_markdown(doc).splitlines() if ln.startswith("<td")]
    assert len(rows) == 2  # the pipes in the cells kept the table at two columns


def test_terminal_text_sends_no_control_and_rich_sees_no_markup() -> None:
    """ESC, BEL, CR, CSI, a newline: shown; `[bold]` and `[/]` in a rich cell: text."""
    import io

    from rich.console import Console

    shown = terminal(HOSTILE)
    assert "\n" not in shown and not any(c in shown for c in CONTROL)
    assert "\\x1b[31m" in shown and "\\x07" in shown and "\\xff" in shown
    buf = io.StringIO()
    Console(file=buf, force_terminal=False, no_color=True, width=400).print(
        rich_text(HOSTILE + " [bold]x[/] [/]"))
    assert "[bold]x[/] [/]" in buf.getvalue()


# 2. The writers, on a real hostile server.


@pytest.fixture
def hostile_dir(tmp_path: Path) -> Path:
    """A folder whose name is HTML, a pipe and a newline, holding the hostile server."""
    where = tmp_path / "<img src=x onerror=alert(1)>|\ndir"
    where.mkdir()
    (where / "hostile.py").write_text(HOSTILE_SERVER.read_text())
    return where


def test_a_hostile_servers_probe_junit_parses_and_its_markdown_and_html_are_text(
        hostile_dir: Path, tmp_path: Path) -> None:
    """1. probe the hostile server (close, node style); 2. JUnit parses with two XML
    parsers and carries the server's stderr as text; 3. the Markdown rendered by a
    CommonMark renderer and the HTML page hold no element from the input; 4. stdout and
    stderr carry no control character."""
    argv = [sys.executable, str(hostile_dir / "hostile.py"), "<script>alert(2)</script>",
            "a\nb|c\x1b[2J\x07", "[y](javascript:alert(3))"]
    junit, md, page = tmp_path / "j.xml", tmp_path / "m.md", tmp_path / "h.html"
    p = subprocess.run([sys.executable, "-m", "mcp_tether", "probe", "-s", "close",
                        "--host-style", "node", "--detail", "--junit", str(junit),
                        "--markdown", str(md), "--html", str(page), "--", *argv],
                       capture_output=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert p.returncode == 1, p.stderr.decode(errors="replace")[-2000:]
    for stream in (p.stdout, p.stderr):
        assert not any(c.encode() in stream for c in ("\x1b", "\x07", "\r")), stream[-2000:]
    assert b"<script>alert(2)</script>" in p.stdout  # shown, as text
    data = junit.read_bytes()
    xml.dom.minidom.parseString(data)
    failure = ET.fromstring(data).find(".//failure")
    assert failure is not None and failure.text is not None
    assert "<script>alert(1)</script>" in failure.text and "\\x1b[31m" in failure.text
    assert "<script>alert(2)</script>" in failure.get("message", "")
    assert_markdown_is_text(md.read_text(), hostile_words=("<script>alert(2)</script>",
                                                           "<img src=x onerror=alert(1)>"))
    html_page = page.read_text()
    assert _live(html_page) == []
    assert "<script>alert(2)</script>" in "".join(_elements(html_page).text)


def test_a_survey_of_hostile_rows_is_text_in_its_markdown_file_and_on_stdout(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A saved survey whose label, version, command, note and diagnoses are hostile,
    rendered again (`--from-json`): the .md file and stdout render to text only; the
    HTML page has no element from the input."""
    from mcp_tether.cli import main
    from mcp_tether.survey import ServerResult, SurveyResult
    from mcp_tether.survey.render import to_json

    failure = {"style": "node", "scenario": "close", "level": "spec", "verdict": "orphaned",
               "diagnosis": HOSTILE, "remedy": "Fix " + HOSTILE}
    row = ServerResult(HOSTILE, "npm:x@1", version=HOSTILE,
                       command=["node", HOSTILE], verdicts={"node": {"close": "orphaned"}},
                       language="node", launch="npx", status="ok", note=HOSTILE)
    data = json.loads(to_json(SurveyResult([row], 1.8e9, 12.0, 2, True)))
    data["results"][0]["failures"] = [failure]
    data["results"][0]["spec_pass"] = {"node": False, "python": True}
    saved = tmp_path / "old.json"
    saved.write_text(json.dumps(data))
    listing = tmp_path / "servers.list"
    listing.write_text("npm:x@1\n")
    assert main(["survey", str(listing), "--from-json", str(saved),
                 "--out", str(tmp_path / "new")]) == 0
    out, _err = capfd.readouterr()
    written = (tmp_path / "new.md").read_text()
    assert written == out
    assert_markdown_is_text(written, hostile_words=("<script>alert(1)</script>",
                                                    "<img src=x onerror=alert(1)>"))
    assert _live((tmp_path / "new.html").read_text()) == []


def test_the_labs_and_hostchecks_markdown_of_hostile_words_is_text(tmp_path: Path) -> None:
    """The lab's writer (the probe's, with per-server summaries) and the host check's
    Markdown and text, fed hostile server names, commands, details and diagnoses."""
    import io

    from mcp_tether.report import hostcheck as hc
    from mcp_tether.report.files import write_pictures

    rec = {"label": "E " + HOSTILE, "scenario": "exit", "host_style": "node",
           "verdict": "orphaned", "passed": False, "detail": HOSTILE, "diagnosis": HOSTILE,
           "remedy": HOSTILE, "remedy_steps": [HOSTILE], "remedy_guard": HOSTILE,
           "events": [], "stderr_tail": HOSTILE}
    sections = [("lab: " + HOSTILE, {"results": [rec], "server_summaries": [
        (HOSTILE, HOSTILE)]})]
    md, page = tmp_path / "lab.md", tmp_path / "lab.html"
    assert write_pictures("lab", sections, html=str(page), markdown=str(md)) is None
    assert_markdown_is_text(md.read_text())
    assert _live(page.read_text()) == []
    proc = {"role": "server", "pid": 7, "ppid": 1, "group": 7, "session": 7,
            "signals": [{"signal": HOSTILE, "t_ms": 1}], "stdin_closed_first": None,
            "ended": HOSTILE, "direct_child": True}
    result = SimpleNamespace(host=HOSTILE, argv=[HOSTILE, "x"], results=[
        {"scenario": "exit", "verdict": "left", "detail": HOSTILE, "hold": HOSTILE,
         "processes": [proc], "recorded": [{"role": "server", "pid": 7, "what": HOSTILE,
                                            "t_ms": 2}],
         "others_left": [{"pid": 9, "cmdline": HOSTILE}], "spec": HOSTILE},
        {"scenario": "sigterm", "verdict": "error", "detail": HOSTILE,
         "host_output_tail": HOSTILE}])
    out = io.StringIO()
    hc.render_markdown(result, out)
    assert_markdown_is_text(out.getvalue())
    text = io.StringIO()
    hc.render_text(result, text)
    assert not any(c in text.getvalue() for c in CONTROL)
    assert _live(hc.render_html(result)) == []


# 3. ps and reap: one row per server, whatever its argv.


@pytest.mark.linux
def test_a_leaked_server_whose_argv_holds_a_newline_and_escapes_is_one_row_of_ps_and_reap(
        lab: Lab, capsys: pytest.CaptureFixture[str]) -> None:
    """1. leak a server started with a multi-line, ESC- and BEL-bearing argv; 2. `ps`
    shows it on one row, the argv escaped; 3. `reap --dry-run` says it on one line."""
    lab.fake_server("mcp-server-h.py", sdk_import=True)
    pair = lab.pair([sys.executable, "mcp-server-h.py", "line one\nline two", "\x1b[2J\x07",
                     "<script>x</script>"], cwd=str(lab.tmp))
    leaked = pair.orphan()
    rc, out, err = run_cli(capsys, "ps")
    assert rc == 0, err
    assert not any(c in out + err for c in CONTROL)
    mine = [ln for ln in out.splitlines() if f" {leaked.pid} " in f" {ln} "]
    assert len(mine) == 1, out
    assert "line one\\nline two" in mine[0] and "\\x1b[2J\\x07" in mine[0]
    assert not any("line two" in ln and f" {leaked.pid} " not in f" {ln} "
                   for ln in out.splitlines()), out
    rc, out, err = run_cli(capsys, "reap", "--dry-run", "--min-age", "0")
    assert rc == 0, err
    said = [ln for ln in out.splitlines() if f"pid {leaked.pid} " in ln]
    assert len(said) == 1 and "line one\\nline two" in said[0], out
    assert not any(c in out + err for c in CONTROL)
