"""Kiro: `~/.kiro/settings/mcp.json` and a workspace's `.kiro/settings/mcp.json`.

Source: kiro.dev/docs/mcp/configuration (locations, `mcpServers`, `disabled`,
`autoApprove`, remote `url`, `${VAR}` environment references).
"""

from __future__ import annotations

from mcp_tether.hosts.base import STANDARD, Host
from mcp_tether.hosts.model import ConfigFile, Machine

NAME = "kiro"
DOC = "https://kiro.dev/docs/mcp/configuration/"


def files(m: Machine) -> list[ConfigFile]:
    return [ConfigFile(NAME, "user", m.home / ".kiro" / "settings" / "mcp.json", source=DOC),
            *m.project(NAME, DOC, ".kiro/settings/mcp.json")]


HOST = Host(NAME, "Kiro", STANDARD, files, variables="dollar-braces")
