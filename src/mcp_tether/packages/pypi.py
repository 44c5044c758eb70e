"""PyPI packages: install into a private virtualenv, read the server command from its
console scripts.

Guarantees: everything goes through the ordinary `pip` client (its index, find-links,
constraints and proxy settings from pip.conf apply): the venv is made without pip by
`python -m venv` and this interpreter's pip installs into it (`pip --python`), or, where
this interpreter has no pip (a `uv tool` or zipapp install), by the venv's own ensurepip.
The package's commands are the `console_scripts` of the distribution pip reports as the
one requested (`pip install --report`), so a local wheel or folder needs no name given.
An install that fails is a `PackageError` with pip's own last `ERROR:` line. uvx's rule
picks the command: the only script, else the one named like the project. Wheels only
(`--only-binary :all:`, and uvx's `--no-build`) unless the policy allows source builds,
which run the sdist's build backend: code of the package, at install time.
"""

from __future__ import annotations

import configparser
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from mcp_tether.packages.errors import PackageError, fetch_failed
from mcp_tether.packages.spec import InstallPolicy, PackageSpec

__all__ = ["latest_version", "install", "describe", "default_bin", "normalize", "PIP_TIMEOUT",
           "warm_uvx"]

PIP_TIMEOUT = 900.0
REPORT = ".pip-report.json"  # pip's install report, kept in the venv for describe()


def normalize(name: str) -> str:
    """PEP 503: `Mcp_Server.Time` and `mcp-server-time` are one project."""
    return re.sub(r"[-_.]+", "-", name.split("[", 1)[0]).lower()


def _has_pip() -> bool:
    try:
        return importlib.util.find_spec("pip") is not None
    except (ImportError, ValueError):
        return False


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        raise PackageError(f"{' '.join(argv[:4])}: no answer within {timeout:g} s",
                           exit_code=127) from None


def pip_reason(stderr: str) -> str:
    errors = [ln[6:].strip() for ln in stderr.splitlines() if ln.startswith("ERROR:")]
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    return errors[-1] if errors else (lines[-1] if lines else "pip failed")


def latest_version(spec: PackageSpec) -> tuple[str | None, str]:
    """The index's newest version (`pip index versions`), or (None, pip's reason)."""
    if not _has_pip():
        return None, "this interpreter has no pip to ask the index"
    got = _run([sys.executable, "-m", "pip", "index", "versions", normalize(spec.name)], 60.0)
    m = re.search(r"^\S+ \(([^)\s]+)\)\s*$", got.stdout, re.M)
    if got.returncode == 0 and m:
        return m.group(1), ""
    return None, pip_reason(got.stderr)


def install(spec: PackageSpec, dest: Path, policy: InstallPolicy) -> None:
    """A venv at `dest` with the package in it; the venv's python is the interpreter."""
    own_pip = not _has_pip()
    venv = [sys.executable, "-m", "venv", str(dest)] + ([] if own_pip else ["--without-pip"])
    got = _run(venv, 300.0)
    if got.returncode != 0:
        raise PackageError(f"{spec.text}: cannot make a virtualenv: {pip_reason(got.stderr)}")
    py = str(dest / "bin" / "python")
    pip = [py, "-m", "pip"] if own_pip else [sys.executable, "-m", "pip", "--python", py]
    wheels = [] if policy.build else ["--only-binary", ":all:"]
    got = _run(pip + ["install", *wheels, "--report", str(dest / REPORT), spec.requirement],
               PIP_TIMEOUT)
    if got.returncode != 0:
        why = pip_reason(got.stderr)
        if wheels:
            why += " (wheels only: --allow-build lets pip build from source)"
        raise fetch_failed(spec, why)


def _requested(dest: Path, spec: PackageSpec) -> tuple[str, str]:
    try:
        report = json.loads((dest / REPORT).read_text())
    except (OSError, ValueError):
        report = {}
    for item in report.get("install") or []:
        meta = item.get("metadata") or {}
        if item.get("requested") and meta.get("name"):
            return str(meta["name"]), str(meta.get("version") or "?")
    if spec.path:
        raise PackageError(f"{spec.text}: pip did not say what it installed")
    return spec.name, spec.version or "?"


def _dist_info(dest: Path, name: str) -> Path | None:
    want = normalize(name).replace("-", "_")
    for site in sorted(dest.glob("lib/python*/site-packages")):
        for d in site.glob("*.dist-info"):
            if normalize(d.name.split("-", 1)[0]).replace("-", "_") == want:
                return d
    return None


def describe(spec: PackageSpec, dest: Path) -> dict[str, object]:
    name, version = _requested(dest, spec)
    dist = _dist_info(dest, name)
    if dist is None:
        raise PackageError(f"{spec.text}: installed, but {name}'s metadata is not in the venv")
    if version == "?":
        version = dist.name[:-len(".dist-info")].split("-", 1)[-1]
    scripts = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    scripts.optionxform = str  # type: ignore[assignment,method-assign]  # keep the case
    try:
        scripts.read(dist / "entry_points.txt")
    except configparser.Error as exc:
        raise PackageError(f"{spec.text}: its entry_points.txt cannot be read: {exc}") from None
    found = scripts["console_scripts"] if scripts.has_section("console_scripts") else {}
    bins = {cmd: os.path.join("bin", cmd) for cmd in found}
    return {"name": name, "version": version, "bins": bins, "language": "python"}


def default_bin(name: str, bins: list[str]) -> str | None:
    """uvx's choice: the only script, or the one named like the project."""
    if len(bins) == 1:
        return bins[0]
    want = normalize(name)
    hits = [b for b in bins if normalize(b) == want]
    return hits[0] if len(hits) == 1 else None


def warm_uvx(spec: PackageSpec, argv: list[str], policy: InstallPolicy) -> None:
    """Let uvx build its environment for `argv` (its own cache, where the host's uvx will
    look) before the probe starts it: otherwise every scenario's first launch would be an
    install racing the handshake timeout. Runs `uvx --from SOURCE python -c ''`."""
    if argv[1] == "--from":
        source = argv[2]
    else:
        name, _, version = argv[1].rpartition("@")
        source = f"{name}=={version}"
    no_build = [] if policy.build else ["--no-build"]
    got = _run(["uvx", *no_build, "--from", source, "python", "-c", ""], PIP_TIMEOUT)
    if got.returncode != 0:
        lines = [ln.strip() for ln in got.stderr.splitlines() if ln.strip()]
        raise fetch_failed(spec, f"uvx: {lines[-1] if lines else 'failed'}")

