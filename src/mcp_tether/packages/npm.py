"""npm packages: install into a private prefix, read the server command from package.json.

Guarantees: everything goes through the ordinary `npm` client (its registry, proxy and
auth settings apply); an install that fails is a `PackageError` carrying npm's own
one-line reason (E404, ENOTCACHED, ECONNREFUSED ...), never npm's log; the prefix is a
plain npm project (`DIR/package.json`, `DIR/node_modules`), so `npx -y NAME@VERSION`
run in it resolves the installed copy without touching the network, as it does for a
user whose project already depends on the server. The bin rule is npx's own: the only
bin, else the one named like the package without its scope. Install scripts (preinstall,
install, postinstall, and a folder's prepare) run only when the policy allows them
(`--ignore-scripts` otherwise); which packages of the tree have one is read from the
lockfile npm writes (`hasInstallScript`), whether or not they ran.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from mcp_tether.packages.errors import PackageError, fetch_failed
from mcp_tether.packages.spec import InstallPolicy, PackageSpec

__all__ = ["latest_version", "install", "describe", "default_bin", "NPM_TIMEOUT"]

NPM_TIMEOUT = 900.0  # seconds for one install; big trees (browsers' drivers) take minutes
_QUIET = {"npm_config_update_notifier": "false", "npm_config_fund": "false",
          "npm_config_audit": "false"}


def _npm() -> str:
    found = shutil.which("npm")
    if found is None:
        raise PackageError("npm is not on PATH: install Node.js and npm to use npm: specs",
                           exit_code=127)
    return found


def _run(argv: list[str], timeout: float,
         cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, **_QUIET)
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              env=env, cwd=cwd, stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        raise PackageError(f"{' '.join(argv[:3])}: no answer within {timeout:g} s",
                           exit_code=127) from None


def npm_reason(stderr: str) -> str:
    """npm's own reason, one line: `E404 'x@*' is not in this registry.`; for a failed
    install script, its own error line rather than npm's `path`/`command` lines."""
    code, texts = "", []
    for line in stderr.splitlines():
        body = line.removeprefix("npm error").removeprefix("npm ERR!").strip()
        body = re.sub(r"^\d{3}(?=\s|$)", "", body).strip()  # "404  'x@*' is not in ..."
        if not line.startswith(("npm error", "npm ERR!")) or not body:
            continue
        if body.startswith("code ") and not code:
            code = body[5:].strip()
        elif not body.startswith(("A complete log", "errno", "syscall", "path ", "command ",
                                  "workdir ", "Not Found", "network request")):
            texts.append(body)
    text = next((t for t in texts if re.search(r"rror|fail|not in this registry", t, re.I)),
                texts[0] if texts else "")
    if code.isdigit():  # an install script's exit status, not an npm error code
        code = f"an install script failed (status {code}):"
    return " ".join(p for p in (code, text) if p) or (stderr.strip().splitlines() or ["?"])[-1]


def latest_version(spec: PackageSpec) -> tuple[str | None, str]:
    """The registry's newest version, or (None, npm's reason) when it cannot be asked."""
    got = _run([_npm(), "view", spec.name, "version", "--json"], timeout=60.0)
    if got.returncode == 0:
        try:
            value = json.loads(got.stdout or "null")
        except ValueError:
            value = None
        if isinstance(value, list):  # several dist-tags match: the last is the newest
            value = value[-1] if value else None
        if isinstance(value, str) and value:
            return value, ""
    return None, npm_reason(got.stderr)


def install(spec: PackageSpec, dest: Path, policy: InstallPolicy) -> None:
    """`npm install` the package into the prefix `dest` (created)."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "package.json").write_text('{"private": true}\n')
    argv = [_npm(), "install", "--prefix", str(dest), "--save-exact", "--no-audit",
            "--no-fund", "--loglevel=error"]
    if not policy.scripts:
        argv.append("--ignore-scripts")
    if spec.path:
        argv.append("--install-links")  # a folder is copied, not linked to the user's tree
    got = _run(argv + [spec.requirement], timeout=NPM_TIMEOUT)
    if got.returncode != 0:
        raise fetch_failed(spec, npm_reason(got.stderr))


def _installed_name(dest: Path, spec: PackageSpec) -> str:
    if not spec.path:
        return spec.name
    deps = json.loads((dest / "package.json").read_text()).get("dependencies") or {}
    if len(deps) != 1:
        raise PackageError(f"{spec.text}: npm installed {len(deps)} packages, expected one")
    return str(next(iter(deps)))


def describe(spec: PackageSpec, dest: Path) -> dict[str, object]:
    """name, version and bins ({command: path relative to dest}) of the installed package."""
    name = _installed_name(dest, spec)
    pkg_dir = dest / "node_modules" / name
    try:
        meta = json.loads((pkg_dir / "package.json").read_text())
    except (OSError, ValueError) as exc:
        raise PackageError(f"{spec.text}: installed, but its package.json cannot be read: "
                           f"{exc}") from None
    raw = meta.get("bin") or {}
    if isinstance(raw, str):  # "bin": "cli.js" means one command named like the package
        raw = {name.rsplit("/", 1)[-1]: raw}
    bins = {}
    for cmd, rel in raw.items() if isinstance(raw, dict) else ():
        if isinstance(rel, str):
            bins[str(cmd)] = os.path.relpath(pkg_dir / rel, dest)
    return {"name": name, "version": str(meta.get("version") or "?"), "bins": bins,
            "language": "node", "install_scripts": _with_install_scripts(dest)}


def _with_install_scripts(dest: Path) -> list[str]:
    """The packages of the installed tree that have an install script (npm's lockfile
    marks them `hasInstallScript`, also when `--ignore-scripts` kept them from running)."""
    try:
        lock = json.loads((dest / "package-lock.json").read_text())
    except (OSError, ValueError):
        return []
    found = []
    for where, entry in (lock.get("packages") or {}).items():
        if isinstance(entry, dict) and entry.get("hasInstallScript") and where:
            found.append(where.rpartition("node_modules/")[2])
    return sorted(set(found))


def default_bin(name: str, bins: list[str]) -> str | None:
    """npx's choice: the only bin, or the one named like the package without its scope."""
    if len(bins) == 1:
        return bins[0]
    base = name.rsplit("/", 1)[-1]
    return base if base in bins else None
