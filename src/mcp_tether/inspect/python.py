"""Read an installed Python MCP SDK's stdio server transport: what it does at EOF.

Distributions are found by their `*.dist-info` in a site-packages folder (name and
version from METADATA, import packages from top_level.txt or RECORD). In each import
package the module that defines `stdio_server` is found by parsing (`ast`), not by a
path known per version; a package that imports `stdio_server` from another (Python
`fastmcp` from `mcp`) is reported as delegating to it. In the transport function the
analysis looks for a loop over stdin (`for`/`async for line in stdin`): its end is EOF,
and leaving it closes the read stream, which ends the session. It also reports the
signals the module handles and any parent-death watch.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from mcp_tether.inspect.model import Transport

__all__ = ["PYTHON_PACKAGES", "find_site_packages", "scan_site_packages", "inspect_python_dist",
           "norm_name", "dist_metadata", "top_levels"]

PYTHON_PACKAGES = ("mcp", "fastmcp", "fastmcp-slim")  # fastmcp 4 ships its code in -slim
FUNC = "stdio_server"
MAX_FILE = 2_000_000
_SIGNAL_CALLS = ("signal", "add_signal_handler", "open_signal_receiver", "set_wakeup_fd")
_PARENT = re.compile(r"getppid|PDEATHSIG|PR_SET_PDEATHSIG|parent_pid|parent_death")
# What a package that re-uses another's `stdio_server` takes over from it.
_DELEGATED = ("transport_file", "stdin_events", "signals", "parent_watch", "exits_on_eof",
              "notes")


def norm_name(name: str) -> str:
    """A distribution name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def dist_metadata(dist_info: Path) -> tuple[str, str | None]:
    """(name, version) from a dist-info's METADATA (its folder name when unreadable)."""
    name, version = dist_info.name.split("-", 1)[0], None
    try:
        with open(dist_info / "METADATA", errors="replace") as f:
            for line in f:
                if line.startswith("Name:"):
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("Version:"):
                    version = line.split(":", 1)[1].strip()
                elif not line.strip():
                    break
    except OSError:
        pass
    return name, version


def _first_requirement(dist_info: Path) -> str | None:
    try:
        with open(dist_info / "METADATA", errors="replace") as f:
            for line in f:
                if line.startswith("Requires-Dist:") and "extra ==" not in line:
                    return re.split(r"[\s\[;=<>!~(]", line.split(":", 1)[1].strip())[0]
    except OSError:
        pass
    return None


def top_levels(dist_info: Path, name: str) -> list[str]:
    """The import names a distribution installs (top_level.txt, else its RECORD)."""
    try:
        return [t for t in (dist_info / "top_level.txt").read_text().split() if t]
    except OSError:
        pass
    tops: list[str] = []
    try:
        record = (dist_info / "RECORD").read_text()
    except OSError:
        return [name.replace("-", "_")]
    try:
        for line in record.splitlines():
            first = line.split(",", 1)[0].split("/", 1)
            if len(first) == 1 and first[0].endswith(".py"):
                first = [first[0][:-3], ""]  # a top-level module
            if len(first) == 2 and not first[0].endswith((".dist-info", ".data")) \
                    and not first[0].startswith("..") and first[0] not in tops:
                tops.append(first[0])
    except OSError:
        pass
    return tops  # a RECORD with no package in it: a metapackage


def _py_files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        out += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py")]
    # Shallow and `stdio`-named modules first: where a transport usually lives.
    return sorted(out, key=lambda p: ("stdio" not in p.name, len(p.parts)))


