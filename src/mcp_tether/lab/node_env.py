"""The Node fixtures' runtime: a cache folder holding the pinned SDK (npm ci).

The package ships package.json, package-lock.json and the .mjs fixtures; on first use
they are copied to `$XDG_CACHE_HOME/mcp-tether/node-fixtures-<lock hash>` and `npm ci`
installs exactly the locked versions there. Fixture files are made equal to the
package's on every use, so an upgrade of mcp-tether never runs stale fixtures; one that
differs is replaced whole (a new file renamed over it), never rewritten in place: a Node
process of another lab reading it meanwhile (its package.json, say) never sees it
half-written.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from mcp_tether import log
from mcp_tether.errors import TetherError

SRC = Path(__file__).resolve().parent / "node"
INSTALL_CMD = ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"]


def cache_dir(src: Path = SRC, name: str = "node-fixtures") -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256((src / "package-lock.json").read_bytes()).hexdigest()[:12]
    return Path(base) / "mcp-tether" / f"{name}-{digest}"


def missing_tools() -> str | None:
    """Why Node rows cannot run here (None when node and npm are both on PATH)."""
    gone = [t for t in ("node", "npm") if shutil.which(t) is None]
    if gone:
        return f"{' and '.join(gone)} not found on PATH (install Node.js >= 18 to run these rows)"
    return None


def ensure(*, quiet: bool = False, src: Path = SRC, name: str = "node-fixtures") -> Path:
    """The folder to run Node fixtures from, installing the pinned SDK if needed.

    `src` and `name` let another set of fixtures (the tests of the Node package) share
    this cache scheme: their own lock, their own folder.
    """
    why = missing_tools()
    if why:
        raise TetherError(why)
    dest = cache_dir(src, name)
    dest.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.suffix in (".mjs", ".cjs", ".json") and f.is_file():
            _refresh(f, dest / f.name)
    marker = dest / "node_modules" / ".mcp-tether-installed"
    if marker.exists():
        return dest
    # One installer at a time: two first uses at once (two test passes, two labs) would
    # run `npm ci` into the same folder, each deleting what the other wrote. The lock
    # goes with the file's close.
    with open(dest / ".install-lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            _install(dest, quiet)
            marker.touch()
    return dest


def _refresh(src: Path, dest: Path) -> None:
    """`dest` made a copy of `src`: untouched when it already is one, else replaced."""
    data = src.read_bytes()
    try:
        if dest.read_bytes() == data:
            return
    except OSError:
        pass  # missing or unreadable: replaced below
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}")
    tmp.write_bytes(data)
    shutil.copystat(src, tmp)
    os.replace(tmp, dest)


def _install(dest: Path, quiet: bool) -> None:
    """`npm ci` in `dest`; a failure is one TetherError with npm's last lines."""
    if not quiet:
        log.say(f"mcp-tether lab: installing the Node fixtures' pinned SDK: "
                f"{' '.join(INSTALL_CMD)} in {dest}")
    proc = subprocess.run(
        INSTALL_CMD, cwd=dest, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )
    if proc.returncode != 0:
        tail = proc.stdout.strip().splitlines()[-3:]
        raise TetherError(f"npm ci failed in {dest}: {' / '.join(tail)}")
