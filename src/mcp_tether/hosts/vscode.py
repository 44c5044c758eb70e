"""VS Code and VSCodium: `mcp.json` (user, every profile, workspace), and the older homes.

Sources: code.visualstudio.com/docs/copilot/reference/mcp-configuration (`servers` and
`inputs`; `.vscode/mcp.json`; the user `mcp.json` of each profile, so
`User/profiles/<id>/mcp.json` too; `envFile`, `cwd`, `dev: {watch, debug}`; the
portable `.mcp.json` at the workspace root; predefined variables
`${workspaceFolder}`, `${userHome}`, `${env:X}`, `${input:id}`), and
code.visualstudio.com/docs/configure/settings (the `"mcp"` section of `settings.json`
and of a `.code-workspace` file's `settings`, the older home of servers). VSCodium
keeps the same layout under `VSCodium/User`; the Flatpak builds under `~/.var/app`.
"""

from __future__ import annotations

from pathlib import Path

from mcp_tether.hosts.base import Host
from mcp_tether.hosts.model import ConfigFile, Machine, ServerEntry, Shape

NAME = "vscode"
DOC = "https://code.visualstudio.com/docs/copilot/reference/mcp-configuration"
PRODUCTS = ("Code", "Code - Insiders", "VSCodium", "VSCodium - Insiders")
FLATPAKS = (("com.visualstudio.code", "Code"), ("com.vscodium.codium", "VSCodium"))


def user_dirs(m: Machine) -> list[Path]:
    """Every `User` folder of a VS Code build on this OS (existing or not)."""
    dirs = [m.app_data / product / "User" for product in PRODUCTS]
    if m.platform == "linux":
        dirs += [m.home / ".var" / "app" / app / "config" / product / "User"
                 for app, product in FLATPAKS]
    return dirs


def _profiles(m: Machine, user: Path) -> list[Path]:
    return [p for p in m.children(user / "profiles") if p.is_dir()]


def files(m: Machine) -> list[ConfigFile]:
    out = []
    for user in user_dirs(m):
        for folder in (user, *_profiles(m, user)):
            out.append(ConfigFile(NAME, "user", folder / "mcp.json", source=DOC))
            out.append(ConfigFile(NAME, "user", folder / "settings.json", source=DOC,
                                  general=True))
    if m.cwd is not None:
        out.append(ConfigFile(NAME, "project", m.cwd / ".vscode" / "mcp.json", source=DOC))
        out.append(ConfigFile(NAME, "project", m.cwd / ".vscode" / "settings.json", source=DOC,
                              general=True))
        out.append(ConfigFile(NAME, "project", m.cwd / ".mcp.json", source=DOC))
        out += [ConfigFile(NAME, "project", w, source=DOC, general=True)
                for w in m.children(m.cwd, "*.code-workspace")]
    return out


def dev_debug(entry: ServerEntry, m: Machine) -> str | None:
    dev = entry.extra.get("dev")
    if isinstance(dev, dict) and dev.get("debug"):
        return "VS Code dev.debug attaches a debugger to a node/python command: not to the guard"
    return None


SHAPE = Shape(tables=(("servers",), ("mcp", "servers"), ("settings", "mcp", "servers"),
                      ("mcpServers",)))
HOST = Host(NAME, "VS Code", SHAPE, files, variables="vscode", checks=(dev_debug,))
