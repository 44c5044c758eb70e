"""mcp-tether: make MCP stdio servers die with their client, and prove it.

Importing this package is cheap on purpose (stdlib only, and nothing beyond this file
until a name is used): the library helper sits on every Python server's launch path.
The helper's names load `mcp_tether.tether` on first access; heavier parts (probe, lab,
scan) load on first use of their own modules.

    import mcp_tether

    @mcp_tether.on_shutdown
    def close_pool() -> None: ...

    mcp_tether.run(mcp)          # instead of mcp.run()
"""

from __future__ import annotations

from mcp_tether import _launch  # noqa: F401  # (pid, ppid) at first import, taken now

# Not `from typing import ...`: typing costs ~15 ms to import, on every server launch.
TYPE_CHECKING = False

__version__ = "0.1.0"

__all__ = ["__version__", "on_shutdown", "run", "tethered", "ShutdownCoordinator"]

# Public name -> module that defines it, imported on first attribute access (PEP 562).
_LAZY = {
    "on_shutdown": "mcp_tether.tether",
    "run": "mcp_tether.tether",
    "tethered": "mcp_tether.tether",
    "ShutdownCoordinator": "mcp_tether.tether",
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from mcp_tether.tether import ShutdownCoordinator, on_shutdown, run, tethered


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_tether' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
