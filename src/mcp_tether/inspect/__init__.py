"""`inspect`: which MCP SDKs are installed here, and what their stdio server does at EOF.

    from mcp_tether.inspect import inspect_path, sdks_for_command
    for sdk in inspect_path("node_modules"):
        sdk.package, sdk.version, sdk.stdin_events, sdk.exits_on_eof

Every answer is read from the installed transport's own source (see `node.py`,
`python.py`), never from a table of versions. Results are `Transport`s (`model.py`);
`Transport.to_dict()` is the JSON schema: `language, package, version, path,
transport_file, delegates_to, stdin_events, stdout_events, signals, parent_watch,
exits_on_eof (true/false/null), notes`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from mcp_tether.errors import ConfigError, UsageError
from mcp_tether.inspect.model import NodeTransport, Transport
from mcp_tether.inspect.node import (
    NODE_PACKAGES,
    find_node_modules,
    inspect_node_package,
    scan_node_modules,
)
from mcp_tether.inspect.node_imports import bin_of, node_uses
from mcp_tether.inspect.python import find_site_packages, scan_site_packages
from mcp_tether.inspect.uses import (
    Uses,
    guarded_command,
    npx_package_dirs,
    uses_for_command,
    uvx_site_packages,
)

__all__ = ["inspect_path", "sdks_for_command", "server_uses", "npx_package_dirs",
           "uvx_site_packages", "guarded_command", "Transport", "NodeTransport", "Uses"]


def inspect_path(path: str | os.PathLike[str] | None = None) -> list[Transport]:
    """Every MCP SDK under `path` (node_modules, venv, site-packages, or any tree
    holding them); the current interpreter's when `path` is None."""
    seen: set[Path] = set()
    out: list[Transport] = []
    root = None if path is None else Path(path).expanduser().resolve()
    if root is not None:
        if not root.exists():
            raise UsageError(f"{path}: no such file or directory")
        if (root / "package.json").is_file():
            _check_package_json(root / "package.json")
            info = inspect_node_package(root)  # PATH is a package folder itself
            if info and info.package in NODE_PACKAGES:
                return [info]
            # A server package: what its entry point loads first, then the others.
            out = _package_uses(root)
            seen |= {Path(u.path).resolve() for u in out if u.path}
            for nm in find_node_modules(root):
                for other in scan_node_modules(nm, seen):
                    other.notes.append("installed here, not what the entry point loads"
                                       if out else "installed here")
                    out.append(other)
            return out
        for nm in find_node_modules(root):
            out += scan_node_modules(nm, seen)
    for site in find_site_packages(root):
        out += scan_site_packages(site, seen)
    return out


def _check_package_json(path: Path) -> None:
    """The folder asked about is a package: a package.json that is not a JSON object is
    said, in one line with its place, not taken for "no MCP SDK found"."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(str(path), f"not JSON ({exc.msg})", line=exc.lineno,
                          column=exc.colno) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), f"cannot be read ({exc})") from None
    if not isinstance(doc, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
        raise ConfigError(str(path), f"not a JSON object ({kind.get(type(doc), 'a number')})")


def _package_uses(root: Path) -> list[Transport]:
    """The SDK a server package's own entry point loads (a bundled one included)."""
    entry = bin_of(root)
    if entry is None:
        return []
    u = node_uses(entry)
    return u.as_inspect() if u.found or u.package else []  # an unknown SDK, by its name


def server_uses(argv: list[str], cwd: str | None = None, pid: int | None = None) -> Uses:
    """The one answer to "which SDK does this server load" (`inspect.uses.Uses`)."""
    return uses_for_command(argv, cwd, pid)


def sdks_for_command(argv: list[str], cwd: str | None = None) -> list[Transport]:
    """What the server `argv` starts loads, as one `inspect` finding with `state`
    ("sdk", "none", "unknown"), `label` and `how` (see `uses`): the SDK its own entry
    point reaches, never merely the first one installed nearby. Never raises."""
    return server_uses(list(argv), cwd).as_inspect()
