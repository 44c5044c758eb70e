"""The package cache's folders: where they are, and the one check that they are safe to use.

    root = cache_root()             # $MCP_TETHER_CACHE/packages or ~/.cache/mcp-tether/packages
    eco = ensure_dir(root / "npm-ignore-scripts")

Guarantees:
- Every folder the cache uses (the base, `packages/`, each install kind's folder) is checked
  before anything is made or run in it, and a bad one is a `CacheError` (exit 2, one line
  naming the path and what is wrong), never a traceback: a regular file; a path under a
  file; a dangling symlink; a symlink to a folder another user owns (they could swap
  the code the probe then runs as you); a folder you cannot write. A missing folder is
  made, once its nearest existing ancestor is a directory you can write.
- The lock (`locked`) is a `flock` on a file beside the install, released when its
  file closes, so a crashed run never leaves the cache locked.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from mcp_tether import platform
from mcp_tether.errors import CacheError

__all__ = ["cache_root", "ensure_dir", "locked"]


def cache_root() -> Path:
    """`$MCP_TETHER_CACHE/packages`, else `$XDG_CACHE_HOME` or `~/.cache`, `mcp-tether/packages`."""
    base = os.environ.get("MCP_TETHER_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mcp-tether")
    return Path(base) / "packages"


def _stat(path: Path, follow: bool) -> os.stat_result | None:
    """None when nothing is there (or a component above it is not a directory)."""
    try:
        return os.stat(path, follow_symlinks=follow)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise CacheError(str(path), exc.strerror or str(exc)) from None


def _what(st: os.stat_result) -> str:
    return "a file" if stat.S_ISREG(st.st_mode) else "not a directory"


def _check_existing(path: Path, shown: Path) -> bool:
    """True when `path` exists and is a usable directory; False when nothing is there.
    `shown` is the folder the cache wants (named in the error; `path` may be above it:
    an ancestor owned by another user, `/` or a sticky /tmp behind a symlink, is normal)."""
    def fail(reason: str) -> CacheError:
        return CacheError(str(shown), reason if path == shown else
                          f"cannot be made: {path} is {reason}")

    link = _stat(path, follow=False)
    if link is None:
        return False
    st = link
    if stat.S_ISLNK(link.st_mode):
        target = os.readlink(path)
        followed = _stat(path, follow=True)
        if followed is None:
            raise fail(f"a dangling symlink (to {target}, which does not exist)")
        if not stat.S_ISDIR(followed.st_mode):
            raise fail(f"a symlink to {target}, which is {_what(followed)}")
        me = platform.euid()
        if path == shown and me is not None and followed.st_uid != me:
            raise fail(f"a symlink to {target}, a folder owned by uid {followed.st_uid}, "
                       f"not by you (uid {me}): its owner could change the code a probe runs")
        st = followed
    if not stat.S_ISDIR(st.st_mode):
        raise fail(f"{_what(st)}, not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise fail("not writable by you")
    return True


def ensure_dir(path: Path) -> Path:
    """Check `path` (see the module's guarantees), make it if missing, return it."""
    if _check_existing(path, path):
        return path
    for above in path.parents:  # nearest existing ancestor decides whether it can be made
        if _check_existing(above, path):
            break
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a race with another user, a full or read-only disk
        raise CacheError(str(path), f"cannot be made: {exc.strerror or exc}") from None
    return path


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` (its folder already checked by ensure_dir)."""
    try:
        fh = open(path, "a")  # noqa: SIM115  # closed below, after the unlock
    except OSError as exc:
        raise CacheError(str(path), f"cannot be opened: {exc.strerror or exc}") from None
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file closes, also on a crash
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
