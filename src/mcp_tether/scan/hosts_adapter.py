"""The one place the scan reaches into host config discovery (`mcp_tether.hosts`).

The `hosts` capability is being restructured into a package; when its public names
move, this file is the one-line fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

__all__ = ["configured_servers"]


def configured_servers(*, home: str | None = None, cwd: str | None = None,
                       config: str | None = None,
                       observed: Any = None) -> tuple[list[Any], list[Any]]:
    """(entries, errors) of every discovered host config, or of `config` alone.
    `observed` records what discovery looked at (`config_index.Observed`)."""
    from pathlib import Path

    from mcp_tether import hosts

    if config is not None:
        return hosts.configured_servers(config=config)
    kwargs: dict[str, Any] = {"observed": observed}
    if home is not None:
        kwargs["home"] = Path(home)
    if cwd is not None:
        kwargs["cwd"] = Path(cwd)
    return hosts.configured_servers(**kwargs)
