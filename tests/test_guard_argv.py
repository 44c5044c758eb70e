"""`parse_guard_argv` recognises our guard however it is spelled, and nothing else;
`positive_duration` refuses what would hang or crash a command (NaN, inf, negative)."""

from __future__ import annotations

import argparse

import pytest

from mcp_tether.cliutil import parse_duration, positive_duration
from mcp_tether.guard.argv import parse_guard_argv
from mcp_tether.ladder import GRACE_AFTER_EOF, TERM_GRACE


@pytest.mark.parametrize(
    ("argv", "grace", "term_grace", "command"),
    [
        (["mcp-tether", "run", "--", "node", "s.js"], GRACE_AFTER_EOF, TERM_GRACE,
         ["node", "s.js"]),
        (["/opt/x/bin/mcp-tether", "run", "--grace", "1", "--", "srv"], 1.0, TERM_GRACE,
         ["srv"]),
        (["mcp-tether", "run", "--grace=0.5", "--term-grace", "3", "srv", "--", "-x"],
         0.5, 3.0, ["srv", "--", "-x"]),
        (["mcp-tether", "run", "--gr", "0", "srv"], 0.0, TERM_GRACE, ["srv"]),
        (["python", "-m", "mcp_tether", "run", "--", "srv"], GRACE_AFTER_EOF, TERM_GRACE,
         ["srv"]),
        (["python3", "-I", "-m", "mcp_tether", "run", "srv"], GRACE_AFTER_EOF, TERM_GRACE,
         ["srv"]),
        (["/usr/bin/python3.12", "-X", "utf8", "-Im", "mcp_tether", "run", "--term-grace",
          "4", "--", "srv"], GRACE_AFTER_EOF, 4.0, ["srv"]),
        (["C:\\Python\\python.exe", "-mmcp_tether", "run", "srv"], GRACE_AFTER_EOF,
         TERM_GRACE, ["srv"]),
        (["uvx", "mcp-tether@0.3", "run", "--", "srv"], GRACE_AFTER_EOF, TERM_GRACE,
         ["srv"]),
        (["/opt/venv/bin/python3", "/opt/venv/bin/mcp-tether", "run", "--", "srv"],
         GRACE_AFTER_EOF, TERM_GRACE, ["srv"]),
        (["python3", "-I", "/x/bin/mcp-tether", "run", "--grace", "1", "srv"], 1.0,
         TERM_GRACE, ["srv"]),
    ],
)
def test_every_spelling_of_the_guard_is_recognised_with_its_options(
    argv: list[str], grace: float, term_grace: float, command: list[str]
) -> None:
    got = parse_guard_argv(argv)
    assert got is not None
    assert (got.grace, got.term_grace, got.command) == (grace, term_grace, command)
    assert got.launcher + got.options + ["--"] * (len(argv) - len(got.launcher)
                                                  - len(got.options) - len(command)) \
        + got.command == argv


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["node", "server.js"],
        ["mcp-tether", "ps"],
        ["mcp-tether", "run"],
        ["mcp-tether", "run", "--"],
        ["mcp-tether", "run", "--help"],
        ["mcp-tether", "run", "--grace", "nan", "--", "srv"],
        ["mcp-tether", "run", "--term-grace=inf", "srv"],
        ["mcp-tether", "run", "--grace", "-1", "srv"],
        ["mcp-tether", "run", "--bogus", "srv"],
        ["python", "-c", "import mcp_tether", "run", "srv"],
        ["python", "server.py", "-m", "mcp_tether", "run", "srv"],
        ["python", "/x/bin/not-mcp-tether", "run", "srv"],
        ["python", "-m", "other", "run", "srv"],
        ["npx", "mcp-tether", "run", "srv"],
        ["mcp-tether", "run", "srv", "--grace", "1"],
        ["mcp-tether", "run", "--grace", "1", "srv", "--term-grace=3"],
    ],
)
def test_anything_that_is_not_a_working_guard_is_not_recognised(argv: list[str]) -> None:
    assert parse_guard_argv(argv) is None


@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "-inf", "-1", "-0.001", "", "2s"])
def test_a_duration_must_be_a_finite_number_of_seconds_not_below_zero(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)
    with pytest.raises(argparse.ArgumentTypeError):
        positive_duration(text)


def test_zero_and_fractions_are_durations() -> None:
    assert [positive_duration(t) for t in ("0", "0.25", "3", "1e1")] == [0.0, 0.25, 3.0, 10.0]


def test_the_guards_options_after_the_command_are_the_commands_own_only_after_dashes() -> None:
    """`run srv --grace 1` is refused by the guard, so it is no guard; with `--` the
    server gets its own `--grace`."""
    got = parse_guard_argv(["mcp-tether", "run", "--", "srv", "--grace", "1"])
    assert got is not None and got.command == ["srv", "--grace", "1"]
    assert got.grace == GRACE_AFTER_EOF
