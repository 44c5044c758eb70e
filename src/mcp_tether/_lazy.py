"""Lazy public names for a package (PEP 562): each loads its module on first use.

The one way a package here exports names it does not import up front: the top package
and `proc/`, `guard/`, `container/` (on the two start-up paths, `import mcp_tether` and
`mcp-tether run`, which must not pay for modules they do not use), `probe/` (each keeper
imports it and needs none of its API) and `client/` (`stdio_client` needs the MCP SDK).
`attach(package, names)` returns the package's `__getattr__` and `__dir__`; a name is
cached in the package once loaded. Stdlib only, and importlib only on first use.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["attach"]


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
