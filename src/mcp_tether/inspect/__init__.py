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
import shlex
import shutil
import sys
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

__all__ = ["inspect_path", "sdks_for_command", "npx_package_dirs", "guarded_command"]


def inspect_path(path: str | os.PathLike[str] | None = None) -> list[dict[str, Any]]:
    """Every MCP SDK under `path` (node_modules, venv, site-packages, or any tree
    holding them); the current interpreter's when `path` is None."""
    seen: set[Path] = set()
    out: list[dict[str, Any]] = []
    root = None if path is None else Path(path).expanduser().resolve()
    if root is not None:
        if not root.exists():
            raise UsageError(f"{path}: no such file or directory")
        if (root / "package.json").is_file() and not (root / "node_modules").is_dir():
            _check_package_json(root / "package.json")
            info = inspect_node_package(root)  # PATH is a package folder itself
            return [info] if info and info["package"] in NODE_PACKAGES else []
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


def _venv_of(exe: str) -> Path | None:
    p = Path(exe)
    for d in (p.parent.parent, p.parent):
        if (d / "pyvenv.cfg").is_file():
            return d
    return None


def _script_sdks(script: Path) -> list[dict[str, Any]]:
    seen: set[Path] = set()
    for d in (script.parent, *script.parent.parents):
        if (d / "node_modules").is_dir():
            return scan_node_modules(d / "node_modules", seen)
    return []


def sdks_for_command(argv: list[str], cwd: str | None = None) -> list[dict[str, Any]]:
    """The SDKs a server command would load, where they can be located from the command:
    a Node script's nearest node_modules, an npx package's tree, a Python interpreter's
    venv (or this interpreter's site-packages when it is the same one). Best effort:
    [] when nothing can be located; never raises on odd commands."""
    try:
        return _locate(list(argv), cwd, 0)
    except (OSError, ValueError):
        return []


def _locate(argv: list[str], cwd: str | None, depth: int) -> list[dict[str, Any]]:
    if not argv or depth > 3:
        return []
    base = os.path.basename(argv[0])
    here = Path(cwd or os.getcwd())
    inner = guarded_command(argv)
    if inner is not None:
        return _locate(inner, cwd, depth + 1)
    if base in ("sh", "bash", "dash", "zsh") and "-c" in argv[1:]:
        i = argv.index("-c")
        if i + 1 < len(argv):
            for part in argv[i + 1].replace("&&", ";").split(";"):
                found = _locate(shlex.split(part), cwd, depth + 1)
                if found:
                    return found
        return []
    if base in ("npx", "pnpx", "bunx") or argv[:2] in (["npm", "exec"], ["pnpm", "dlx"]):
        pkgs = [a for a in argv[1:] if not a.startswith("-") and a != "exec"]
        for pkg in pkgs[:1]:
            for d in npx_package_dirs(pkg):
                seen: set[Path] = set()
                found = scan_node_modules(d.parent if not d.parent.name.startswith("@")
                                          else d.parent.parent, seen)
                if found:
                    return found
        return []
    if base.startswith("node") or base in ("bun", "deno", "tsx"):
        for a in argv[1:]:
            if not a.startswith("-"):
                return _script_sdks((here / a).resolve())
        return []
    if base == "uvx" or argv[:3] in (["uv", "tool", "run"],):
        words = argv[3:] if base == "uv" else argv[1:]
        pkgs = [a for a in words if not a.startswith("-")]
        for site in uvx_site_packages(pkgs[0]) if pkgs else []:
            found = inspect_path(site)
            if found:
                return found
        return []
    if base.startswith("python") or base in ("uv", "uvx"):
        exe = shutil.which(argv[0]) or argv[0]
        venv = _venv_of(exe)
        if venv is not None:
            return inspect_path(venv)
        if os.path.realpath(exe) == os.path.realpath(sys.executable):
            return inspect_path(None)
        return []
    # A console script: its shebang names the interpreter (a venv's python).
    exe = shutil.which(argv[0], path=os.environ.get("PATH")) or str(here / argv[0])
    try:
        with open(exe, "rb") as f:
            first = f.readline(300)
    except OSError:
        return []
    if first.startswith(b"#!"):
        words = first[2:].decode(errors="replace").split()
        if words and os.path.basename(words[0]) == "env":
            words = words[1:]
        if words:
            if "node" in os.path.basename(words[0]):
                return _script_sdks(Path(os.path.realpath(exe)))
            return _locate([words[0], exe], cwd, depth + 1)
    return []
