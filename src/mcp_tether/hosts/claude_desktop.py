"""Claude Desktop: `claude_desktop_config.json`, `mcpServers` of {command, args, env}.

Sources: modelcontextprotocol.io "Connect to local MCP servers" (macOS and Windows
paths); Windows MSIX installs (the default installer since early 2026) read the copy
inside the package's virtualised AppData: anthropics/claude-code#26073. Linux has no
official build; community builds use the XDG path.
"""

from __future__ import annotations

from mcp_tether.hosts.base import STANDARD, Host
from mcp_tether.hosts.model import ConfigFile, Machine

NAME = "claude-desktop"
DOC = "https://modelcontextprotocol.io/docs/develop/connect-local-servers"
MSIX = "https://github.com/anthropics/claude-code/issues/26073"


def files(m: Machine) -> list[ConfigFile]:
    out = []
    if m.platform == "win32":
        packages = m.local_app_data / "Packages"
        for pkg in m.children(packages, "Claude_*"):
            path = pkg / "LocalCache" / "Roaming" / "Claude" / "claude_desktop_config.json"
            out.append(ConfigFile(NAME, "user", path, source=MSIX))
    out.append(ConfigFile(NAME, "user", m.app_data / "Claude" / "claude_desktop_config.json",
                          source=DOC))
    return out


HOST = Host(NAME, "Claude Desktop", STANDARD, files)
