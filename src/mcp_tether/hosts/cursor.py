"""Cursor: `~/.cursor/mcp.json` and a project's `.cursor/mcp.json`, `mcpServers`.

Source: docs.cursor.com "Model Context Protocol" (locations, `type`, `envFile`, and
the variables `${env:NAME}`, `${userHome}`, `${workspaceFolder}`,
`${workspaceFolderBasename}`, `${pathSeparator}` / `${/}`).
"""

from __future__ import annotations

from mcp_tether.hosts.base import STANDARD, Host
from mcp_tether.hosts.model import ConfigFile, Machine

NAME = "cursor"
DOC = "https://docs.cursor.com/context/model-context-protocol"


def files(m: Machine) -> list[ConfigFile]:
    return [ConfigFile(NAME, "user", m.home / ".cursor" / "mcp.json", source=DOC),
            *m.project(NAME, DOC, ".cursor/mcp.json")]


HOST = Host(NAME, "Cursor", STANDARD, files, variables="cursor")
