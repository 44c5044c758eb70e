"""Goose: `config.yaml`, `extensions.NAME` = {type: stdio, cmd, args, envs, enabled}.

Source: block.github.io/goose/docs/guides/config-files (`~/.config/goose/config.yaml` on
macOS and Linux, `%APPDATA%\\Block\\goose\\config\\config.yaml` on Windows; extensions
with `cmd`, `args`, `envs`, `enabled`, `type` stdio / builtin / sse / streamable_http).
YAML, edited at the exact spans of the values so that every other byte stays.
"""

from __future__ import annotations

from mcp_tether.hosts.base import Host
from mcp_tether.hosts.model import ConfigFile, Machine, Shape

NAME = "goose"
DOC = "https://block.github.io/goose/docs/guides/config-files"


def files(m: Machine) -> list[ConfigFile]:
    if m.platform == "win32":
        path = m.app_data / "Block" / "goose" / "config" / "config.yaml"
    else:
        path = m.config_home / "goose" / "config.yaml"
    return [ConfigFile(NAME, "user", path, "yaml", DOC)]


SHAPE = Shape(tables=(("extensions",),), command_key="cmd", env_keys=("envs", "env"),
              stdio_types=(None, "stdio"), remote_keys=("uri", "url"))
HOST = Host(NAME, "Goose", SHAPE, files)
