"""Zed: `settings.json` (JSONC), `context_servers` of {command, args, env}.

Source: zed.dev/docs/ai/mcp and zed.dev/docs/configuring-zed (`~/.config/zed/settings.json`
on Linux and macOS, honouring XDG_CONFIG_HOME; `%APPDATA%\\Zed\\settings.json` on Windows;
project `.zed/settings.json`; the Flatpak build `dev.zed.Zed` keeps its config under
`~/.var/app/dev.zed.Zed/config/zed/`). Older entries nest `{path, args, env}` under
`command` (`"source": "custom"`). An entry with `"remote": true` is started on the
remote (SSH/WSL) machine, where this machine's mcp-tether path means nothing.
"""

from __future__ import annotations

from mcp_tether.hosts.base import Host
from mcp_tether.hosts.model import ConfigFile, Machine, ServerEntry, Shape

NAME = "zed"
DOC = "https://zed.dev/docs/configuring-zed"


def files(m: Machine) -> list[ConfigFile]:
    if m.platform == "win32":
        out = [ConfigFile(NAME, "user", m.app_data / "Zed" / "settings.json", source=DOC)]
    else:
        out = [ConfigFile(NAME, "user", m.config_home / "zed" / "settings.json", source=DOC)]
    if m.platform == "linux":
        flatpak = m.home / ".var" / "app" / "dev.zed.Zed" / "config" / "zed" / "settings.json"
        out.append(ConfigFile(NAME, "user", flatpak, source=DOC))
    return out + m.project(NAME, DOC, ".zed/settings.json")


def runs_remotely(entry: ServerEntry, m: Machine) -> str | None:
    if entry.extra.get("remote") is True:
        return "Zed starts it on the remote machine (\"remote\": true), not here"
    return None


HOST = Host(NAME, "Zed", Shape(tables=(("context_servers",),)), files, checks=(runs_remotely,))
