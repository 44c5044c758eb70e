"""Cline: `cline_mcp_settings.json` in the editor's global storage, or the CLI's data dir.

Source: docs.cline.bot/mcp/configuring-mcp-servers ("Configure MCP Servers" opens
`<editor user dir>/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json`;
`mcpServers`, `disabled`, `autoApprove`, remote `url` with `type` sse/streamableHttp);
the Cline CLI keeps the same file under `~/.cline/data/settings/`.
"""

from __future__ import annotations

from mcp_tether.hosts.base import STANDARD, Host
from mcp_tether.hosts.model import ConfigFile, Machine
from mcp_tether.hosts.vscode import user_dirs

NAME = "cline"
DOC = "https://docs.cline.bot/mcp/configuring-mcp-servers"
TAIL = ("globalStorage", "saoudrizwan.claude-dev", "settings", "cline_mcp_settings.json")


def files(m: Machine) -> list[ConfigFile]:
    out = [ConfigFile(NAME, "user", user.joinpath(*TAIL), source=DOC) for user in user_dirs(m)]
    for editor in ("Cursor", "Windsurf"):  # Cline installed in a VS Code fork
        out.append(ConfigFile(NAME, "user", (m.app_data / editor / "User").joinpath(*TAIL),
                              source=DOC))
    out.append(ConfigFile(NAME, "user", m.home / ".cline" / "data" / "settings"
                          / "cline_mcp_settings.json", source=DOC))
    return out


HOST = Host(NAME, "Cline", STANDARD, files)
