"""Small argument types shared by every command's parser.

`positive_duration` is the argparse `type=` for any option in seconds (`--grace`,
`--term-grace`, `--window`, `reap --grace` ...): a finite number >= 0, else argparse's
usage error (exit 2) naming the option. `parse_duration` is the same check for code
that parses without argparse (`guard.argv.parse_guard_argv`), raising ValueError.
`float()` alone accepts "nan", "inf" and "-1": a NaN deadline never passes (a hang), an
infinite one overflows poll(2) (a traceback).
"""

from __future__ import annotations

__all__ = ["parse_duration", "positive_duration"]


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
