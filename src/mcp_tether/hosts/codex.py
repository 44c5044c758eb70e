"""OpenAI Codex CLI: `~/.codex/config.toml` (or `$CODEX_HOME`), `[mcp_servers.NAME]`.

Source: github.com/openai/codex docs/config.md ("MCP servers": `command`, `args`, `env`,
`cwd`, `enabled`, `startup_timeout_sec`; `url` for streamable HTTP; CODEX_HOME moves the
folder; a trusted project's `.codex/config.toml` is read too). TOML, edited with
tomlkit so that every other byte stays as it was.
"""

from __future__ import annotations

from pathlib import Path

from mcp_tether.hosts.base import Host
from mcp_tether.hosts.model import ConfigFile, Machine, Shape

NAME = "codex"
DOC = "https://github.com/openai/codex/blob/main/docs/config.md"


def files(m: Machine) -> list[ConfigFile]:
    home = Path(m.var("CODEX_HOME") or m.home / ".codex")
    return [ConfigFile(NAME, "user", home / "config.toml", "toml", DOC),
            *m.project(NAME, DOC, ".codex/config.toml", fmt="toml")]


HOST = Host(NAME, "Codex CLI", Shape(tables=(("mcp_servers",),)), files)
