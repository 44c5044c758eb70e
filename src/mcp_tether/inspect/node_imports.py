"""What a Node server loads: its entry point's imports, followed the way Node resolves them.

    from mcp_tether.inspect.node_imports import node_uses
    node_uses(Path("dist/index.js")).package     # "@modelcontextprotocol/sdk"

Guarantees:
- The entry script is read and its imports followed: relative paths within the
  package, bare specifiers through `node_modules` from the importing file's folder
  upwards, each package's `exports` map. The SDK is the MCP SDK package
  (`@modelcontextprotocol/sdk`, the 2.x `server` / `node` / `core`, TS `fastmcp`) that
  these imports reach, the one imported for its stdio transport first; an SDK bundled
  into the package's own files is found by its `StdioServerTransport` class. An SDK
  merely installed nearby (a transitive copy, the other line) is never the answer.
- An MCP SDK of its own kind that these imports reach (`other_sdk`: MCP in its name,
  SDK or framework in its name, description or keywords) is named when no known SDK is
  reached, with the state "unknown": what it does at EOF was never read.
- Whether those imports reach the package `mcp-tether` (node/) is said too (`tether`),
  so a fix never tells a server to add a line it already has.
- Files are read, never executed; reads are bounded (`MAX_FILES`, `MAX_BYTES`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from mcp_tether.inspect.model import Transport, Uses
from mcp_tether.inspect.node import (
    CLASS_DEFINITION,
    CLASS_NAME,
    analyse_transport,
    inspect_node_package,
    node_package,
    read_source,
    resolve_export,
)
from mcp_tether.jsonout import read_object

__all__ = ["NODE_SDKS", "TETHER_PACKAGE", "node_uses", "bin_of", "package_root",
           "package_entry"]

NODE_SDKS = ("@modelcontextprotocol/sdk", "@modelcontextprotocol/server",
             "@modelcontextprotocol/node", "@modelcontextprotocol/core", "fastmcp")
TETHER_PACKAGE = "mcp-tether"  # this repository's Node package (node/)
MAX_FILES = 3000  # files read while following one entry point's imports
MAX_BYTES = 200_000_000
_SPEC = re.compile(
    r"""(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)(['"])([^'"\n]{1,200})\1""")
# esbuild and rollup leave the source path of each bundled module in a comment.
_BUNDLED_FROM = re.compile(r"node_modules/(@modelcontextprotocol/[a-z-]+|fastmcp)/")
_EXTS = ("", ".js", ".mjs", ".cjs", "/index.js", "/index.mjs", "/index.cjs")


def package_root(start: Path) -> Path | None:
    """The folder of the nearest package.json that names a package, from `start` up."""
    for d in (start, *start.parents):
        doc = read_object(d / "package.json")
        if doc is not None and isinstance(doc.get("name"), str):
            return d
    return None


def entry_file(base: Path) -> Path | None:
    """The file Node loads for the path `base`: as is, with an extension, an index, or a
    package folder's entry."""
    for ext in _EXTS:
        cand = Path(str(base) + ext)
        if cand.is_file():
            return cand
    if (base / "package.json").is_file():
        return package_entry(base, ".")
    return None


def package_entry(pkg_dir: Path, subpath: str) -> Path | None:
    """The file `import "<pkg>/<subpath>"` loads: `exports`, else `main`, else the path."""
    pkg = read_object(pkg_dir / "package.json") or {}
    target = resolve_export(pkg, subpath)
    if target is None and subpath == "." and isinstance(pkg.get("exports"), str):
        target = pkg["exports"]
    if target is None and subpath == ".":
        main = pkg.get("main") or pkg.get("module") or "index.js"
        return entry_file(pkg_dir / str(main))
    if target is None:
        return entry_file(pkg_dir / subpath[2:])
    path = pkg_dir / target
    return path if path.is_file() else None


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
    own = package_root(entry.parent)
    found = _walk(entry, own, out)
    if found.sdks:
        _say_sdk(out, found.sdks, own)
    elif found.bundle is not None:
        _say_bundle(out, found.bundle, _rel(entry, own))
    elif found.other is not None:
        _say_other(out, found.other, own)
    else:
        out.how = (f"no MCP SDK import reachable from {_rel(entry, own)} "
                   f"({len(found.seen)} files read)")
    return out


# An import that reached an SDK: (the SDK's name, its folder, the specifier, the importer).
_Import = tuple[str, Path, str, Path]


@dataclass
class _Found:
    """What following the imports from an entry came to."""

    seen: set[Path]  # every file queued to be read
    sdks: list[_Import] = field(default_factory=list)  # known SDKs, a folder once each
    other: _Import | None = None  # the first MCP SDK we do not know
    bundle: tuple[Path, int, str] | None = None  # (file, offset, text) defining the class


def _walk(entry: Path, own: Path | None, out: Uses) -> _Found:
    """Read `entry` and what it imports, breadth first, within MAX_FILES and MAX_BYTES:
    the SDKs reached, a bundled transport, an unknown SDK; `out.tether` when the tether
    package is imported."""
    found = _Found(seen={entry})
    queue, nbytes = [entry], 0
    while queue and len(found.seen) <= MAX_FILES and nbytes < MAX_BYTES:
        path = queue.pop(0)
        text = read_source(path)
        if text is None:
            continue
        nbytes += len(text)
        if found.bundle is None and CLASS_NAME in text:
            m = CLASS_DEFINITION.search(text)
            if m is not None:
                found.bundle = (path, m.start(), text)
        for _q, spec in _SPEC.findall(text):
            if spec.startswith("node:") or "${" in spec:
                continue
            nxt = _follow(spec, path, own, out, found)
            if nxt is not None and nxt.suffix in (".js", ".mjs", ".cjs") and \
                    nxt not in found.seen:
                found.seen.add(nxt)
                queue.append(nxt)
    return found


def _follow(spec: str, path: Path, own: Path | None, out: Uses, found: _Found) -> Path | None:
    """The file `path`'s import of `spec` loads, to read next (None: not followed); an
    SDK's or the tether package's import is noted instead."""
    if spec.startswith("."):
        return entry_file((path.parent / spec).resolve())
    name, sub = _split_spec(spec)
    pkg_dir = node_package(name, path.parent)
    if pkg_dir is None:
        return None  # a builtin, or not installed: Node would fail the same way
    if name == TETHER_PACKAGE:
        if out.tether is None:
            out.tether = f"{_rel(path, own)} imports '{spec}'"
        return None
    if name in NODE_SDKS:
        if not any(r[1] == pkg_dir for r in found.sdks) or "stdio" in spec:
            found.sdks.append((name, pkg_dir, spec, path))
        return None
    if found.other is None and pkg_dir != own and other_sdk(name, pkg_dir):
        found.other = (name, pkg_dir, spec, path)  # followed on: it may use a known one
    return package_entry(pkg_dir, sub)


def _say_sdk(out: Uses, reached: list[_Import], own: Path | None) -> None:
    """The SDK imported for its stdio transport, else the first one reached."""
    name, pkg_dir, spec, importer = next((r for r in reached if "stdio" in r[2]), reached[0])
    info = inspect_node_package(pkg_dir)
    out.state, out.package, out.path = "sdk", name, str(pkg_dir)
    out.version = info.version if info else None
    out.via = info.delegates_to if info else None
    out.info = info
    out.how = f"{_rel(importer, own)} imports '{spec}', resolved from there to {pkg_dir}"
    others = sorted({f"{r[0]}" for r in reached if r[1] != pkg_dir})
    if others:
        out.how += f" (also reached: {', '.join(others)})"


def _say_bundle(out: Uses, bundle: tuple[Path, int, str], rel: str) -> None:
    """A transport class bundled into a file, and the SDK the bundler took it from."""
    path, at, text = bundle
    holder = package_root(path.parent)
    doc = read_object(holder / "package.json") if holder else None
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


def _say_other(out: Uses, other: _Import, own: Path | None) -> None:
    """An SDK of its own kind (`@sylphx/mcp-server-sdk`): which one is known, what its
    transport does at EOF is not (it was never read), so: unknown, with its name."""
    name, pkg_dir, spec, importer = other
    doc = read_object(pkg_dir / "package.json") or {}
    out.package, out.path = name, str(pkg_dir)
    out.version = doc.get("version") if isinstance(doc.get("version"), str) else None
    out.how = (f"{_rel(importer, own)} imports '{spec}': {name} "
               f"{out.version or '(version unknown)'}, an MCP SDK mcp-tether does not "
               "know, so its EOF behaviour is unknown")


_OTHER_SDK = re.compile(r"\b(sdk|framework)\b", re.I)


def other_sdk(name: str, pkg_dir: Path) -> bool:
    """Is the package `name` an MCP SDK of its own (not one of `NODE_SDKS`)? Its name
    says MCP, and its name, description or keywords say SDK or framework."""
    if "mcp" not in name.lower():
        return False
    doc = read_object(pkg_dir / "package.json") or {}
    words = [name.replace("-", " ").replace("/", " "), str(doc.get("description") or "")]
    keywords = doc.get("keywords")
    if isinstance(keywords, list):
        words += [str(k) for k in keywords]
    return any(_OTHER_SDK.search(w) for w in words)


def _rel(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return str(path.relative_to(root))
        except ValueError:
            pass
    return str(path)


def bin_of(pkg_dir: Path, package: str | None = None) -> Path | None:
    doc = read_object(pkg_dir / "package.json") or {}
    b = doc.get("bin")
    if isinstance(b, dict) and b:
        short = (package or str(doc.get("name", ""))).rsplit("/", 1)[-1]
        b = b.get(short) or next(iter(b.values()))
    if isinstance(b, str):
        return entry_file(pkg_dir / b)
    return package_entry(pkg_dir, ".")
