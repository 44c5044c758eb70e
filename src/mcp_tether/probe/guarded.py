"""Is the server behind our own guard? Then it is judged by the guard's promise.

`mcp-tether run [--grace S] [--term-grace S] -- CMD` promises: once the client is gone,
the whole tree is ended within grace + term-grace (then SIGKILL). A probe window shorter
than that would call every EOF-ignoring server the guard is about to end `orphaned`
(issue 14). `guard_promise(argv)` recognises the guard however a config spells it
(`mcp-tether run`, `python -m mcp_tether run`, a path to the script) and returns
[grace, term_grace], or None for a server that is not guarded.
"""

from __future__ import annotations

import os

from mcp_tether.ladder import GRACE_AFTER_EOF, TERM_GRACE

__all__ = ["guard_promise"]


def guard_promise(argv: list[str]) -> list[float] | None:
    try:
        from mcp_tether.guard.argv import parse_guard_argv  # type: ignore[import-not-found]
    except ImportError:
        parsed = _parse(argv)
        return None if parsed is None else [parsed[0], parsed[1]]
    found = parse_guard_argv(argv)
    if found is None:
        return None
    grace = getattr(found, "grace", None)
    term = getattr(found, "term_grace", None)
    return [GRACE_AFTER_EOF if grace is None else float(grace),
            TERM_GRACE if term is None else float(term)]


def _parse(argv: list[str]) -> tuple[float, float] | None:
    """Until the core's `parse_guard_argv` lands: the spellings `wrap` writes."""
    rest: list[str] | None = None
    for i, word in enumerate(argv[:4]):
        base = os.path.basename(word)
        if base == "mcp-tether" and argv[i + 1: i + 2] == ["run"]:
            rest = argv[i + 2:]
            break
        if word == "-m" and argv[i + 1: i + 3] == ["mcp_tether", "run"]:
            rest = argv[i + 3:]
            break
    if rest is None:
        return None
    grace, term = GRACE_AFTER_EOF, TERM_GRACE
    it = iter(range(len(rest)))
    for j in it:
        word = rest[j]
        if word == "--":
            break
        name, eq, value = word.partition("=")
        if name in ("--grace", "--term-grace"):
            if not eq:
                value = rest[j + 1] if j + 1 < len(rest) else ""
                next(it, None)
            try:
                seconds = float(value)
            except ValueError:
                return None
            if name == "--grace":
                grace = seconds
            else:
                term = seconds
    return grace, term
