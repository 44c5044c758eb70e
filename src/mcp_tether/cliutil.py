"""Small helpers shared by every command: argument types, and the one way to exit at once.

`positive_duration` is the argparse `type=` for any option in seconds (`--grace`,
`--term-grace`, `--window`, `reap --grace` ...): a finite number >= 0, else argparse's
usage error (exit 2) naming the option. `parse_duration` is the same check for code
that parses without argparse (`guard.argv.parse_guard_argv`), raising ValueError.
`float()` alone accepts "nan", "inf" and "-1": a NaN deadline never passes (a hang), an
infinite one overflows poll(2) (a traceback).
`exit_at_once(status)` ends a command's process once its work is done, output flushed.
`teach(parser, examples, words)` opens a command's `--help` with one to three real
examples and what its words mean, before the option list.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing stays off the guard's start-up path (`mcp-tether run`)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import NoReturn

__all__ = ["exit_at_once", "parse_duration", "positive_duration", "teach"]


def parse_duration(text: str) -> float:
    """Seconds as a finite float >= 0; ValueError with a one-line reason otherwise."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{text!r} is not a number of seconds (must be finite and >= 0)") from None
    if value - value != 0:  # NaN and +-inf (math.isfinite, minus an import)
        raise ValueError(f"{text!r} seconds: must be finite and >= 0")
    if value < 0:
        raise ValueError(f"{text!r} seconds is negative: must be finite and >= 0")
    return value


def positive_duration(text: str) -> float:
    """argparse type: a finite number of seconds >= 0 (0 allowed: "no grace")."""
    try:
        return parse_duration(text)
    except ValueError as exc:
        import argparse  # here: the guard's fast path parses without argparse

        raise argparse.ArgumentTypeError(str(exc)) from None


def exit_at_once(status: int) -> NoReturn:
    """End this process now with `status`, without interpreter teardown: for a command
    whose work is done (children reaped, no thread left) and whose caller waits on its
    exit (the host, for `mcp-tether run`). Buffered stdout and stderr are flushed first;
    a stdout that cannot take its output raises (cli.main's BrokenPipeError handler);
    a missing or closed stream, or a failing stderr, is passed over."""
    if sys.stdout is not None and not sys.stdout.closed:
        sys.stdout.flush()
    try:  # noqa: SIM105  # contextlib would pull functools onto the guard's start-up
        if sys.stderr is not None:
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(status)


def teach(parser: argparse.ArgumentParser, examples: Sequence[str], words: str = "",
          usage: str | None = None) -> None:
    """Open `--help` with the command's one-line summary (the description `cli` sets),
    then `examples` (one to three command lines, each may end `# why`), then `words`
    (what the command's words mean), so that a newcomer reads how to use it before the
    option list. `usage` replaces a usage line argparse would spread over many lines."""
    if not 1 <= len(examples) <= 3:
        raise ValueError(f"one to three examples, not {len(examples)}")
    block = "examples:\n" + "\n".join(f"  {e}" for e in examples)
    parser.description = "\n\n".join(p for p in (parser.description, block, words.rstrip())
                                      if p)
    if usage is not None:
        parser.usage = usage
