"""Read an installed Node MCP SDK's stdio server transport: what it listens for.

The transport file is found by the package's own layout: its `exports` map is asked for
the documented subpath (`./server/stdio.js`), else its shipped JavaScript is searched
for the `class StdioServerTransport` definition. In that class's body every listener
registration (`x.on('end', ...)`, `once`, `addListener`, `prepend*`) is read with its
receiver, so `this._stdin.on('data', ...)` counts as a stdin `data` listener. A package
that only re-exports another's transport (TS `fastmcp`) is reported as delegating.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from mcp_tether.inspect.model import NodeTransport, Transport
from mcp_tether.jsonout import read_object

__all__ = ["NODE_PACKAGES", "CLASS_NAME", "CLASS_DEFINITION", "find_node_modules",
           "inspect_node_package", "scan_node_modules", "resolve_export", "analyse_transport",
           "read_source", "node_package"]

NODE_PACKAGES = ("@modelcontextprotocol/sdk", "@modelcontextprotocol/server", "fastmcp")
STDIO_SUBPATHS = ("./server/stdio.js", "./server/stdio", "./stdio.js", "./stdio")
# The fix for any Node server, whatever its SDK version: the package in this repository's
# node/ folder. One text, shown by `inspect`, the probe's remedy, --markdown and --html.
# A tarball committed into the server's repository: `npm ci` resolves it on any machine
# (a `file:` link to a clone does not, on a CI runner).
NODE_INSTALL = ("mkdir -p vendor && npm pack /path/to/mcp-tether/node --pack-destination vendor "
                "&& npm install ./vendor/mcp-tether-*.tgz")
# Where the line goes, for a server that has it too late, and what the gap before it
# costs (node/README.md "Where to call it", docs/node-servers.md: the same behaviour).
NODE_PLACEMENT = (
    "call it before any other `await` at start-up and on every start-up path: "
    "`tether(server);` right after `await server.connect(transport)`, or, when the "
    "server awaits things (a dynamic import, a database, a config) before connecting, "
    "`tether(null, { onShutdown })` first thing and `tether(server)` once connected. "
    "Before the call, SIGTERM/SIGINT/SIGHUP get Node's default (the process dies of the "
    "signal at once, without `server.close()` or the hooks) and a host that dies is "
    "seen only when the server is still in the host's process group (Linux); in a group "
    "of its own it is not (`host-gone` never comes; EOF still ends the server when the "
    "last writer of stdin goes)"
)
NODE_REMEDY = (
    "install the Node package mcp-tether (a tarball committed into the server's "
    f"repository: `{NODE_INSTALL}`) and add one line after `await server.connect(transport)`: "
    "`tether(server);` with `import { tether } from \"mcp-tether\"` (CommonJS: "
    "`const { tether } = require(\"mcp-tether\")`), imported statically and called "
    "before any other `await`: the server then exits on stdin EOF, "
    "a dead stdout, SIGTERM/SIGINT/SIGHUP and its host's death (behind npx too), after "
    "`server.close()` and your `onShutdown` hooks"
)
CLASS_NAME = "StdioServerTransport"
MAX_FILE = 4_000_000  # bytes: bundles bigger than this are not read
MAX_FILES = 4000
SKIP_DIRS = ("node_modules", "_cacache", "_logs", "__pycache__", "site-packages")
_LISTEN = re.compile(
    r"([\w$][\w$.\[\]'\"]*)\s*\.\s*(?:on|once|addListener|prependListener|prependOnceListener)"
    r"\s*\(\s*['\"`]([\w:-]+)['\"`]"
)
# `class StdioServerTransport {` as written, `StdioServerTransport = class {` as bundled.
CLASS_DEFINITION = re.compile(
    r"\bclass\s+" + CLASS_NAME + r"\b|\b" + CLASS_NAME + r"\s*=\s*class\b")
_IMPORT_FROM = re.compile(
    CLASS_NAME + r"[^;]{0,200}?(?:from\s*|require\s*\(\s*)['\"]([^'\"]+)['\"]", re.S
)
_PARENT = re.compile(r"\bppid\b|\bparentPid\b|kill\s*\(\s*[\w$.]*ppid\s*,\s*0\s*\)")
_EXIT = re.compile(r"\bprocess\s*\.\s*exit\s*\(")
# What a package that re-exports another's transport takes over from it.
_DELEGATED = ("transport_file", "stdin_events", "stdout_events", "signals", "parent_watch",
              "exits_on_eof")


def _exports_target(value: Any) -> str | None:
    """The file an exports entry points at: import, then require, then default."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("import", "node", "require", "default"):
            if key in value:
                found = _exports_target(value[key])
                if found:
                    return found
    return None


