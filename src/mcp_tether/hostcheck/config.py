"""The recorder, written into a host's own config file in a throwaway HOME and project.

    place = write_recorder("claude-code", home, project, argv)   # -> Placement
    place.edit(argv2)                                            # the reconnect's edit

Guarantees:
- Where the file goes and how an entry looks come from the hosts package (`hosts/`):
  the host's first user-scope file on a Linux machine whose HOME is `home` and whose
  project folder is `project`, its first server table, its command/args keys. Nothing
  outside `home` and `project` is written.
- Files are written atomically (a rename), and read back with the
  host's own reader (`hosts.read_servers`): an entry the host would not find as the
  recorder's command is an error here, not a silent no-op at run time.
- JSON and TOML hosts are supported; YAML (Goose) is refused with one line: our hosts
  package reads YAML spans but has no YAML writer, and a hand-made one would be a second
  YAML emitter to keep right.
- What else a host needs before it starts a project's servers is written beside the
  entry (`NEEDS`): Gemini CLI starts none, not even user-scope ones, in a folder it does
  not trust, so the throwaway project goes into `~/.gemini/trustedFolders.json`.
- Hosts that `mcp-tether hosts` does not know but that keep a known host's file shape in
  a folder of their own (`FORKS`: Qwen Code, a Gemini CLI fork, in `~/.qwen/`) are
  written with that host's shape and read back with its reader.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_tether.errors import UsageError
from mcp_tether.hosts import read_servers
from mcp_tether.hosts.locations import HOSTS, REGISTRY
from mcp_tether.hosts.model import Machine, Shape

__all__ = ["ENTRY_NAME", "Placement", "write_recorder", "host_names"]

ENTRY_NAME = "mcp-tether-recorder"


# name -> (the host whose shape it keeps, that host's folder under HOME, its own)
FORKS: dict[str, tuple[str, str, str]] = {
    # QwenLM/qwen-code packages/core/src/config/storage.ts: QWEN_DIR = ".qwen"
    "qwen-code": ("gemini-cli", ".gemini", ".qwen"),
}


def host_names() -> tuple[str, ...]:
    return (*HOSTS, *FORKS)


def host_env(home: Path, project: Path, base: dict[str, str]) -> dict[str, str]:
    """The environment of a host run in a throwaway HOME: XDG folders inside it, and npm's
    cache left where it was (so that `npx` hosts keep working offline)."""
    env = dict(base)
    real_home = base.get("HOME") or os.path.expanduser("~")
    env.setdefault("npm_config_cache", os.path.join(real_home, ".npm"))
    env.setdefault("UV_CACHE_DIR", os.path.join(real_home, ".cache", "uv"))
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["XDG_DATA_HOME"] = str(home / ".local" / "share")
    env["XDG_STATE_HOME"] = str(home / ".local" / "state")
    for var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "APPDATA"):
        env.pop(var, None)
    return env


@dataclass
class Placement:
    host: str
    path: Path
    key_path: tuple[str, ...]
    fmt: str
    shape: Shape

    def _entry(self, argv: list[str]) -> dict[str, Any]:
        s = self.shape
        if s.command_is_argv:
            entry: dict[str, Any] = {s.command_key: list(argv)}
        else:
            entry = {s.command_key: argv[0], s.args_key: list(argv[1:])}
        if "stdio" in s.stdio_types:
            entry = {"type": "stdio", **entry}
        return entry

    def render(self, argv: list[str]) -> bytes:
        entry = self._entry(argv)
        if self.fmt == "toml":
            head = ".".join(json.dumps(k) if not k.replace("_", "").isalnum() else k
                            for k in self.key_path)
            lines = [f"[{head}]"] + [f"{k} = {json.dumps(v)}" for k, v in entry.items()]
            return ("\n".join(lines) + "\n").encode()
        doc: dict[str, Any] = {}
        node = doc
        for key in self.key_path[:-1]:
            node = node.setdefault(key, {})
        node[self.key_path[-1]] = entry
        return (json.dumps(doc, indent=2) + "\n").encode()

    def edit(self, argv: list[str]) -> None:
        """Write the entry with `argv` (atomically), and check that the host reads it."""
        # Not hosts.atomic.write_config: its backups go to the user's state folder, and
        # this file is a throwaway one. A rename still makes the edit atomic for a host
        # watching the file.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".mcp-tether-tmp")
        tmp.write_bytes(self.render(argv))
        os.replace(tmp, self.path)
        found = [e for e in read_servers(self.path, self.host) if e.name == ENTRY_NAME]
        if not found or [found[0].command, *found[0].args] != list(argv):
            raise UsageError(f"--host {self.host}: the recorder's entry in {self.path} does "
                             "not read back as written")


def _trust(folder_name: str) -> Callable[[Path, Path], None]:
    def trust(home: Path, project: Path) -> None:
        # gemini-cli packages/cli/src/config/trustedFolders.ts: {path: "TRUST_FOLDER"}
        folder = home / folder_name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "trustedFolders.json").write_text(json.dumps({str(project): "TRUST_FOLDER"}))
    return trust


NEEDS: dict[str, Callable[[Path, Path], None]] = {"gemini-cli": _trust(".gemini"),
                                                  "qwen-code": _trust(".qwen")}


def write_recorder(host: str, home: Path, project: Path, argv: list[str]) -> Placement:
    """Write the recorder's entry into `host`'s first user file under `home`."""
    if host not in host_names():
        raise UsageError(f"unknown host {host!r} (one of: {', '.join(host_names())})")
    shape_of, theirs, ours = FORKS.get(host, (host, "", ""))
    h = REGISTRY[shape_of]
    machine = Machine("linux", home, host_env(home, project, {}), project)
    files = [cf for cf in h.files(machine) if not cf.general and cf.scope in ("user", "project")]
    if not files:
        raise UsageError(f"--host {host}: no config file of this host on Linux")
    cf = files[0]
    if cf.format == "yaml":
        raise UsageError(f"--host {host}: writing YAML configs is not supported; "
                         "use `hostcheck -- HOST-ARGV` with {server}")
    path = cf.path
    if ours:
        path = home / ours / path.relative_to(home / theirs)
    table = tuple(str(project) if k == "*" else k for k in h.shape.tables[0])
    # Read back as the host whose shape it keeps: the fork is not in the hosts package.
    place = Placement(shape_of, path, (*table, ENTRY_NAME), cf.format, h.shape)
    place.edit(argv)
    if host in NEEDS:
        NEEDS[host](home, project)
    return place
