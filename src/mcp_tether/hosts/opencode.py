"""OpenCode: `opencode.json[c]`, `mcp.NAME` = {type: "local", command: [argv], environment}.

Source: opencode.ai/docs/config (global `~/.config/opencode/opencode.json`, the file
named by OPENCODE_CONFIG, the project's `opencode.json` / `opencode.jsonc`; `{env:VAR}`
and `{file:path}` substitution) and opencode.ai/docs/mcp-servers (`type: "local"`,
`command` as one array, `environment`, `enabled`; `type: "remote"` with `url`).
"""

from __future__ import annotations

from pathlib import Path

from mcp_tether.hosts.base import Host
from mcp_tether.hosts.model import ConfigFile, Machine, Shape

NAME = "opencode"
DOC = "https://opencode.ai/docs/config/"


def files(m: Machine) -> list[ConfigFile]:
    base = m.home / ".config" / "opencode" if m.platform == "win32" else m.config_home / "opencode"
    out = [ConfigFile(NAME, "user", base / f, source=DOC)
           for f in ("opencode.json", "opencode.jsonc", "config.json")]
    named = m.var("OPENCODE_CONFIG")
    if named:
        out.append(ConfigFile(NAME, "user", Path(named), source=DOC))
    return out + m.project(NAME, DOC, "opencode.json", "opencode.jsonc")


SHAPE = Shape(tables=(("mcp",),), env_keys=("environment",), command_is_argv=True,
              stdio_types=("local",))
HOST = Host(NAME, "OpenCode", SHAPE, files, variables="opencode")
