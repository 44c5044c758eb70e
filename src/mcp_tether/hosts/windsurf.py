"""Windsurf (and Windsurf Next): `~/.codeium/windsurf[-next]/mcp_config.json`.

Source: docs.windsurf.com/windsurf/cascade/mcp (the file, `serverUrl`/`url` for remote
servers, interpolation of `${env:VAR}` in command, args and env, and the team
allowlist). The team allowlist (a regex per command and per argument, with the same
argument count) lives in the team's admin settings on Windsurf's servers, not on this
machine, so wrap cannot see it: that is a documented note, not a detected skip.
"""

from __future__ import annotations

from mcp_tether.hosts.base import STANDARD, Host
from mcp_tether.hosts.model import ConfigFile, Machine

NAME = "windsurf"
DOC = "https://docs.windsurf.com/windsurf/cascade/mcp"


def files(m: Machine) -> list[ConfigFile]:
    base = m.home / ".codeium"
    return [
        ConfigFile(NAME, "user", base / "windsurf" / "mcp_config.json", source=DOC),
        ConfigFile(NAME, "user", base / "windsurf-next" / "mcp_config.json", source=DOC),
    ]


HOST = Host(
    NAME, "Windsurf", STANDARD, files, variables="windsurf",
    notes=("a team MCP allowlist (admin settings, server side) matches the command and each "
           "argument: whitelist the wrapped form (mcp-tether, run, --, ...) too",),
)