def _parse(path: Path) -> ast.Module | None:
    try:
        if path.stat().st_size > MAX_FILE:
            return None
        return ast.parse(path.read_text(errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return None


def _defines(tree: ast.Module) -> ast.AST | None:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == FUNC:
            return node
    return None


def _imports_from(tree: ast.Module) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and any(a.name == FUNC for a in node.names):
            return node.module
    return None


def _mentions_stdin(node: ast.AST) -> bool:
    return any(
        (isinstance(n, ast.Name) and "stdin" in n.id)
        or (isinstance(n, ast.Attribute) and "stdin" in n.attr)
        for n in ast.walk(node)
    )


def analyse_module(tree: ast.Module, source: str) -> dict[str, Any]:
    """The loop over stdin, handled signals and parent watch (the `Transport` fields they
    fill, by name)."""
    func = _defines(tree)
    scope: ast.AST = func if func is not None else tree
    loops = [
        n for n in ast.walk(scope)
        if isinstance(n, (ast.For, ast.AsyncFor)) and _mentions_stdin(n.iter)
    ]
    reads = [
        n for n in ast.walk(scope)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("readline", "read", "receive") and _mentions_stdin(n.func.value)
    ]
    signals: list[str] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            f = n.func
            fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if fname in _SIGNAL_CALLS:
                for a in ast.walk(n):
                    if isinstance(a, ast.Attribute) and a.attr.startswith("SIG") \
                            and a.attr not in signals:
                        signals.append(a.attr)
    stdin_events: list[str] = []
    if loops:
        stdin_events = ["line", "eof"]  # the loop ends at EOF
    elif reads:
        stdin_events = ["read"]
    return {
        "stdin_events": stdin_events,
        "signals": signals,
        "parent_watch": bool(_PARENT.search(source)),
        "exits_on_eof": True if loops else None,
    }


def inspect_python_dist(site: Path, dist_info: Path, _depth: int = 0) -> Transport:
    name, version = dist_metadata(dist_info)
    tops = top_levels(dist_info, name)
    out = Transport(language="python", package=name, version=version,
                    path=str(site / tops[0]) if tops else str(site))
    present = [t for t in tops if (site / t).is_dir() or (site / f"{t}.py").is_file()]
    if not present:
        req = _first_requirement(dist_info)
        out.delegates_to = req
        out.notes.append("no code of its own (a metapackage)"
                         + (f": the code comes with {req}" if req else ""))
        return out
    delegate = None
    for top in present:
        root = site / top
        files = _py_files(root) if root.is_dir() else [site / f"{top}.py"]
        for path in files:
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            if FUNC not in text:
                continue
            tree = _parse(path)
            if tree is None:
                continue
            if _defines(tree) is not None:
                out = replace(out, transport_file=str(path), **analyse_module(tree, text))
                if out.exits_on_eof:
                    out.notes.append(
                        "stdin EOF ends the read loop and the session; the process then "
                        "exits unless a non-daemon thread or a task keeps it alive"
                    )
                return out
            delegate = delegate or _imports_from(tree)
    if delegate and _depth < 2:
        top = delegate.split(".")[0]
        for di in sorted(site.glob("*.dist-info")):
            if top in top_levels(di, dist_metadata(di)[0]):
                sub = inspect_python_dist(site, di, _depth + 1)
                return replace(out, delegates_to=f"{sub.package}@{sub.version}",
                               **{key: getattr(sub, key) for key in _DELEGATED})
        out.delegates_to = delegate
        out.notes.append(f"uses {delegate}'s transport, which is not installed here")
    elif not out.transport_file:
        out.notes.append(f"no `{FUNC}` found in the package")
    return out


def scan_site_packages(site: Path, seen: set[Path]) -> list[Transport]:
    out: list[Transport] = []
    try:
        infos = sorted(site.glob("*.dist-info"))
    except OSError:
        return out
    wanted = {norm_name(p) for p in PYTHON_PACKAGES}
    for di in infos:
        name = norm_name(di.name.split("-", 1)[0])
        if name in wanted and di.resolve() not in seen:
            seen.add(di.resolve())
            out.append(inspect_python_dist(site, di))
    return out


def find_site_packages(root: Path | None, max_depth: int = 5) -> list[Path]:
    """site-packages under root: a venv, a site-packages itself, or a tree holding some."""
    if root is None:
        return [Path(p) for p in sys.path if p and os.path.isdir(p) and
                (p.endswith(("site-packages", "dist-packages")))]
    if any(root.glob("*.dist-info")):
        return [root]
    found = []
    base = len(root.parts)
    for dirpath, dirnames, _files in os.walk(root):
        here = Path(dirpath)
        if here.name in ("site-packages", "dist-packages"):
            found.append(here)
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if d not in ("node_modules", "__pycache__"))
        if len(here.parts) - base >= max_depth:
            dirnames[:] = []
    return found
