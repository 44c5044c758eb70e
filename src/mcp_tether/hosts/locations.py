"""Every supported host, and every file each one reads on this (or a faked) machine.

Guarantees: the host table is the list of host modules below, in display order; a new
host is one new module plus one line here. `config_locations` lists every place
whether or not it exists (for `hosts` to say where it looked); `discover` keeps the
ones that are regular files. A path read by two hosts (`.mcp.json`: Claude Code,
VS Code, Copilot CLI) is reported once, under the first host, unless a host is asked
for by name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_tether.hosts import (
    claude_code,
    claude_desktop,
    cline,
    codex,
    copilot_cli,
    cursor,
    gemini_cli,
    goose,
    kiro,
    opencode,
    vscode,
    windsurf,
    zed,
)
from mcp_tether.hosts.base import Host
from mcp_tether.hosts.model import ConfigFile, Machine, Shape
from mcp_tether.platform import os_name  # the OS as data: the hosts' tables' key

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["REGISTRY", "HOSTS", "ANY_SHAPE", "config_locations", "discover", "searched",
           "host_of", "format_of", "guess_host"]

REGISTRY: dict[str, Host] = {
    h.HOST.name: h.HOST
    for h in (claude_desktop, claude_code, cursor, vscode, windsurf, zed, copilot_cli,
              gemini_cli, cline, kiro, codex, opencode, goose)
}
HOSTS: tuple[str, ...] = tuple(REGISTRY)
# `--config FILE` with no host: any of the JSON shapes above.
ANY_SHAPE = Shape(tables=(("mcpServers",), ("projects", "*", "mcpServers"), ("servers",),
                          ("mcp", "servers"), ("context_servers",)))


def host_of(name: str | None) -> Host | None:
    if not name:
        return None
    if name not in REGISTRY:
        raise ValueError(f"unknown host {name!r}")
    return REGISTRY[name]


def format_of(path: Path, host: str | None = None) -> str:
    """json, toml or yaml: by the file's suffix (hosts have one format each)."""
    suffix = path.suffix.lower()
    if suffix == ".toml":
        return "toml"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    return "json"


# (how a path ends, host): which host a `--config FILE` given without `--host` belongs to.
_GUESSES: tuple[tuple[tuple[str, ...], str], ...] = (
    ((".vscode", "mcp.json"), "vscode"),
    ((".vscode", "settings.json"), "vscode"),
    ((".cursor", "mcp.json"), "cursor"),
    ((".zed", "settings.json"), "zed"),
    (("zed", "settings.json"), "zed"),
    ((".gemini", "settings.json"), "gemini-cli"),
    ((".kiro", "settings", "mcp.json"), "kiro"),
    ((".copilot", "mcp-config.json"), "copilot-cli"),
    ((".mcp.json",), "claude-code"),
    ((".claude.json",), "claude-code"),
    (("claude_desktop_config.json",), "claude-desktop"),
    (("mcp_config.json",), "windsurf"),
    (("cline_mcp_settings.json",), "cline"),
    (("opencode.json",), "opencode"),
    (("opencode.jsonc",), "opencode"),
    ((".codex", "config.toml"), "codex"),
    (("goose", "config.yaml"), "goose"),
)


def guess_host(path: Path) -> str | None:
    """The host whose file this is, by its name and folder (None: unknown)."""
    parts = Path(path).parts
    if Path(path).suffix == ".code-workspace":
        return "vscode"
    for tail, host in _GUESSES:
        if tuple(parts[-len(tail):]) == tail:
            return host
    return None


def config_locations(
    platform: str, home: Path, env: Mapping[str, str], cwd: Path | None = None,
    *, root: Path | None = None,
) -> list[ConfigFile]:
    """Every place a known host may keep MCP servers, existing or not, in search order.

    `platform` is a `sys.platform` value; `home` and `env` stand for `Path.home()` and
    `os.environ`; project files are looked up in `cwd`; system files under `root`.
    """
    m = Machine(platform, Path(home), env, Path(cwd) if cwd is not None else None,
                Path("/") if root is None else root)
    return searched(None, m)


def searched(host: str | None, machine: Machine) -> list[ConfigFile]:
    """The places looked at for `host` (or every host) on `machine`."""
    hosts = [REGISTRY[host]] if host else list(REGISTRY.values())
    out: list[ConfigFile] = []
    seen: set[Path] = set()
    for h in hosts:
        for cf in h.files(machine):
            if cf.path not in seen:  # with cwd == home, files can coincide
                seen.add(cf.path)
                out.append(cf)
    return out


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, RuntimeError):  # a symlink loop: reported when read, not here
        return path.is_symlink()


def discover(
    host: str | None = None,
    *,
    home: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
    root: Path | None = None,
) -> list[ConfigFile]:
    """The config files of `host` (or of every known host) that exist here.

    `env` defaults to `os.environ`, but to `{}` when `home` is given: a fake home must
    not lead, through a real XDG_CONFIG_HOME or APPDATA, to the real config files.
    """
    host_of(host)
    if env is None:
        env = os.environ if home is None else {}
    m = Machine(platform or os_name(), Path.home() if home is None else Path(home), env,
                Path.cwd() if cwd is None else Path(cwd), Path("/") if root is None else root)
    return [cf for cf in searched(host, m) if _is_file(cf.path)]
