"""Exit codes are listed once, in `mcp-tether --help` and the README, and every command's
`--help` points there instead of repeating the list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcp_tether.cli import COMMAND_EPILOG, COMMANDS, main

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
