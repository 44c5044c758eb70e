"""Servers by package name: install `npm:`/`pypi:` specs into a private cache and say how a
host would launch them.

    from mcp_tether.packages import prepare
    got = prepare("npm:@modelcontextprotocol/server-memory", launch="npx")
    got.argv, got.cwd, got.version, got.bins, got.installed

Guarantees:
- Installing runs no package code by default: npm installs with `--ignore-scripts`, pip
  takes wheels only (`--only-binary :all:`); `InstallPolicy(scripts=True)` /
  `InstallPolicy(build=True)` allow them (`--allow-scripts` / `--allow-build`), and
  `policy_line` says in one line which was used and which packages of the tree have
  install scripts. (Probing a package still runs its server: as the current user.)
- One install per (package, version, policy): the cache (`$MCP_TETHER_CACHE/packages` or
  `~/.cache/mcp-tether/packages`: `npm-ignore-scripts/NAME@VERSION/` or `npm-scripts/...`
  an npm prefix, `pypi-wheels/NAME==VERSION/` or `pypi-build/...` a virtualenv) is
  filled under a file lock and marked complete last, so a second run, a parallel survey
  or an interrupted install never uses half a tree, and a tree installed with scripts is
  never reused for a run without them; a run without a version asks the registry for
  the newest one, and offline falls back to the newest version cached. A cache folder
  that is a file, under a file, a dangling symlink, a symlink to another user's folder
  or not writable is a `CacheError`: one line, exit 2 (cache.py).
- The launch forms are the hosts' own: `npx -y NAME@VERSION` (run in the cache prefix,
  where npx finds the installed copy as in a project that depends on it), `uvx
  NAME@VERSION` / `uvx --from NAME==VERSION CMD`, or `direct` (the installed command's
  path). The default is what server READMEs tell host users to write: npx for npm, uvx
  for PyPI (direct, with a note, where uvx is not installed).
- Every failure is a `PackageError` with one line and a documented exit code (errors.py).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_tether.errors import UsageError
from mcp_tether.jsonout import read_object
from mcp_tether.packages import npm, pypi
from mcp_tether.packages.cache import cache_root, ensure_dir, locked
from mcp_tether.packages.errors import PackageError, fetch_failed, no_command
from mcp_tether.packages.spec import (
    NPM,
    PYPI,
    InstallPolicy,
    PackageSpec,
    is_package_spec,
    parse_spec,
)

__all__ = ["prepare", "Prepared", "PackageSpec", "PackageError", "InstallPolicy", "parse_spec",
           "is_package_spec", "cache_root", "LAUNCHES", "default_launch", "ensure_installed",
           "policy_line", "policy_summary", "check_cache"]

LAUNCHES = ("npx", "uvx", "direct")
MARKER = ".mcp-tether-package.json"  # written last: its presence means "complete"
_BACKENDS: dict[str, Any] = {NPM: npm, PYPI: pypi}


@dataclass
class Prepared:
    """An installed package and the command line a host would run for it."""

    spec: PackageSpec
    name: str  # as installed (a local path's package name)
    version: str
    language: str  # node | python
    dir: Path  # the npm prefix or the virtualenv
    bins: dict[str, str]  # command -> path relative to dir
    bin: str
    launch: str
    argv: list[str]
    cwd: str | None = None
    installed: bool = False  # this call installed it (False: from the cache)
    notes: list[str] = field(default_factory=list)
    policy: InstallPolicy = field(default_factory=InstallPolicy)
    install_scripts: list[str] = field(default_factory=list)  # packages of the tree with any

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec.text, "name": self.name, "version": self.version,
                "language": self.language, "dir": str(self.dir), "bins": self.bins,
                "bin": self.bin, "launch": self.launch, "argv": self.argv, "cwd": self.cwd,
                "installed": self.installed, "notes": self.notes,
                "allow_scripts": self.policy.scripts, "allow_build": self.policy.build,
                "install_scripts": self.install_scripts}


def policy_line(spec: PackageSpec, policy: InstallPolicy, have: Sequence[str]) -> str:
    """One line: what the install was allowed to run, and (npm) which packages of the
    tree have install scripts (`have`, from the marker)."""
    if spec.ecosystem == NPM:
        names = f"{len(have)} package(s) of its tree have them: {', '.join(have[:6])}" + (
            ", ..." if len(have) > 6 else "") if have else "no package of its tree has one"
        if policy.scripts:
            return f"install scripts ran (--allow-scripts); {names}"
        tail = "; --allow-scripts runs them (a server may need one: a native binary, a " \
            "browser download)" if have else ""
        return f"install scripts not run (npm --ignore-scripts); {names}{tail}"
    if policy.build:
        return "source builds allowed (--allow-build): pip may have run a build backend"
    return "wheels only (pip --only-binary :all:): no build ran; --allow-build allows " \
        "source builds"


def policy_summary(policy: InstallPolicy) -> str:
    """One line for a run that installs packages of both ecosystems (the survey): what
    each install may run. `policy_line` then says it per package."""
    return ("installing with "
            + ("npm install scripts run (--allow-scripts)" if policy.scripts else
               "npm --ignore-scripts (--allow-scripts runs install scripts)")
            + " and " + ("source builds allowed (--allow-build)" if policy.build else
                         "pip wheels only (--allow-build allows source builds)")
            + "; each server then runs as you")


def default_launch(ecosystem: str) -> str:
    if ecosystem == NPM:
        return "npx"
    return "uvx" if shutil.which("uvx") else "direct"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._@=+-]", "+", name)


def _key(spec: PackageSpec, version: str | None) -> str:
    if spec.path:
        p = Path(spec.path)
        probe = p / "package.json" if p.is_dir() and spec.ecosystem == NPM else p
        st = probe.stat() if probe.exists() else p.stat()
        digest = hashlib.sha256(f"{p}\0{st.st_mtime_ns}\0{st.st_size}".encode()).hexdigest()
        return f"local-{_safe(spec.name)}-{digest[:12]}"
    sep = "@" if spec.ecosystem == NPM else "=="
    name = spec.name if spec.ecosystem == NPM else pypi.normalize(spec.name) + (
        spec.name[spec.name.index("["):] if "[" in spec.name else "")
    return f"{_safe(name)}{sep}{version}"


def _cached_versions(eco_dir: Path, spec: PackageSpec) -> list[tuple[float, Path]]:
    prefix = _key(spec, "")
    out = []
    for d in eco_dir.glob(f"{prefix}*") if eco_dir.is_dir() else ():
        m = read_object(d / MARKER)
        if m is not None:
            out.append((float(m.get("installed_at") or 0), d))
    return sorted(out)


def _eco_dir(cache: Path | None, spec: PackageSpec, policy: InstallPolicy) -> Path:
    """The checked folder for this ecosystem and policy (every level checked, then made)."""
    return _checked(cache, spec.ecosystem, policy)


def _checked(cache: Path | None, ecosystem: str, policy: InstallPolicy) -> Path:
    root = cache or cache_root()
    for d in (root.parent, root) if cache is None else (root,):
        ensure_dir(d)
    return ensure_dir(root / policy.folder(ecosystem))


def check_cache(ecosystems: Sequence[str], policy: InstallPolicy | None = None,
                cache: Path | None = None) -> None:
    """Check (and make) every cache folder an install of these ecosystems would use, before
    any work starts: a command that installs many packages (`survey`) then stops at a bad
    cache with one line and exit 2 (`CacheError`), instead of failing every row alike."""
    for ecosystem in dict.fromkeys(ecosystems):
        _checked(cache, ecosystem, policy or InstallPolicy())


def ensure_installed(spec: PackageSpec, cache: Path | None = None,
                     policy: InstallPolicy | None = None) -> tuple[Path, dict[str, Any], bool]:
    """(dir, marker, installed_now). Raises PackageError when it cannot be fetched,
    CacheError when the cache folder cannot be used."""
    policy = policy or InstallPolicy()
    backend = _BACKENDS[spec.ecosystem]
    eco_dir = _eco_dir(cache, spec, policy)
    version = spec.version
    if version is None and not spec.path:
        version, why = backend.latest_version(spec)
        if version is None:
            cached = _cached_versions(eco_dir, spec)
            if not cached:
                raise fetch_failed(spec, f"{why} (and no version is cached)")
            d = cached[-1][1]
            return d, read_object(d / MARKER) or {}, False
    d = eco_dir / _key(spec, version)
    with locked(eco_dir / (d.name + ".lock")):
        marker = read_object(d / MARKER)
        if marker is not None:
            return d, marker, False
        if d.exists():  # an install that was interrupted: start again
            shutil.rmtree(d)
        try:
            backend.install(spec, d, policy)
            marker = dict(backend.describe(spec, d), installed_at=time.time(),
                          spec=spec.text, allow_scripts=policy.scripts,
                          allow_build=policy.build)
        except BaseException:
            shutil.rmtree(d, ignore_errors=True)
            raise
        tmp = d / (MARKER + ".tmp")
        tmp.write_text(json.dumps(marker, indent=1) + "\n")
        tmp.replace(d / MARKER)
        return d, marker, True


def _choose_bin(spec: PackageSpec, marker: dict[str, Any], wanted: str | None) -> str:
    bins = sorted(marker.get("bins") or {})
    version = str(marker.get("version"))
    what = "no `bin` in its package.json" if spec.ecosystem == NPM else \
        "no console_scripts entry point"
    if not bins:
        raise no_command(spec, version, what)
    if wanted is not None:
        if wanted not in bins:
            raise UsageError(f"{spec.text} ({version}) has no command {wanted!r}; its "
                             f"commands: {', '.join(bins)}")
        return wanted
    got = _BACKENDS[spec.ecosystem].default_bin(str(marker.get("name")), bins)
    if got is None:
        raise UsageError(f"{spec.text} ({version}) has {len(bins)} commands: "
                         f"{', '.join(bins)}; choose one with --bin NAME")
    return str(got)


def prepare(text: str | PackageSpec, *, bin: str | None = None, launch: str | None = None,
            args: Sequence[str] = (), cache: Path | None = None,
            policy: InstallPolicy | None = None) -> Prepared:
    """Install (or find cached) the package and build the host's command line for it."""
    policy = policy or InstallPolicy()
    spec = text if isinstance(text, PackageSpec) else parse_spec(text)
    launch = launch or default_launch(spec.ecosystem)
    if launch not in LAUNCHES:
        raise UsageError(f"unknown launch {launch!r} (choose from {', '.join(LAUNCHES)})")
    if (spec.ecosystem, launch) in ((NPM, "uvx"), (PYPI, "npx")):
        raise UsageError(f"--launch {launch} cannot run a {spec.ecosystem} package "
                         f"(use {default_launch(spec.ecosystem)} or direct)")
    if launch in ("npx", "uvx") and shutil.which(launch) is None:
        raise UsageError(f"--launch {launch}: {launch} is not on PATH (use --launch direct)")
    d, marker, installed = ensure_installed(spec, cache, policy)
    chosen = _choose_bin(spec, marker, bin)
    name, version = str(marker.get("name")), str(marker.get("version"))
    notes = []
    if spec.ecosystem == PYPI and launch == "direct" and bin is None and \
            shutil.which("uvx") is None:
        notes.append("launched directly: uvx, which most hosts' configs use, is not on PATH")
    argv, cwd = _launch_argv(spec, d, marker, chosen, launch, list(args))
    if launch == "uvx":
        pypi.warm_uvx(spec, argv, policy)
    return Prepared(spec, name, version, str(marker.get("language")), d,
                    dict(marker.get("bins") or {}), chosen, launch, argv, cwd, installed,
                    notes, policy, [str(n) for n in marker.get("install_scripts") or []])


def _launch_argv(spec: PackageSpec, d: Path, marker: dict[str, Any], chosen: str, launch: str,
                 args: list[str]) -> tuple[list[str], str | None]:
    name, version = str(marker.get("name")), str(marker.get("version"))
    if launch == "direct":
        return [str(d / marker["bins"][chosen])] + args, None
    if launch == "npx":
        default = npm.default_bin(name, sorted(marker.get("bins") or {}))
        pinned = f"{name}@{version}"
        head = ["npx", "-y", pinned] if chosen == default else \
            ["npx", "-y", "--package", pinned, chosen]
        # npx resolves NAME@VERSION from the project it runs in: the cache prefix.
        return head + args, str(d)
    source = spec.path or f"{name}=={version}"
    if spec.path is None and pypi.normalize(chosen) == pypi.normalize(name):
        return ["uvx", f"{name}@{version}"] + args, None
    return ["uvx", "--from", source, chosen] + args, None
