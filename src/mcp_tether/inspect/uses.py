"""Which MCP SDK a server loads: one answer, resolved from the server's own entry point.

    from mcp_tether.inspect.uses import uses_for_command
    u = uses_for_command(["node", "dist/index.js"], cwd="/srv/x")
    u.state, u.package, u.version, u.how     # "sdk", "@modelcontextprotocol/server", ...

`probe` (its diagnosis), `inspect` (`--command`) and `ps` (`What.sdk`) all ask this.

Guarantees:
- Node: the entry script (the `node` argument, a package's `bin`, a console script's
  target) is read and its imports followed the way Node resolves them: relative paths
  within the package, bare specifiers through `node_modules` from the importing file's
  folder upwards, each package's `exports` map. The SDK is the MCP SDK package
  (`@modelcontextprotocol/sdk`, the 2.x `server` / `node` / `core`, TS `fastmcp`) that
  these imports reach, the one imported for its stdio transport first; an SDK bundled
  into the package's own files is found by its `StdioServerTransport` class. An SDK
  merely installed nearby (a transitive copy, the other line) is never the answer.
- Python: the interpreter's own environment (its venv, or the site-packages a running
  process has mapped, read from /proc/PID/maps), and what the script, module or
  console script imports (parsed, following its own modules). `fastmcp` goes through
  `mcp` and is named so. A script that imports no MCP SDK is "none" whatever is
  installed beside it.
- Node: whether those imports reach the package `mcp-tether` (node/) is said too
  (`tether`), so a fix never tells a server to add a line it already has.
- `how` says how the answer was found; `state` is "unknown" when it could not be, never a
  guess. Files are read, never executed; reads are bounded (`MAX_FILES`, `MAX_BYTES`).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mcp_tether.guard.argv import parse_guard_argv
from mcp_tether.inspect.model import Transport
from mcp_tether.inspect.node import (
    _CLASS,
    CLASS_NAME,
    _read,
    analyse_transport,
    inspect_node_package,
    resolve_export,
)
from mcp_tether.inspect.python import _metadata, _norm, _top_levels, inspect_python_dist

__all__ = ["Uses", "uses_for_command", "node_uses", "python_uses", "NODE_SDKS", "PY_SDKS",
           "npx_package_dirs", "uvx_site_packages", "guarded_command"]

NODE_SDKS = ("@modelcontextprotocol/sdk", "@modelcontextprotocol/server",
             "@modelcontextprotocol/node", "@modelcontextprotocol/core", "fastmcp")
PY_SDKS = ("fastmcp", "mcp")  # fastmcp first: it goes through mcp
TETHER_PACKAGE = "mcp-tether"  # this repository's Node package (node/)
MAX_FILES = 3000  # files read while following one entry point's imports
MAX_BYTES = 200_000_000
_SPEC = re.compile(
    r"""(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)(['"])([^'"\n]{1,200})\1""")
# esbuild and rollup leave the source path of each bundled module in a comment.
_BUNDLED_FROM = re.compile(r"node_modules/(@modelcontextprotocol/[a-z-]+|fastmcp)/")
_EXTS = ("", ".js", ".mjs", ".cjs", "/index.js", "/index.mjs", "/index.cjs")


@dataclass
class Uses:
    """The SDK a server loads. `state`: "sdk" (found), "none" (its code imports none),
    "unknown" (could not be told; `how` says why)."""

    state: str = "unknown"
    language: str | None = None
    package: str | None = None  # the SDK package, or the bundling package for a bundle
    version: str | None = None
    via: str | None = None  # what it goes through: "mcp 1.26.0" for fastmcp
    bundled: bool = False
    path: str | None = None  # the SDK's folder, or the bundle file
    how: str = ""
    info: Transport | None = None  # `inspect`'s reading of its stdio transport
    tether: str | None = None  # how it loads the Node package mcp-tether, if it does

    @property
    def found(self) -> bool:
        return self.state == "sdk"

    def label(self) -> str:
        if self.state != "sdk":
            return self.state
        text = f"{self.package} {self.version or '(version unknown)'}"
        if self.bundled:
            text = f"an MCP SDK bundled into {self.package} {self.version or ''}".rstrip()
        return text + (f" via {self.via}" if self.via else "")

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "language": self.language, "package": self.package,
                "version": self.version, "via": self.via, "bundled": self.bundled,
                "path": self.path, "how": self.how, "label": self.label(),
                "tether": self.tether,
                "transport": None if self.info is None else self.info.to_dict()}

    @property
    def sdk_name(self) -> str | None:
        """The SDK's package name as `ps` shows it (a bundle: the package it came from)."""
        if self.state != "sdk":
            return None
        return (self.via or "MCP SDK (bundled)") if self.bundled else self.package

    @property
    def sdk_version(self) -> str | None:
        return None if self.bundled or self.state != "sdk" else self.version

    def as_inspect(self) -> list[Transport]:
        """One `inspect` finding for what the server loads (what `probe`'s diagnosis
        reads), with `state`, `label` and `how`; a "none"/"unknown" answer is a finding
        without a package, so the diagnosis can say so."""
        base = self.info if self.state == "sdk" and self.info is not None else Transport()
        return [replace(base, language=self.language, state=self.state, how=self.how,
                        label=self.label(), tether=self.tether)]


