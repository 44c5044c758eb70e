"""GitHub Copilot CLI: `~/.copilot/mcp-config.json` (or `$COPILOT_HOME`), and `.mcp.json`.

Sources: docs.github.com "Using GitHub Copilot CLI" (the file lives in `~/.copilot`);
measured on Copilot CLI 1.0.102: with XDG_CONFIG_HOME set it still reads
`~/.copilot/mcp-config.json` and never `$XDG_CONFIG_HOME/.copilot/` (which
github/docs#41226 describes); code.visualstudio.com MCP configuration
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
    user = Path(copilot_home) if copilot_home else m.home / ".copilot"
    return [ConfigFile(NAME, "user", user / "mcp-config.json", source=DOC),
            *m.project(NAME, VSDOC, ".mcp.json")]


SHAPE = Shape(tables=(("mcpServers",),), stdio_types=(None, "stdio", "local"))
HOST = Host(NAME, "GitHub Copilot CLI", SHAPE, files)
