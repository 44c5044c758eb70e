"""Claude Code: `~/.claude.json` (user and local scope), `.mcp.json` (project), managed files.

Sources: docs.anthropic.com/en/docs/claude-code/mcp (scopes: user and local servers in
`~/.claude.json`, local ones under `projects["/abs/dir"].mcpServers`; project servers
in `.mcp.json`; `${VAR}` and `${VAR:-default}` expanded in command, args, env, url and
headers) and .../claude-code/settings (`CLAUDE_CONFIG_DIR` moves `~/.claude.json`;
the managed-settings folder: `/etc/claude-code`, `/Library/Application Support/ClaudeCode`,
`C:\\Program Files\\ClaudeCode`, holding `managed-mcp.json` and `managed-settings.json`
whose `allowedMcpServers` may match servers by exact `serverCommand`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_tether.hosts.base import Host, is_tether_name
from mcp_tether.hosts.model import ConfigFile, Machine, ServerEntry, Shape

if TYPE_CHECKING:
    from typing import Any

NAME = "claude-code"
DOC = "https://docs.anthropic.com/en/docs/claude-code/mcp"
SETTINGS_DOC = "https://docs.anthropic.com/en/docs/claude-code/settings"


def managed_dir(m: Machine) -> Path:
    if m.platform == "win32":
        return Path(m.var("ProgramFiles") or "C:\\Program Files") / "ClaudeCode"
    if m.platform == "darwin":
        return m.root / "Library" / "Application Support" / "ClaudeCode"
    return m.root / "etc" / "claude-code"


def files(m: Machine) -> list[ConfigFile]:
    config_dir = m.var("CLAUDE_CONFIG_DIR")
    user = Path(config_dir) / ".claude.json" if config_dir else m.home / ".claude.json"
    return [ConfigFile(NAME, "user", user, source=SETTINGS_DOC), *m.project(NAME, DOC, ".mcp.json"),
            ConfigFile(NAME, "managed", managed_dir(m) / "managed-mcp.json", source=DOC)]


def managed_allowlist(entry: ServerEntry, m: Machine) -> str | None:
    """Managed `allowedMcpServers` with `serverCommand` rules match command + args exactly."""
    path = managed_dir(m) / "managed-settings.json"
    try:
        rules = json.loads(path.read_text(encoding="utf-8")).get("allowedMcpServers")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(rules, list):
        return None
    commands: list[list[Any]] = [
        r["serverCommand"] for r in rules
        if isinstance(r, dict) and isinstance(r.get("serverCommand"), list) and r["serverCommand"]
    ]
    if not commands or any(isinstance(c[0], str) and is_tether_name(c[0]) for c in commands):
        return None
    return (f"Claude Code's managed allowedMcpServers ({path}) matches command and args "
            "exactly: the wrapped command would be blocked")


SHAPE = Shape(tables=(("mcpServers",), ("projects", "*", "mcpServers")))
HOST = Host(NAME, "Claude Code", SHAPE, files, variables="claude-code",
            checks=(managed_allowlist,))
