"""Lazy public names for a package (PEP 562): each loads its module on first use.

Why: a package's `__init__` that imports its modules makes every importer pay for all of
them; `ps` needs the process table, not the signalling core, and a guarded server's
launch path needs the guard, not its result types. `attach(package, names)` returns the
package's `__getattr__` and `__dir__`; a name is cached in the package once loaded.
`regex(source)` is the same idea for a module-level compiled pattern. Stdlib only, and
importlib and re only on first use.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable
    from typing import Any, AnyStr

__all__ = ["attach", "regex"]


def attach(package: str, names: dict[str, str]
           ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """`names` maps a public name to its module (absolute, or relative to `package`
    when it starts with a dot)."""

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__


def regex(source: AnyStr) -> re.Pattern[AnyStr]:
    """A pattern compiled on first use: `re` (with enum, ~8 ms) loads only when a scan
    meets a word that needs it, not on every start-up. Flags go inline: `(?m)`, `(?xi)`."""
    return _Pattern(source)  # type: ignore[return-value]  # quacks like re.Pattern


class _Pattern:
    __slots__ = ("_source", "_compiled")

    def __init__(self, source: str | bytes) -> None:
        self._source = source
        self._compiled: Any = None

    def __getattr__(self, name: str) -> Any:  # match, search, sub, split, fullmatch ...
        if self._compiled is None:
            import re

            self._compiled = re.compile(self._source)
        return getattr(self._compiled, name)
