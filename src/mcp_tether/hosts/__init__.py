"""Host config files: where every host keeps its servers, reading them, and wrapping them.

The rooms (one job each):
- `model`: the records handed out (`ConfigFile`, `ServerEntry`, `ChangeResult`, `Machine`)
  and what reading a file gives (`Shape`, `Launch`, `Spot`, `Doc`);
- `base`: what a host is (files, entry shape, variables, wrap hazards) and entry reading;
- one module per host (`claude_desktop`, `claude_code`, `cursor`, `vscode`, `windsurf`,
  `zed`, `copilot_cli`, `gemini_cli`, `cline`, `kiro`, `codex`, `opencode`, `goose`),
  gathered by `locations` (the host table, discovery);
- `jsonc`, `yamlspan`, `toml`: the three formats, read with exact spans (JSONC, YAML) or
  a round-trip library (TOML); `read`: safe reading of one file into entries;
- `spans`, `edit`, `diff`, `atomic`: the byte-exact edits, the wrap/unwrap decision and
  its verification, the diff, the crash-safe write with backups in the state folder;
- `safety`: what wrapping would break, version-controlled trees; `expand`: variables,
  `envFile` and `cwd` as each host resolves them; `cli`: the commands.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mcp_tether.errors import ConfigError
from mcp_tether.hosts import atomic
from mcp_tether.hosts.edit import change, unwrap, wrap
from mcp_tether.hosts.locations import (
    ANY_SHAPE,
    HOSTS,
    REGISTRY,
    config_locations,
    discover,
    format_of,
    guess_host,
    host_of,
    searched,
)
from mcp_tether.hosts.model import ChangeResult, ConfigFile, Machine, ServerEntry
from mcp_tether.hosts.read import load

__all__ = [
    "HOSTS",
    "REGISTRY",
    "ConfigFile",
    "ServerEntry",
    "ChangeResult",
    "Machine",
    "config_locations",
    "discover",
    "searched",
    "guess_host",
    "read_servers",
    "configured_servers",
    "wrap",
    "unwrap",
    "change",
    "backup_path",
]


def backup_path(path: Path) -> Path:
    """Where the next backup of `path` goes (in the per-user state folder)."""
    real = Path(path).resolve()
    existing = atomic.backups_of(real)
    folder = atomic.backup_dir(real)
    n = len(existing)
    return folder / (f"{real.name}.bak" if n == 0 else f"{real.name}.bak.{n}")


def read_servers(path: Path | str, host: str | None = None, *,
                 scope: str = "config") -> list[ServerEntry]:
    """Every server entry of one config file (stdio and remote), in file order.

    `host` picks the entry shape and tables; None accepts any known JSON shape (and
    the Codex/Goose shapes for .toml/.yaml files). `scope` is the file's
    (`ConfigFile.scope`), carried by each entry: it says where the host's workspace is.
    """
    path = Path(path)
    fmt = format_of(path, host)
    h = host_of(host)
    if h is not None:
        shape = h.shape
    elif fmt == "toml":
        shape = REGISTRY["codex"].shape
    elif fmt == "yaml":
        shape = REGISTRY["goose"].shape
    else:
        shape = ANY_SHAPE
    entries = [s.entry for s in load(path, fmt, shape, host).spots]
    for entry in entries:
        entry.scope = scope
    return entries


def configured_servers(
    host: str | None = None,
    config: Path | str | None = None,
    *,
    home: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
    guess: bool = False,
) -> tuple[list[ServerEntry], list[ConfigError]]:
    """All entries of `config` (if given) or of the discovered files of `host` (or all).

    A malformed file does not hide the others: its error comes back in the second list.
    `guess`: a `config` without a `host` is read as the host its path suggests
    (`guess_host`), if any.
    """
    if config is not None:
        path = Path(config)
        host = host or (guess_host(path) if guess else None)
        files = [ConfigFile(host or "", "config", path)]
    else:
        files = discover(host, home=home, cwd=cwd, env=env, platform=platform)
    entries: list[ServerEntry] = []
    errors: list[ConfigError] = []
    for cf in files:
        try:
            entries += read_servers(cf.path, cf.host or None, scope=cf.scope)
        except ConfigError as exc:
            errors.append(exc)
    return entries, errors
