"""Temporary folders with an owner: removed at the end of a run, and after a SIGKILL by
the next run that makes one of the same kind.

    with owned_tempdir("mcp-tether-hostcheck-") as path:   # sweeps stale ones first
        ...

Each folder holds an `owner` file: the owner's identity (pid and start time, JSON) for a
reader, and an exclusive `flock` on it, held by the owner's open file for its whole life.

Guarantees:
- The folder and everything in it is removed when the block ends, by an exception or a
  stop signal too (the caller turns signals into exceptions: `proc.inbox`).
- A folder of the same prefix in the temporary directory is swept only when its owner is
  gone: its lock can be taken (the kernel drops a `flock` when the last process holding
  the file, the owner or a child it forked, exits, SIGKILL included) and the recorded
  identity is not a live process here. A folder whose owner file cannot be read, whose
  lock is held, or whose owner is alive is left alone; so is anything not a folder,
  anything not ours (another user's) and anything of another prefix.
- The lock, not the pid, is the proof: a pid recorded in another pid namespace (the
  test suite's passes share /tmp) may name an unrelated process, or none, here.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterator

from mcp_tether.proc import SAME, ProcessId, compare, identify

__all__ = ["owned_tempdir", "sweep_stale", "OWNER"]

OWNER = "owner"


def sweep_stale(prefix: str, where: str | None = None) -> list[str]:
    """Remove the folders `prefix*` in `where` (the temporary directory) whose owner is
    gone; the paths removed."""
    where = where or tempfile.gettempdir()
    removed = []
    try:
        names = [n for n in os.listdir(where) if n.startswith(prefix)]
    except OSError:
        return []
    for name in names:
        path = os.path.join(where, name)
        if _owner_gone(path):
            shutil.rmtree(path, ignore_errors=True)
            if not os.path.exists(path):
                removed.append(path)
    return removed


def _owner_gone(path: str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not os.path.isdir(path) or os.path.islink(path) or st.st_uid != os.geteuid():
        return False
    fd = None
    for name in (OWNER, OWNER + ".new"):  # ".new": its owner died before the rename
        with contextlib.suppress(OSError):
            fd = os.open(os.path.join(path, name), os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            break
    if fd is None:
        return False  # no owner file (yet): not ours to judge
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # held: the owner (or a child it forked) is alive
        try:
            doc = json.loads(os.read(fd, 4096) or b"{}")
            ident = ProcessId(int(doc["pid"]), float(doc["start"]))
        except (OSError, ValueError, KeyError, TypeError):
            return True  # unlocked and unreadable: its owner died while writing it
        return compare(ident) != SAME
    finally:
        os.close(fd)


@contextlib.contextmanager
def owned_tempdir(prefix: str) -> Iterator[str]:
    """A new folder `prefix*` in the temporary directory, owned by this process; stale
    ones of the same prefix are swept first."""
    sweep_stale(prefix)
    path = tempfile.mkdtemp(prefix=prefix)
    try:
        # Locked and written under another name, then renamed: a sweeper that sees
        # `owner` finds it locked, never empty and free.
        fd = os.open(os.path.join(path, OWNER + ".new"),
                     os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            me = identify(os.getpid())
            os.write(fd, json.dumps({"pid": os.getpid(),
                                     "start": me.start if me else None}).encode())
            os.rename(os.path.join(path, OWNER + ".new"), os.path.join(path, OWNER))
            yield path
        finally:
            os.close(fd)
    finally:
        shutil.rmtree(path, ignore_errors=True)