# ----- Node -------------------------------------------------------------------------

def _load_json(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _package_root(start: Path) -> Path | None:
    """The folder of the nearest package.json that names a package, from `start` up."""
    for d in (start, *start.parents):
        doc = _load_json(d / "package.json")
        if doc is not None and isinstance(doc.get("name"), str):
            return d
    return None


def _file(base: Path) -> Path | None:
    for ext in _EXTS:
        cand = Path(str(base) + ext)
        if cand.is_file():
            return cand
    if (base / "package.json").is_file():
        return _package_entry(base, ".")
    return None


def _package_entry(pkg_dir: Path, subpath: str) -> Path | None:
    """The file `import "<pkg>/<subpath>"` loads: `exports`, else `main`, else the path."""
    pkg = _load_json(pkg_dir / "package.json") or {}
    target = resolve_export(pkg, subpath)
    if target is None and subpath == "." and isinstance(pkg.get("exports"), str):
        target = pkg["exports"]
    if target is None and subpath == ".":
        main = pkg.get("main") or pkg.get("module") or "index.js"
        return _file(pkg_dir / str(main))
    if target is None:
        return _file(pkg_dir / subpath[2:])
    path = pkg_dir / target
    return path if path.is_file() else None


def _node_package(name: str, start: Path) -> Path | None:
    """Node's lookup: `<d>/node_modules/<name>` for `start` and each of its parents."""
    for d in (start, *start.parents):
        if d.name == "node_modules":
            continue
        cand = d / "node_modules" / name
        if (cand / "package.json").is_file():
            return cand
    return None


def _split_spec(spec: str) -> tuple[str, str]:
    parts = spec.split("/")
    n = 2 if spec.startswith("@") else 1
    name = "/".join(parts[:n])
    rest = "/".join(parts[n:])
    return name, "./" + rest if rest else "."


def _bundle_source(text: str, at: int) -> str | None:
    """The SDK package a bundled transport came from, from the bundler's path comments."""
    before = _BUNDLED_FROM.findall(text[max(0, at - 20000): at])
    return before[-1] if before else None


def node_uses(entry: Path) -> Uses:
    """Follow `entry`'s imports to the MCP SDK it loads (see the module docstring)."""
    out = Uses(language="node")
    entry = entry.resolve()
    if not entry.is_file():
        out.how = f"{entry}: not a file"
        return out
    own = _package_root(entry.parent)
    queue, seen = [entry], {entry}
    reached: list[tuple[str, Path, str, Path]] = []  # (sdk name, dir, specifier, importer)
    bundle: tuple[Path, int, str] | None = None
    nbytes = 0
    while queue and len(seen) <= MAX_FILES and nbytes < MAX_BYTES:
        path = queue.pop(0)
        text = _read(path)
        if text is None:
            continue
        nbytes += len(text)
        if bundle is None and CLASS_NAME in text:
            m = _CLASS.search(text)
            if m is not None:
                bundle = (path, m.start(), text)
        for _q, spec in _SPEC.findall(text):
            if spec.startswith("node:") or "${" in spec:
                continue
            if spec.startswith("."):
                nxt = _file((path.parent / spec).resolve())
            else:
                name, sub = _split_spec(spec)
                pkg_dir = _node_package(name, path.parent)
                if pkg_dir is None:
                    continue  # a builtin, or not installed: Node would fail the same way
                if name == TETHER_PACKAGE:
                    if out.tether is None:
                        out.tether = f"{_rel(path, own)} imports '{spec}'"
                    continue
                if name in NODE_SDKS:
                    if not any(r[1] == pkg_dir for r in reached) or "stdio" in spec:
                        reached.append((name, pkg_dir, spec, path))
                    continue
                nxt = _package_entry(pkg_dir, sub)
            if nxt is not None and nxt.suffix in (".js", ".mjs", ".cjs") and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    rel = _rel(entry, own)
    if reached:
        # The SDK imported for its stdio transport, else the first one reached.
        name, pkg_dir, spec, importer = next((r for r in reached if "stdio" in r[2]),
                                             reached[0])
        info = inspect_node_package(pkg_dir)
        out.state, out.package, out.path = "sdk", name, str(pkg_dir)
        out.version = info.version if info else None
        out.via = info.delegates_to if info else None
        out.info = info
        out.how = (f"{_rel(importer, own)} imports '{spec}', resolved from there to "
                   f"{pkg_dir}")
        others = sorted({f"{r[0]}" for r in reached if r[1] != pkg_dir})
        if others:
            out.how += f" (also reached: {', '.join(others)})"
        return out
    if bundle is not None:
        path, at, text = bundle
        holder = _package_root(path.parent)
        doc = _load_json(holder / "package.json") if holder else None
        source = _bundle_source(text, at)
        out.state, out.bundled, out.path = "sdk", True, str(path)
        out.package = str((doc or {}).get("name") or path.name)
        out.version = (doc or {}).get("version")
        out.via = source
        out.info = Transport(package=out.package, version=out.version, path=str(path),
                             transport_file=str(path), delegates_to=source, notes=["bundled"],
                             **analyse_transport(text))
        out.how = (f"{CLASS_NAME} defined in {path} (bundled; reached from {rel})"
                   + (f", bundled from {source}" if source else ""))
        return out
    out.how = f"no MCP SDK import reachable from {rel} ({len(seen)} files read)"
    return out


def _rel(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return str(path.relative_to(root))
        except ValueError:
            pass
    return str(path)


def _bin_of(pkg_dir: Path, package: str | None = None) -> Path | None:
    doc = _load_json(pkg_dir / "package.json") or {}
    b = doc.get("bin")
    if isinstance(b, dict) and b:
        short = (package or str(doc.get("name", ""))).rsplit("/", 1)[-1]
        b = b.get(short) or next(iter(b.values()))
    if isinstance(b, str):
        return _file(pkg_dir / b)
    return _package_entry(pkg_dir, ".")


# ----- Python -----------------------------------------------------------------------

def _sites_of(python: str, pid: int | None) -> tuple[list[Path], str]:
    """The site-packages folders of the environment, and how they were found."""
    if pid is not None:
        mapped = _mapped_sites(pid)
        if mapped:
            return mapped, f"site-packages mapped by pid {pid} (/proc/{pid}/maps)"
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


def _mapped_sites(pid: int) -> list[Path]:
    """site-packages folders whose extension modules the process has mapped (Linux)."""
    try:
        with open(f"/proc/{pid}/maps") as fh:
            text = fh.read(4 << 20)
    except OSError:
        return []
    out: list[Path] = []
    for m in re.finditer(r"(/\S*/(?:site|dist)-packages)/", text):
        p = Path(m.group(1))
        if p not in out:
            out.append(p)
    return out


def _dists(site: Path) -> list[tuple[str, str | None, Path]]:
    out = []
    for di in sorted(site.glob("*.dist-info")):
        name, version = _metadata(di)
        out.append((_norm(name), version, di))
    return out


def _dist_for_top(sites: list[Path], top: str) -> tuple[Path, Path] | None:
    """(site, dist-info) of the distribution that provides import package `top`."""
    for site in sites:
        if not ((site / top).is_dir() or (site / f"{top}.py").is_file()):
            continue
        for name, _v, di in _dists(site):
            if name == _norm(top) or top in _top_levels(di, name):
                return site, di
    return None


def _module_file(name: str, roots: list[Path]) -> Path | None:
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
                    f = _module_file(mod, roots)
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
        f = _module_file(module, roots)
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
            if norm == _norm(name):
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


# ----- commands ---------------------------------------------------------------------

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


def uvx_site_packages(package: str) -> list[Path]:
    """Where `uvx <package>` installed it: uv's cache environments, newest first."""
    base = os.environ.get("UV_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "uv")
    name = package.split("@", 1)[0].split("==", 1)[0].replace("-", "_").lower()
    hits = Path(base).glob(f"archive-v0/*/lib/python*/site-packages/{name}-*.dist-info")
    sites = {h.parent for h in hits}
    return sorted(sites, key=lambda p: p.stat().st_mtime, reverse=True)


def guarded_command(argv: list[str]) -> list[str] | None:
    """The server behind a guard command line (`mcp-tether run [OPTIONS] -- CMD`, however
    spelled: see `guard.argv`), or None when argv is not one."""
    got = parse_guard_argv(list(argv))
    return None if got is None else got.command


def uses_for_command(argv: list[str], cwd: str | None = None, pid: int | None = None) -> Uses:
    """The SDK the server started by `argv` (in `cwd`; running as `pid`, if it is) loads.
    Never raises on odd commands: "unknown" with the reason."""
    try:
        return _command(list(argv), Path(cwd or os.getcwd()), pid, 0)
    except (OSError, ValueError, RecursionError) as exc:
        return Uses(how=f"could not be read: {exc}")


def _command(argv: list[str], here: Path, pid: int | None, depth: int) -> Uses:
    if not argv or depth > 3:
        return Uses(how="no command")
    base = os.path.basename(argv[0])
    inner = guarded_command(argv)
    if inner is not None:
        return _command(inner, here, None, depth + 1)
    if base in ("sh", "bash", "dash", "zsh") and "-c" in argv[1:]:
        i = argv.index("-c")
        parts = argv[i + 1].replace("&&", ";").split(";") if i + 1 < len(argv) else []
        got = Uses(how="a shell command with no server in it")
        for part in parts:
            words = [w for w in shlex.split(part) if w != "exec"]
            got = _command(words, here, None, depth + 1)
            if got.state != "unknown":
                return got
        return got
    if base in ("npx", "pnpx", "bunx") or argv[:2] in (["npm", "exec"], ["pnpm", "dlx"]):
        pkgs = [a for a in argv[1:] if not a.startswith("-") and a != "exec"]
        if not pkgs:
            return Uses(language="node", how="no package named")
        dirs = npx_package_dirs(pkgs[0])
        if not dirs:
            return Uses(language="node", how=f"{pkgs[0]}: not in the npx cache")
        name = pkgs[0].rsplit("@", 1)[0] if pkgs[0].rfind("@") > 0 else pkgs[0]
        entry = _bin_of(dirs[-1], name)
        if entry is None:
            return Uses(language="node", how=f"{dirs[-1]}: no bin or main")
        got = node_uses(entry)
        got.how = f"npx cache {dirs[-1]}: " + got.how
        return got
    if base.startswith("node") or base in ("bun", "tsx"):
        script = next((a for a in argv[1:] if not a.startswith("-")), None)
        if script is None:
            return Uses(language="node", how="no script")
        return node_uses(here / script)
    if base == "uvx" or argv[:3] == ["uv", "tool", "run"]:
        words = [a for a in (argv[3:] if base == "uv" else argv[1:]) if not a.startswith("-")]
        for site in uvx_site_packages(words[0]) if words else []:
            mod = _console_module(site, words[0])
            if mod:
                return python_uses("", module=mod, sites=[site],
                                   env_how=f"uvx environment {site}")
        return Uses(language="python", how="the uvx environment was not found")
    if base.startswith(("python", "pypy")):
        i = 1
        while i < len(argv) and argv[i].startswith("-") and argv[i] not in ("-m", "-c"):
            i += 1 + (argv[i] in ("-W", "-X"))
        if i >= len(argv) or argv[i] == "-c":
            return Uses(language="python", how="code given with -c is not read")
        if argv[i] == "-m" and i + 1 < len(argv):
            return python_uses(argv[0], module=argv[i + 1], pid=pid)
        target = here / argv[i]
        mod = _script_module(target) if target.parent.name == "bin" else None
        if mod:  # a console script run by its interpreter: the module it calls
            return python_uses(argv[0], module=mod, pid=pid)
        return python_uses(argv[0], script=target, pid=pid)
    # A console script or an executable file: its shebang names the interpreter.
    exe = shutil.which(argv[0]) or str(here / argv[0])
    try:
        with open(exe, "rb") as f:
            first = f.readline(300)
    except OSError:
        return Uses(how=f"{argv[0]}: not found")
    if not first.startswith(b"#!"):
        return Uses(how=f"{argv[0]}: not a script")
    words = first[2:].decode(errors="replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    if not words:
        return Uses(how=f"{exe}: empty shebang")
    if "node" in os.path.basename(words[0]):
        return node_uses(Path(os.path.realpath(exe)))
    if os.path.basename(words[0]).startswith("python"):
        mod = _script_module(Path(exe))
        if mod:
            return python_uses(words[0], module=mod, pid=pid)
        return python_uses(words[0], script=Path(exe), pid=pid)
    return _command([words[0], exe, *argv[1:]], here, pid, depth + 1)


def _script_module(exe: Path) -> str | None:
    """The module a pip console script imports (`from pkg.cli import main`)."""
    text = _read(exe) or ""
    m = re.search(r"^from\s+([\w.]+)\s+import\s+\w+", text, re.M)
    return m.group(1) if m and "sys.exit(" in text else None


def _console_module(site: Path, package: str) -> str | None:
    name = re.split(r"[@=<>~]", package)[0]
    norm = re.sub(r"[-_.]+", "_", name).lower()
    for di in site.glob("*.dist-info"):
        if re.sub(r"[-_.]+", "_", di.name.split("-", 1)[0]).lower() != norm:
            continue
        try:
            text = (di / "entry_points.txt").read_text()
        except OSError:
            continue
        section = text.split("[console_scripts]", 1)[-1].split("\n[", 1)[0]
        pairs = re.findall(r"(?m)^\s*([\w.-]+)\s*=\s*([\w.]+)", section)
        pick = next((m for n, m in pairs if n == name), pairs[0][1] if pairs else None)
        if pick:
            return str(pick)
    return None
