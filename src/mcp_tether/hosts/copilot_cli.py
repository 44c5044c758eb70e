"""GitHub Copilot CLI: `~/.copilot/mcp-config.json` (or `$COPILOT_HOME`), and `.mcp.json`.

Sources: docs.github.com "Using GitHub Copilot CLI" (the file lives in `~/.copilot`,
moved by XDG_CONFIG_HOME: github/docs#41226); code.visualstudio.com MCP configuration
reference (the portable Copilot format: `$COPILOT_HOME/mcp-config.json`, fallback
`~/.copilot/mcp-config.json`, and `.mcp.json` at the workspace root). Entries are
`{type, command, args, env, tools}`; `type: "local"` is a stdio server like "stdio".
"""

from __future__ import annotations

from pathlib import Path

from mcp_tether.hosts.base import Host
from mcp_tether.hosts.model import ConfigFile, Machine, Shape

NAME = "copilot-cli"
DOC = "https://docs.github.com/en/copilot/how-tos/use-copilot-agents/use-copilot-cli"
VSDOC = "https://code.visualstudio.com/docs/copilot/reference/mcp-configuration"


def files(m: Machine) -> list[ConfigFile]:
    copilot_home = m.var("COPILOT_HOME")
    if copilot_home:
        user = Path(copilot_home)
    elif m.var("XDG_CONFIG_HOME"):
        user = m.config_home / ".copilot"
    else:
        user = m.home / ".copilot"
    return [ConfigFile(NAME, "user", user / "mcp-config.json", source=DOC),
            *m.project(NAME, VSDOC, ".mcp.json")]


SHAPE = Shape(tables=(("mcpServers",),), stdio_types=(None, "stdio", "local"))
HOST = Host(NAME, "GitHub Copilot CLI", SHAPE, files)
