"""What a server process runs: its package and version, and the MCP SDK it uses.

Guarantees:
- Every claim comes from a file a user can open, named in `What.source`: the nearest
  `package.json` of a Node script (an `npx` cache path included), the `*.dist-info`
  of a Python distribution (a `uvx`/`pipx` environment, a console script, a `-m`
  module, a script inside site-packages), or the nearest `pyproject.toml`.
- "Uses an MCP SDK" is claimed only from a dependency the package declares, or an SDK
  import in the script itself, and the SDK's version from its installed metadata in
  the environment the process runs from. Files are read, never executed.
- Reads are bounded (a few small files per server, cached per scan); missing or
  unreadable files give no claim, never an error.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from typing import TYPE_CHECKING

from mcp_tether.inspect.uses import uses_for_command
from mcp_tether.scan.model import What

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["identify", "Identifier", "NODE_SDKS", "PY_SDKS", "split_title"]

# The 1.x SDK, the 2.x split packages, and TS fastmcp (the same list `inspect.uses` follows).
NODE_SDKS = ("@modelcontextprotocol/sdk", "@modelcontextprotocol/server",
             "@modelcontextprotocol/node", "@modelcontextprotocol/core", "fastmcp")
PY_SDKS = ("mcp", "fastmcp")
_PY_IMPORT = re.compile(rb"(?m)^\s*(?:from|import)\s+(mcp|fastmcp)\b")
_NODE = re.compile(r"^(node|nodejs|bun|deno)$")
_PYTHON = re.compile(r"^(python[0-9.]*|pypy[0-9.]*)$")
# A runtime requirement: `Requires-Dist: mcp>=1.2` (an `extra == "dev"` one is not).
_REQ = re.compile(r"(?m)^Requires-Dist:\s*([A-Za-z0-9_.-]+)(?![^\n]*\bextra\s*==)")
_SEPARATORS = re.compile(r"[-_.]+")


def _norm(name: str) -> str:
    return _SEPARATORS.sub("-", name).lower()


def split_title(argv: list[str]) -> list[str]:
    """argv of a process that rewrote its title (node: `npm exec X` in one string)."""
    words = [a for a in argv if a != ""]
    if len(words) == 1 and " " in words[0] and not os.path.exists(words[0]):
        return words[0].split()
    return words


class Identifier:
    """Identifies processes, caching file reads for one scan."""

    def __init__(self) -> None:
        self._json: dict[str, dict[str, object] | None] = {}
        self._dists: dict[str, list[tuple[str, str, str]]] = {}
        # (argv, cwd, exe) -> What: a host's leaks are often one command many times over.
        self._seen: dict[tuple[tuple[str, ...], str, str], What] = {}

    # ----- files -------------------------------------------------------------------

    def _load_json(self, path: str) -> dict[str, object] | None:
        if path not in self._json:
            try:
                with open(path, "rb") as fh:
                    doc = json.loads(fh.read(1 << 20))
                self._json[path] = doc if isinstance(doc, dict) else None
            except (OSError, ValueError):
                self._json[path] = None
        return self._json[path]

    def _package_json(self, start: str) -> tuple[str, dict[str, object]] | None:
        d = start
        for _ in range(40):
            doc = self._load_json(os.path.join(d, "package.json"))
            if doc is not None and isinstance(doc.get("name"), str):
                return d, doc
            parent = os.path.dirname(d)
            if parent == d:
                return None
            d = parent
        return None

    def _dist_infos(self, site: str) -> list[tuple[str, str, str]]:
        """(normalized name, version, dist-info path) of every distribution in `site`."""
        if site not in self._dists:
            out = []
            try:
                names = os.listdir(site)
            except OSError:
                names = []
            for n in names:
                if n.endswith(".dist-info"):
                    stem = n[: -len(".dist-info")]
                    name, _, version = stem.partition("-")
                    out.append((_norm(name), version, os.path.join(site, n)))
            self._dists[site] = out
        return self._dists[site]

    # ----- node ----------------------------------------------------------------------

    def _node(self, argv: list[str], cwd: str, what: What) -> None:
        script = next((a for a in argv[1:] if not a.startswith("-")), None)
        if script is None:
            return
        path = os.path.realpath(os.path.join(cwd, script)) if cwd or script.startswith("/") \
            else script
        what.runtime, what.script = "node", path
        found = self._package_json(os.path.dirname(path))
        if found is None:
            self._uses(["node", path], cwd, what)
        else:
            d, doc = found
            what.package, what.version = str(doc["name"]), str(doc.get("version", "")) or None
            how = "npx cache" if "/_npx/" in d else "package.json"
            what.source.append(f"{how}: {os.path.join(d, 'package.json')}")
            deps: dict[str, object] = {}
            for key in ("dependencies", "peerDependencies", "optionalDependencies"):
                v = doc.get(key)
                if isinstance(v, dict):
                    deps.update(v)
            declared = [s for s in NODE_SDKS if s in deps]
            if what.package not in NODE_SDKS and self._uses(["node", path], cwd, what):
                return
            if declared:  # not seen loaded: the declaration is the only evidence
                what.sdk = declared[0]
                what.source.append(f"{declared[0]} declared in package.json, not seen "
                                   "imported from the script (its version unknown)")

    # ----- python --------------------------------------------------------------------

    def _sites(self, interp: str, exe: str) -> list[str]:
        """site-packages of the environment: the venv argv[0] names, else the base."""
        prefixes = []
        for p in (interp, exe):
            if p.startswith("/"):
                prefixes.append(os.path.dirname(os.path.dirname(p)))
        out = []
        for pre in prefixes:
            for lib in ("lib", "lib64"):
                try:
                    vers = [v for v in os.listdir(os.path.join(pre, lib)) if v.startswith(
                        ("python", "pypy"))]
                except OSError:
                    continue
                for v in vers:
                    site = os.path.join(pre, lib, v, "site-packages")
                    if os.path.isdir(site) and site not in out:
                        out.append(site)
        return out

    def _dist_for(self, sites: list[str], *, top: str | None = None,
                  script: str | None = None) -> tuple[str, str, str] | None:
        for site in sites:
            for name, version, info in self._dist_infos(site):
                if top is not None:
                    if name == _norm(top):
                        return name, version, info
                    try:
                        with open(os.path.join(info, "top_level.txt")) as fh:
                            if top in fh.read().split():
                                return name, version, info
                    except OSError:
                        pass
                if script is not None:
                    try:
                        with open(os.path.join(info, "entry_points.txt")) as fh:
                            text = fh.read()
                    except OSError:
                        continue
                    if re.search(rf"^\s*{re.escape(script)}\s*=", text, re.M):
                        return name, version, info
        return None

    def _uses(self, argv: list[str], cwd: str, what: What, pid: int | None = None) -> bool:
        """The shared answer (`inspect.uses`): True when it settled the SDK question.
        With `pid`, a Python process's environment is read from what it has mapped."""
        u = uses_for_command(argv, cwd or None, pid)
        if u.state == "sdk":
            what.sdk, what.sdk_version = u.sdk_name, u.sdk_version
            what.source.append(f"loads {u.label()}: {u.how}")
            return True
        if u.state == "none":
            what.source.append(f"no MCP SDK: {u.how}")
            return True
        return False

    def _python(self, argv: list[str], cwd: str, exe: str, what: What,
                pid: int | None = None) -> None:
        what.runtime = "python"
        sites = self._sites(argv[0], exe)
        dist = None
        text = b""
        i = 1
        while i < len(argv) and argv[i].startswith("-") and argv[i] not in ("-m", "-c"):
            i += 1 + (argv[i] in ("-W", "-X"))
        if i >= len(argv):
            return
        if argv[i] == "-c":
            return
        if argv[i] == "-m" and i + 1 < len(argv):
            mod = argv[i + 1]
            what.script = f"-m {mod}"
            dist = self._dist_for(sites, top=mod.split(".")[0])
        else:
            path = os.path.realpath(os.path.join(cwd, argv[i]))
            what.script = path
            try:
                with open(path, "rb") as fh:
                    text = fh.read(65536)
            except OSError:
                pass
            if "/site-packages/" in path:
                top = path.split("/site-packages/", 1)[1].split("/", 1)[0]
                dist = self._dist_for(sites, top=top.removesuffix(".py"))
            elif os.path.basename(os.path.dirname(path)) == "bin":
                dist = self._dist_for(sites, script=os.path.basename(path))
            if dist is None:
                self._pyproject(os.path.dirname(path), what)
        if dist is not None:
            name, version, info = dist
            what.package, what.version = name, version
            env = ("uvx environment" if "/uv/" in info else
                   "pipx environment" if "/pipx/" in info else "distribution")
            what.source.append(f"{env}: {info}")
            try:
                with open(os.path.join(info, "METADATA"), encoding="utf-8",
                          errors="replace") as fh:
                    reqs = {_norm(m) for m in _REQ.findall(fh.read(1 << 20))}
            except OSError:
                reqs = set()
            uses = [s for s in PY_SDKS if s in reqs or name == s]
            if name not in PY_SDKS and self._uses(argv, cwd, what, pid):
                return  # the SDK's own CLI (`fastmcp run`) is its own evidence below
            if uses:
                self._py_sdk(sites, uses[-1], f"declared by {name}", what)
                return
        elif self._uses(argv, cwd, what, pid):
            return
        m = _PY_IMPORT.search(text)
        if m is not None:
            self._py_sdk(sites, m.group(1).decode(), f"imported by {what.script}", what)

    def _py_sdk(self, sites: list[str], sdk: str, why: str, what: What) -> None:
        what.sdk = sdk
        got: tuple[str, str, str] | None = None
        for site in sites:
            for name, version, info in self._dist_infos(site):
                if name == sdk:
                    got = (name, version, info)
                    break
            if got:
                break
        if got is not None:
            what.sdk_version = got[1]
            what.source.append(f"{sdk} {why}, installed: {got[2]}")
        else:
            what.source.append(f"{sdk} {why} (installed version not found)")

    def _pyproject(self, start: str, what: What) -> None:
        d = start
        for _ in range(10):
            p = os.path.join(d, "pyproject.toml")
            try:
                with open(p, encoding="utf-8", errors="replace") as fh:
                    text = fh.read(1 << 16)
            except OSError:
                parent = os.path.dirname(d)
                if parent == d:
                    return
                d = parent
                continue
            m = re.search(r'^\s*name\s*=\s*"([^"]+)"', text, re.M)
            v = re.search(r'^\s*version\s*=\s*"([^"]+)"', text, re.M)
            if m:
                what.package, what.version = _norm(m.group(1)), v.group(1) if v else None
                what.source.append(f"pyproject.toml: {p}")
            return

    # ----- entry -----------------------------------------------------------------------

    def identify(self, argv: list[str], cwd: str = "", exe: str = "",
                 pid: int | None = None) -> What:
        """What one process runs (an empty `What` when nothing can be said); the same
        command in the same folder from the same executable is looked into once."""
        key = (tuple(argv), cwd, exe)
        known = self._seen.get(key)
        if known is None:
            known = self._seen[key] = self._identify(argv, cwd, exe, pid)
        return replace(known, source=list(known.source))

    def _identify(self, argv: list[str], cwd: str, exe: str, pid: int | None) -> What:
        what = What()
        words = split_title(argv)
        if not words:
            return what
        base = os.path.basename(words[0])
        try:
            if _NODE.match(base):
                self._node(words, cwd, what)
            elif _PYTHON.match(base):
                self._python(words, cwd, exe, what, pid)
        except (OSError, ValueError):
            pass
        return what


def identify(members: Sequence[tuple[list[str], str, str] | tuple[list[str], str, str, int]],
             ident: Identifier | None = None) -> What:
    """What a server tree runs: the innermost member that says something wins.

    `members` are (argv, cwd, exe[, pid]), root first; with the pid, a Python process's
    environment is the one it has mapped (/proc/PID/maps), not the one its argv suggests.
    """
    ident = ident or Identifier()
    best = What()
    for member in reversed(members):
        pid = member[3] if len(member) == 4 else None  # a 3- or a 4-tuple
        w = ident.identify(member[0], member[1], member[2], pid)
        if w.sdk:
            return w
        if best.package is None and w.package or best.runtime is None and w.runtime:
            best = w
    return best
