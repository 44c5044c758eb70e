"""Is the server behind our own guard? Then it is judged by the guard's promise.

`mcp-tether run [--grace S] [--term-grace S] -- CMD` promises: once the client is gone,
the whole tree is ended within grace + term-grace (then SIGKILL). A probe window shorter
than that would call every EOF-ignoring server the guard is about to end `orphaned`
(issue 14). `guard_promise(argv)` recognises the guard however a config spells it (the
core's `parse_guard_argv`) and returns [grace, term_grace], or None when not guarded.
"""

from __future__ import annotations

from mcp_tether.guard.argv import parse_guard_argv

__all__ = ["guard_promise"]


def guard_promise(argv: list[str]) -> list[float] | None:
    found = parse_guard_argv(list(argv))
    if found is None:
        return None
    return [float(found.grace), float(found.term_grace)]
