"""Gemini CLI: `~/.gemini/settings.json`, `.gemini/settings.json`, the system settings.

Source: google-gemini/gemini-cli docs/cli/configuration.md (user, project and system
files: `/etc/gemini-cli/settings.json`, `/Library/Application Support/GeminiCli/settings.json`,
`C:\\ProgramData\\gemini-cli\\settings.json`, or GEMINI_CLI_SYSTEM_SETTINGS_PATH;
`mcpServers` of {command, args, env, cwd} with `url`/`httpUrl` for remote servers;
`$VAR` and `${VAR}` expanded in settings values).
"""

from __future__ import annotations

from pathlib import Path

from mcp_tether.hosts.base import Host
from mcp_tether.hosts.model import ConfigFile, Machine, Shape

NAME = "gemini-cli"
DOC = "https://github.com/google-gemini/gemini-cli/blob/main/docs/cli/configuration.md"


def files(m: Machine) -> list[ConfigFile]:
    out = [ConfigFile(NAME, "user", m.home / ".gemini" / "settings.json", source=DOC),
           *m.project(NAME, DOC, ".gemini/settings.json")]
    system = m.var("GEMINI_CLI_SYSTEM_SETTINGS_PATH")
    if system:
        path = Path(system)
    elif m.platform == "win32":
        path = Path(m.var("ProgramData") or "C:\\ProgramData") / "gemini-cli" / "settings.json"
    elif m.platform == "darwin":
        path = m.root / "Library" / "Application Support" / "GeminiCli" / "settings.json"
    else:
        path = m.root / "etc" / "gemini-cli" / "settings.json"
    out.append(ConfigFile(NAME, "managed", path, source=DOC))
    return out


HOST = Host(NAME, "Gemini CLI", Shape(tables=(("mcpServers",),)), files, variables="dollar")
