"""`inspect`: which MCP SDKs are installed here, and what their stdio server does at EOF.

    from mcp_tether.inspect import inspect_path, sdks_for_command
    for sdk in inspect_path("node_modules"):
        sdk["package"], sdk["version"], sdk["stdin_events"], sdk["exits_on_eof"]

Every answer is read from the installed transport's own source (see `node.py`,
`python.py`), never from a table of versions. Results are plain dicts (the JSON schema):
`language, package, version, path, transport_file, delegates_to, stdin_events,
stdout_events, signals, parent_watch, exits_on_eof (true/false/null), notes`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mcp_tether.errors import ConfigError, UsageError
from mcp_tether.inspect.node import (
    NODE_PACKAGES,
    find_node_modules,
    inspect_node_package,
    scan_node_modules,
)
from mcp_tether.inspect.python import find_site_packages, scan_site_packages

__all__ = ["inspect_path", "sdks_for_command", "server_uses", "npx_package_dirs", "guarded_command"]


def inspect_path(path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """Every MCP SDK under `path` (node_modules, venv, site-packages, or any tree
    holding them); the current interpreter's when `path` is None."""
    seen: set[Path] = set()
    out: list[dict[str, Any]] = []
    root = None if path is None else Path(path).expanduser().resolve()
    if root is not None:
        if not root.exists():
            raise UsageError(f"{path}: no such file or directory")
        if (root / "package.json").is_file():
            _check_package_json(root / "package.json")
            info = inspect_node_package(root)  # PATH is a package folder itself
            if info and info["package"] in NODE_PACKAGES:
                return [info]
            # A server package: what its entry point loads first, then the others.
            out = _package_uses(root)
            seen |= {Path(u["path"]).resolve() for u in out if u.get("path")}
            for nm in find_node_modules(root):
                for other in scan_node_modules(nm, seen):
                    other["notes"].append("installed here, not what the entry point loads"
                                          if out else "installed here")
                    out.append(other)
            return out
        for nm in find_node_modules(root):
            out += scan_node_modules(nm, seen)
    for site in find_site_packages(root):
        out += scan_site_packages(site, seen)
    return out


def _check_package_json(path: Path) -> None:
    """The folder asked about is a package: a package.json that is not JSON is said, in
    one line with its place, not taken for "no MCP SDK found"."""
    import json

    try:
        json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(str(path), f"not JSON ({exc.msg})", line=exc.lineno,
                          column=exc.colno) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), f"cannot be read ({exc})") from None


def _package_uses(root: Path) -> list[dict[str, Any]]:
    """The SDK a server package's own entry point loads (a bundled one included)."""
    from mcp_tether.inspect.uses import _bin_of, node_uses

    entry = _bin_of(root)
    if entry is None:
        return []
    u = node_uses(entry)
    return u.as_inspect() if u.found else []


def server_uses(argv: list[str], cwd: str | None = None, pid: int | None = None) -> Any:
    """The one answer to "which SDK does this server load" (`inspect.uses.Uses`)."""
    from mcp_tether.inspect.uses import uses_for_command

    return uses_for_command(argv, cwd, pid)


def npx_package_dirs(package: str) -> list[Path]:
    """Where `npx <package>` installed it: the npm cache's `_npx/*/node_modules`."""
    cache = (
        os.environ.get("npm_config_cache")  # noqa: SIM112  # npm's own lower-case name
        or os.path.expanduser("~/.npm")
    )
    name = package.rsplit("@", 1)[0] if package.rfind("@") > 0 else package
    out = []
    for nm in sorted(Path(cache, "_npx").glob("*/node_modules")):
        if (nm / name / "package.json").is_file():
            out.append(nm / name)
    return out


def guarded_command(argv: list[str]) -> list[str] | None:
    """The server behind a guard command line (`mcp-tether run [OPTIONS] -- CMD`, however
    spelled: see `guard.argv`), or None when argv is not one."""
    from mcp_tether.guard.argv import parse_guard_argv

    got = parse_guard_argv(list(argv))
    return None if got is None else got.command


def uvx_site_packages(package: str) -> list[Path]:
    """Where `uvx <package>` installed it: uv's cache environments, newest first."""
    base = os.environ.get("UV_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "uv")
    name = package.split("@", 1)[0].split("==", 1)[0].replace("-", "_").lower()
    hits = Path(base).glob(f"archive-v0/*/lib/python*/site-packages/{name}-*.dist-info")
    sites = {h.parent for h in hits}
    return sorted(sites, key=lambda p: p.stat().st_mtime, reverse=True)


def sdks_for_command(argv: list[str], cwd: str | None = None) -> list[dict[str, Any]]:
    """What the server `argv` starts loads, as one `inspect` record with `state`
    ("sdk", "none", "unknown"), `label` and `how` (see `uses`): the SDK its own entry
    point reaches, never merely the first one installed nearby. Never raises."""
    return list(server_uses(list(argv), cwd).as_inspect())
