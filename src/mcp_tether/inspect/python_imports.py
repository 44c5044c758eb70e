"""What a Python server imports, in the environment its interpreter runs.

    from mcp_tether.inspect.python_imports import python_uses
    python_uses("python3", script=Path("server.py")).package     # "mcp"

Guarantees:
- The environment is the interpreter's own (its venv), or the site-packages a running
  process has mapped (as the platform backend reads its memory maps), not the one its
  argv suggests.
- What the script, module or console script imports is parsed, following its own
  modules; a library of its own that requires the SDK counts. `fastmcp` goes through
  `mcp` and is named so. A script that imports no MCP SDK is "none" whatever is
  installed beside it.
- Files are read, never executed; at most `MAX_FILES` modules are parsed.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import sys
from pathlib import Path

from mcp_tether import platform
from mcp_tether.inspect.model import Uses
from mcp_tether.inspect.python import dist_metadata, inspect_python_dist, norm_name, top_levels

__all__ = ["PY_SDKS", "python_uses", "module_file"]

PY_SDKS = ("fastmcp", "mcp")  # fastmcp first: it goes through mcp
MAX_FILES = 3000  # modules parsed while following one entry point's imports


def _sites_of(python: str, pid: int | None) -> tuple[list[Path], str]:
    """The site-packages folders of the environment, and how they were found."""
    if pid is not None:
        mapped, where = _mapped_sites(pid)
        if mapped:
            return mapped, f"site-packages mapped by pid {pid} ({where})"
    exe = shutil.which(python) or python
    if os.path.realpath(exe) == os.path.realpath(sys.executable) and \
            Path(exe).parent == Path(sys.executable).parent:
        sites = [Path(p) for p in sys.path if p.endswith(("site-packages", "dist-packages"))
                 and os.path.isdir(p)]
        return sites, f"the environment of {exe}"
    prefix = Path(exe).parent.parent
    found: list[Path] = []
    for lib in ("lib", "lib64"):
        for sub in sorted((prefix / lib).glob("python*/*-packages")):
            if sub.is_dir() and sub not in found:
                found.append(sub)
    if prefix == Path("/usr"):
        debian = Path("/usr/lib/python3/dist-packages")
        if debian.is_dir() and debian not in found:
            found.append(debian)
    return found, f"the environment of {exe}"


def _mapped_sites(pid: int) -> tuple[list[Path], str]:
    """site-packages folders whose extension modules the process has mapped, and where
    that was read ([] where the backend cannot see its maps)."""
    got = platform.backend.mapped_files(pid)
    if got is None:
        return [], ""
    files, where = got
    out: list[Path] = []
    for path in files:
        for m in re.finditer(r"(/\S*/(?:site|dist)-packages)/", path):
            p = Path(m.group(1))
            if p not in out:
                out.append(p)
    return out, where


def _dists(site: Path) -> list[tuple[str, str | None, Path]]:
    out = []
    for di in sorted(site.glob("*.dist-info")):
        name, version = dist_metadata(di)
        out.append((norm_name(name), version, di))
    return out


def _dist_for_top(sites: list[Path], top: str) -> tuple[Path, Path] | None:
    """(site, dist-info) of the distribution that provides import package `top`."""
    for site in sites:
        if not ((site / top).is_dir() or (site / f"{top}.py").is_file()):
            continue
        for name, _v, di in _dists(site):
            if name == norm_name(top) or top in top_levels(di, name):
                return site, di
    return None


def module_file(name: str, roots: list[Path]) -> Path | None:
    parts = name.split(".")
    for root in roots:
        base = root.joinpath(*parts)
        for cand in (base / "__init__.py", Path(str(base) + ".py"), base / "__main__.py"):
            if cand.is_file():
                return cand
    return None


def _python_imports(starts: list[Path], roots: list[Path], own: set[str]) -> tuple[set[str],
                                                                                    int]:
    """Top-level names imported by `starts` and the modules of theirs they import
    (those under `own` top names, found in `roots`). Returns (names, files read)."""
    names: set[str] = set()
    queue = list(starts)
    seen = set(queue)
    read = 0
    while queue and read < MAX_FILES:
        path = queue.pop(0)
        try:
            tree = ast.parse(path.read_text(errors="replace"))
        except (OSError, SyntaxError, ValueError):
            continue
        read += 1
        pkg = _package_of(path, roots)
        for node in ast.walk(tree):
            mods: list[str] = []
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[: max(0, len(pkg.split(".")) - node.level + 1)]
                    if not base:
                        continue
                    head = ".".join(base + ([node.module] if node.module else []))
                else:
                    head = node.module or ""
                mods = [head] + [f"{head}.{a.name}" for a in node.names]
            for mod in mods:
                if not mod:
                    continue
                names.add(mod.split(".")[0])
                if mod.split(".")[0] in own:
                    f = module_file(mod, roots)
                    if f is not None and f not in seen:
                        seen.add(f)
                        queue.append(f)
    return names, read


def _package_of(path: Path, roots: list[Path]) -> str:
    """The dotted package `path` belongs to (for relative imports)."""
    for root in roots:
        try:
            rel = path.relative_to(root)
        except ValueError:
            continue
        parts = list(rel.parts[:-1])
        if path.name == "__init__.py":
            return ".".join(parts)
        return ".".join(parts) if parts else ""
    return ""


def python_uses(python: str, *, script: Path | None = None, module: str | None = None,
                pid: int | None = None, sites: list[Path] | None = None,
                env_how: str | None = None) -> Uses:
    """What a Python server imports, in its interpreter's environment."""
    out = Uses(language="python")
    if sites is None:
        sites, env_how = _sites_of(python, pid)
    if script is not None:
        script = script.resolve()
        roots = [script.parent, *sites]
        own = {p.stem for p in script.parent.iterdir()
               if p.suffix == ".py" or (p / "__init__.py").is_file()} | {script.stem}
        starts, what = [script], str(script)
        if any(str(script).startswith(str(s) + "/") for s in sites):
            top = next(script.relative_to(s).parts[0] for s in sites
                       if str(script).startswith(str(s) + "/"))
            own = {top.removesuffix(".py")}
            roots = list(sites)
    elif module is not None:
        roots, own = list(sites), {module.split(".")[0]}
        f = module_file(module, roots)
        if f is None:
            out.how = f"module {module} not found in {env_how}"
            return out
        main = f.parent / "__main__.py" if f.name == "__init__.py" else None
        starts = [f] + ([main] if main and main.is_file() else [])
        what = f"module {module} ({f})"
    else:
        out.how = "no script or module to read"
        return out
    names, read = _python_imports(starts, roots, own)
    if not read:
        out.how = f"{what}: could not be read"
        return out
    sdk = next((s for s in PY_SDKS if s in names), None)
    through = None
    if sdk is None:  # a library of its own that brings the SDK in
        for top in sorted(names - own - set(sys.stdlib_module_names)):
            got = _dist_for_top(sites, top)
            if got and (req := _requires_sdk(got[1])):
                sdk, through = req, top
                break
    if sdk is None:
        out.state = "none"
        out.how = f"{what} imports no MCP SDK ({read} file(s) read; {env_how})"
        return out
    got = _dist_for_top(sites, sdk)
    out.package = sdk
    why = f"{what} imports {through or sdk}" + (f", which requires {sdk}" if through else "")
    if got is None:
        out.how = f"{why}; {sdk} not found in {env_how}"
        return out  # unknown: it would fail to import, or we look at the wrong env
    site, di = got
    info = inspect_python_dist(site, di)
    out.state, out.version, out.path = "sdk", info.version, str(di)
    # A metapackage (fastmcp 4 -> fastmcp-slim) or a re-export: follow to the transport.
    for _ in range(3):
        if info.transport_file or not info.delegates_to:
            break
        nxt = _dist_named(sites, info.delegates_to.split("@")[0])
        if nxt is None:
            break
        info = inspect_python_dist(*nxt)
    out.info = info
    if info.delegates_to:
        out.via = info.delegates_to.replace("@", " ")
    elif info.package != sdk:
        out.via = f"{info.package} {info.version}"
    out.how = f"{why}; installed in {site} ({env_how})"
    return out


def _dist_named(sites: list[Path], name: str) -> tuple[Path, Path] | None:
    for site in sites:
        for norm, _v, di in _dists(site):
            if norm == norm_name(name):
                return site, di
    return None


def _requires_sdk(dist_info: Path) -> str | None:
    try:
        text = (dist_info / "METADATA").read_text(errors="replace")
    except OSError:
        return None
    reqs = set(re.findall(r"(?m)^Requires-Dist:\s*([A-Za-z0-9_.-]+)(?![^\n]*\bextra\s*==)",
                          text))
    return next((s for s in PY_SDKS if s in {r.lower() for r in reqs}), None)
