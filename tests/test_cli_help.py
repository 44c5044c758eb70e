"""Exit codes are listed once, in `mcp-tether --help` and the README, and every command's
`--help` points there instead of repeating the list. Every command's `--help` teaches:
examples first, then what its words mean, then the options."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_tether.cli import COMMAND_EPILOG, COMMANDS, build_parser, main
from mcp_tether.errors import EXIT_USAGE

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_top_level_help_lists_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for code in ("0 ok", "1 a check failed", "2 usage", "126 ", "127 ", "128+N"):
        assert code in out, code


def test_the_readme_lists_the_same_exit_codes_once() -> None:
    text = README.read_text()
    assert text.count("## Exit codes") == 1
    table = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    codes = re.findall(r"^\| (\S+) \|", table, flags=re.M)
    assert codes[1:] == ["0", "1", "2", "126", "127", "128+N"], codes  # [0]: the header


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_points_at_the_list_instead_of_repeating_it(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([name, "--help"]) == 0
    out = capsys.readouterr().out
    assert COMMAND_EPILOG in out
    assert "126 command not executable" not in out and "128+N" not in out


def _blocks(name: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main([name, "--help"]) == 0
    return capsys.readouterr().out.split("\n\n")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_help_opens_with_one_to_three_examples_that_parse(
    name: str, capsys: pytest.CaptureFixture[str],
) -> None:
    """1. A usage of at most three lines and the one-line summary; 2. then `examples:`,
    one to three command lines, the first of this very command, before any option;
    3. each example (minus its `# why`) is accepted by its command's own parser, so an
    option renamed or removed fails here, not on a newcomer's terminal."""
    usage, summary, examples = _blocks(name, capsys)[:3]
    assert usage.startswith(f"usage: mcp-tether {name}") and len(usage.splitlines()) <= 3
    assert len(summary.splitlines()) == 1
    head, *lines = examples.splitlines()
    assert head == "examples:" and 1 <= len(lines) <= 3, examples
    assert lines[0].startswith(f"  mcp-tether {name}"), lines[0]
    for line in lines:
        assert len(line) <= 100, line
        words = shlex.split(line.split("  #", 1)[0])
        assert words[0] == "mcp-tether" and words[1] in COMMANDS, line
        parser, _ = build_parser(words[1])
        try:
            parser.parse_args(words[2:])
        except SystemExit as exc:
            raise AssertionError(f"{name} --help: `{line.strip()}` does not parse") from exc


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_help_says_what_its_words_mean_before_the_options(
    name: str, capsys: pytest.CaptureFixture[str],
) -> None:
    """After the examples, a paragraph of the command's own words, then the options."""
    blocks = _blocks(name, capsys)
    words = blocks[3]
    assert not words.lstrip().startswith(("options:", "positional arguments:", "-")), words
    assert len(words.split()) >= 12, words


def test_ps_help_defines_every_state_a_scan_reports(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each state of the STATE column (the model's list, and superseded) has its line."""
    from mcp_tether.scan.model import STATES

    out = "\n\n".join(_blocks("ps", capsys))
    for state in {*STATES, "leaked", "live", "unknown", "superseded"}:
        assert re.search(rf"^  {state} +\S", out, flags=re.M), state


def test_the_top_level_help_opens_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    blocks = capsys.readouterr().out.split("\n\n")
    head, *lines = blocks[2].splitlines()
    assert head == "examples:" and 1 <= len(lines) <= 3
    assert all(line.split()[1] in COMMANDS for line in lines)


def _into_a_closed_pipe(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """`mcp-tether ARGV | head -0`, made certain: stdout is a pipe whose reader is gone
    before the command starts. Its exit status and its stderr."""
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run([sys.executable, "-m", "mcp_tether", *argv], stdout=w,
                           stderr=subprocess.PIPE, env=env, cwd=cwd, timeout=60)
    finally:
        os.close(w)
    return p.returncode, p.stderr.decode(errors="replace")


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["hosts", "--json"]]
                         + [[name, "--help"] for name in sorted(COMMANDS)], ids=" ".join)
@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
def test_output_into_a_closed_pipe_ends_quietly_with_the_usual_status(
    argv: list[str], buffered: bool, tmp_path: Path
) -> None:
    """`mcp-tether --help | head -1`: the reader gone is not an error worth a trace.
    1. every command's output goes into a pipe nobody reads, stdout buffered as a pipe
    is by default (the failure then comes at the last flush) or not (it comes at the
    first write); 2. it exits 0, stderr empty: no BrokenPipeError trace, no
    "Exception ignored" from the interpreter's exit-time flush (status 120)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["HOME"] = str(tmp_path)  # `hosts --json` reads no real host config
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    rc, err = _into_a_closed_pipe(argv, env, tmp_path)
    assert (rc, err) == (0, ""), err


def test_a_bare_command_into_a_closed_pipe_stays_a_usage_error(tmp_path: Path) -> None:
    """`mcp-tether | head`: the help goes nowhere, quietly; the status is still 2."""
    rc, err = _into_a_closed_pipe([], dict(os.environ, HOME=str(tmp_path)), tmp_path)
    assert (rc, err) == (EXIT_USAGE, ""), err
