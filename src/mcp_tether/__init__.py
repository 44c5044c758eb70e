"""mcp-tether: make MCP stdio servers die with their client, and prove it.

Importing this package is cheap on purpose (stdlib only, and nothing beyond `_launch`
and `_lazy` until a name is used): the library helper sits on every Python server's
launch path.
The helper's names load `mcp_tether.tether` on first access; heavier parts (probe, lab,
scan) load on first use of their own modules.

    import mcp_tether

    @mcp_tether.on_shutdown
    def close_pool() -> None: ...

    mcp_tether.run(mcp)          # instead of mcp.run()
"""

from __future__ import annotations

from mcp_tether import (
    _launch,  # noqa: F401  # (pid, ppid) at first import, taken now
    _lazy,
)

# Not `from typing import ...`: typing stays off the start-up of every server launch.
TYPE_CHECKING = False

__version__ = "0.1.0"

__all__ = ["__version__", "on_shutdown", "outside_tether", "run", "tethered",
           "ShutdownCoordinator"]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from mcp_tether.tether import (
        ShutdownCoordinator,
        on_shutdown,
        outside_tether,
        run,
        tethered,
    )

__getattr__, __dir__ = _lazy.attach(__name__, dict.fromkeys(
    ("on_shutdown", "outside_tether", "run", "tethered", "ShutdownCoordinator"),
    "mcp_tether.tether"))
