"""Recognising our guard in a command line, however it is spelled.

`parse_guard_argv(argv)` answers "is this `mcp-tether run`, and with what?" for:
  mcp-tether run [opts] [--] CMD...          (any path to the script: /x/bin/mcp-tether)
  python -m mcp_tether run ...               (any python: python3, /usr/bin/python3.12,
  python3 -I -X utf8 -m mcp_tether run ...    pypy3; interpreter flags before -m)
  python3 /x/bin/mcp-tether run ...          (the console script as the kernel shows it:
                                              its shebang's interpreter, then the script)
  uvx mcp-tether[@ver] run ...
It returns a `GuardCommand` (the launcher prefix, `grace`, `term_grace` with the
ladder's defaults, and the inner command), or None when the command is not a guard the
real `run` would accept: another program, `-c`, `--help`, an unknown option, a bad
duration (NaN, inf, negative), no inner command, or the guard's own options after the
inner command without `--` (`run srv --grace 1`, which the guard refuses: see
`misplaced_options`). Options are read the way the guard's argparse reads them: up to
the first non-option word or `--`, unique prefixes of the long options accepted
(`--gr 1`).
Pure and stdlib-only: `hosts` calls it to spot entries already wrapped, `probe` to judge
a guarded server by the guard's own ladder.
"""

from __future__ import annotations

import os

from mcp_tether.cliutil import parse_duration
from mcp_tether.ladder import GRACE_AFTER_EOF, TERM_GRACE

__all__ = ["GuardCommand", "misplaced_options", "parse_guard_argv"]

# Compiled on first use (`re` stays off the guard's own start-up: `mcp-tether run`).
_PYTHON = r"^(python|pypy)(\d+(\.\d+)*)?[wtd]?$"
_MODULES = ("mcp_tether", "mcp_tether.__main__")
_UVX_PACKAGE = r"^mcp-tether([@=<>~!].*)?$"
_OPTIONS = ("--grace", "--term-grace")
# Interpreter options that take a value (the rest of the word, or the next word).
_PY_WITH_VALUE = "XW"


class GuardCommand:
    """A guard command line, taken apart."""

    __slots__ = ("launcher", "options", "grace", "term_grace", "command")

    def __init__(self, launcher: list[str], options: list[str], grace: float,
                 term_grace: float, command: list[str]) -> None:
        self.launcher = launcher  # up to and including "run"
        self.options = options  # the guard's option words as given ("--" excluded)
        self.grace = grace
        self.term_grace = term_grace
        self.command = command  # the guarded server's argv

    def __repr__(self) -> str:
        return (f"GuardCommand(grace={self.grace}, term_grace={self.term_grace}, "
                f"command={self.command!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GuardCommand):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable lists inside


def _name(path: str) -> str:
    name = os.path.basename(path.replace("\\", "/")).lower()
    return name[:-4] if name.endswith(".exe") else name


def _after_python(argv: list[str]) -> int | None:
    """Index of "run" after `python [flags] -m mcp_tether` or `python [flags]
    /x/bin/mcp-tether`, or None."""
    i = 1
    while i < len(argv):
        word = argv[i]
        if not word.startswith("-") and _name(word) == "mcp-tether":
            return i + 1  # the console script run through its shebang's interpreter
        if word == "--check-hash-based-pycs":
            i += 2
            continue
        if not word.startswith("-") or word == "-" or word.startswith("--"):
            return None  # a script, stdin, or a long option we do not know
        k = 1
        while k < len(word):
            flag = word[k]
            if flag == "m":
                module = word[k + 1 :] or (argv[i + 1] if i + 1 < len(argv) else "")
                nxt = i + 1 if word[k + 1 :] else i + 2
                return nxt if module in _MODULES else None
            if flag == "c":
                return None
            if flag in _PY_WITH_VALUE:
                if not word[k + 1 :]:
                    i += 1  # the value is the next word
                break
            if not flag.isalpha():
                return None
            k += 1
        i += 1
    return None


def _launcher_end(argv: list[str]) -> int | None:
    """Index of the "run" word if argv starts our CLI, else None."""
    if not argv:
        return None
    exe = _name(argv[0])
    if exe == "mcp-tether":
        return 1
    import re  # re caches the compiled patterns

    if re.match(_PYTHON, exe):
        return _after_python(argv)
    if exe == "uvx" and len(argv) > 1 and re.match(_UVX_PACKAGE, argv[1]):
        return 2
    return None


def _option(word: str) -> str | None:
    """The long option `word` (or its unique prefix) stands for."""
    hits = [o for o in _OPTIONS if o.startswith(word)] if len(word) > 2 else []
    if word in _OPTIONS:
        return word
    return hits[0] if len(hits) == 1 else None


def misplaced_options(command: list[str]) -> list[str]:
    """The guard's own option words (`--grace`, `--term-grace=2`) in a server command
    given without `--`: `run srv --grace 1` would pass `--grace 1` to the server, so the
    guard refuses it. Exact names only: a server's `--gr` is the server's."""
    return [w for w in command[1:] if w.split("=", 1)[0] in _OPTIONS]


def parse_guard_argv(argv: list[str]) -> GuardCommand | None:
    """The guard command `argv` spells, or None; see the module doc."""
    argv = list(argv)
    at = _launcher_end(argv)
    if at is None or at >= len(argv) or argv[at] != "run":
        return None
    values = {"--grace": GRACE_AFTER_EOF, "--term-grace": TERM_GRACE}
    j = at + 1
    dashes = False
    while j < len(argv):
        word = argv[j]
        if word == "--":
            j += 1
            dashes = True
            break
        if not word.startswith("-") or word == "-":
            break
        name, eq, value = word.partition("=")
        option = _option(name)
        if option is None:
            return None  # --help, -h, or an option the guard does not have
        if not eq:
            if j + 1 >= len(argv):
                return None
            value = argv[j + 1]
            j += 1
        try:
            values[option] = parse_duration(value)
        except ValueError:
            return None
        j += 1
    command = argv[j:]
    if not command or (not dashes and misplaced_options(command)):
        return None
    options = [w for w in argv[at + 1 : j] if w != "--"]
    return GuardCommand(argv[: at + 1], options, values["--grace"],
                        values["--term-grace"], command)