def resolve_export(pkg: dict[str, Any], subpath: str) -> str | None:
    """Node's exports resolution for one subpath, exact keys then `*` patterns."""
    exports = pkg.get("exports")
    if not isinstance(exports, dict):
        return None
    if subpath in exports:
        return _exports_target(exports[subpath])
    for key, value in exports.items():
        if "*" in key:
            head, tail = key.split("*", 1)
            if subpath.startswith(head) and subpath.endswith(tail) and len(subpath) >= len(key) - 1:
                star = subpath[len(head): len(subpath) - len(tail)]
                target = _exports_target(value)
                if target:
                    return target.replace("*", star)
    return None


def _js_files(root: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "node_modules" and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith((".js", ".mjs", ".cjs")) and not name.endswith(".d.ts"):
                out.append(Path(dirpath) / name)
                if len(out) >= MAX_FILES:
                    return out
    # ESM first: it is what `import` loads, and the CJS twin says the same.
    return sorted(out, key=lambda p: ("cjs" in p.parts or p.suffix == ".cjs", len(p.parts)))


def read_source(path: Path) -> str | None:
    """A source file's text; None if unreadable or bigger than `MAX_FILE`."""
    try:
        if path.stat().st_size > MAX_FILE:
            return None
        return path.read_text(errors="replace")
    except OSError:
        return None


def class_body(source: str, start: int) -> str:
    """The text from `class X` to its matching brace, skipping strings and comments."""
    i = source.find("{", start)
    if i < 0:
        return source[start:]
    depth, n, j = 0, len(source), i
    while j < n:
        c = source[j]
        if c in "'\"`":
            j += 1
            while j < n and source[j] != c:
                j += 2 if source[j] == "\\" else 1
        elif source.startswith("//", j):
            j = source.find("\n", j)
            if j < 0:
                break
        elif source.startswith("/*", j):
            j = source.find("*/", j + 2)
            if j < 0:
                break
            j += 1
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return source[start: j + 1]
        j += 1
    return source[start:]


def locate_transport(pkg_dir: Path, pkg: dict[str, Any]) -> tuple[Path | None, str | None]:
    """(file defining StdioServerTransport, or None; package it imports it from, or None)."""
    for sub in STDIO_SUBPATHS:
        target = resolve_export(pkg, sub)
        if target:
            path = (pkg_dir / target).resolve()
            text = read_source(path) if path.is_file() else None
            if text and CLASS_DEFINITION.search(text):
                return path, None
    delegate = None
    for path in _js_files(pkg_dir):
        text = read_source(path)
        if not text or CLASS_NAME not in text:
            continue
        if CLASS_DEFINITION.search(text):
            return path, None
        m = _IMPORT_FROM.search(text)
        if m and delegate is None and not m.group(1).startswith("."):
            delegate = m.group(1)
    return None, delegate


def analyse_transport(source: str) -> dict[str, Any]:
    """Listener registrations in the transport class: stdin events, signals, parent watch
    (the `Transport` fields they fill, by name)."""
    m = CLASS_DEFINITION.search(source)
    body = class_body(source, m.start()) if m else source
    stdin: list[str] = []
    stdout: list[str] = []
    signals: list[str] = []
    for recv, event in _LISTEN.findall(body):
        low = recv.lower()
        if "stdin" in low and event not in stdin:
            stdin.append(event)
        elif "stdout" in low and event not in stdout:
            stdout.append(event)
        elif event.startswith("SIG") and event not in signals:
            signals.append(event)
    eof = [e for e in ("end", "close") if e in stdin]
    if eof:
        exits: bool | None = True
    elif stdin:
        exits = False
    else:
        exits = None
    return {
        "stdin_events": stdin,
        "stdout_events": stdout,
        "signals": signals,
        "parent_watch": bool(_PARENT.search(body)),
        "calls_process_exit": bool(_EXIT.search(body)),
        "exits_on_eof": exits,
    }


def node_package(name: str, start: Path) -> Path | None:
    """Node's lookup: `<d>/node_modules/<name>` for `start` and each of its parents."""
    for d in (start, *start.parents):
        if d.name == "node_modules":
            continue
        cand = d / "node_modules" / name
        if (cand / "package.json").is_file():
            return cand
    return None


def inspect_node_package(pkg_dir: Path, _depth: int = 0) -> NodeTransport | None:
    pkg = read_object(pkg_dir / "package.json")  # unreadable, or not an object: no package
    if pkg is None:
        return None
    out = NodeTransport(language="node", package=pkg.get("name") or pkg_dir.name,
                        version=pkg.get("version"), path=str(pkg_dir))
    path, delegate = locate_transport(pkg_dir, pkg)
    if path is not None:
        out = replace(out, transport_file=str(path),
                      **analyse_transport(read_source(path) or ""))
        if out.exits_on_eof is True and not out.calls_process_exit:
            out.notes.append(
                "stdin 'end'/'close' close the transport; the process then exits only if "
                "nothing else keeps its event loop alive"
            )
        if out.exits_on_eof is False:
            out.notes.append(
                "no stdin 'end'/'close' listener: EOF ends nothing; the server exits only "
                "if nothing else keeps its event loop alive"
            )
    elif delegate and _depth < 2:
        out.delegates_to = delegate
        base = delegate.split("/")[:2] if delegate.startswith("@") else delegate.split("/")[:1]
        found = node_package("/".join(base), pkg_dir)
        sub = inspect_node_package(found, _depth + 1) if found else None
        if sub:
            out = replace(out, delegates_to=f"{sub.package}@{sub.version}",
                          **{key: getattr(sub, key) for key in _DELEGATED})
        else:
            out.notes.append(f"uses {delegate}'s transport, which is not installed here")
    else:
        out.notes.append(f"no {CLASS_NAME} found in the package's JavaScript")
    if path is not None or out.delegates_to:
        # No SDK line ends the process (1.x ignores EOF; 2.x closes the transport only).
        out.remedy = None if out.calls_process_exit else NODE_REMEDY
    return out


def scan_node_modules(nm: Path, seen: set[Path], depth: int = 0) -> list[Transport]:
    """The MCP SDKs in one node_modules folder and the node_modules nested in it."""
    out: list[Transport] = []
    for name in NODE_PACKAGES:
        cand = nm / name
        if (cand / "package.json").is_file():
            real = cand.resolve()
            if real not in seen:
                seen.add(real)
                info = inspect_node_package(cand)
                if info:
                    out.append(info)
    if depth >= 4:
        return out
    try:
        entries = sorted(os.listdir(nm))
    except OSError:
        return out
    for entry in entries:
        dirs = [nm / entry]
        if entry.startswith("@"):
            try:
                dirs = [nm / entry / e for e in sorted(os.listdir(nm / entry))]
            except OSError:
                continue
        for d in dirs:
            if (d / "node_modules").is_dir():
                out += scan_node_modules(d / "node_modules", seen, depth + 1)
    return out


def find_node_modules(root: Path, max_depth: int = 4) -> list[Path]:
    """node_modules folders at or under root (not inside one another), depth-bounded."""
    if root.name == "node_modules":
        return [root]
    found: list[Path] = []
    base = len(root.parts)
    for dirpath, dirnames, _files in os.walk(root):
        here = Path(dirpath)
        if "node_modules" in dirnames:
            found.append(here / "node_modules")
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        if len(here.parts) - base >= max_depth:
            dirnames[:] = []
    return found
