"""Crash-safe rewriting of a config file, with its backup kept in a per-user state folder.

Guarantees:
- The config is the old file or the new one, never half of each: temp file in the same
  folder, fsync, `os.replace`, fsync of the folder. Mode (and owner, when we may) kept;
  a symlinked config is edited at its target so the link survives.
- A host that rewrites its own config meanwhile (Claude Code rewrites `~/.claude.json`
  often) is not clobbered: right before the replace the file is read again and the
  write is refused if it changed since it was parsed.
- Backups never sit beside the config (a work tree would see them, with the entries'
  secrets): they go to `state_dir()/backups/<the config's path, quoted>/`. The first,
  `<name>.bak`, is the pre-tether original and is never overwritten; later ones are
  `<name>.bak.1`, `.2`, ... and none is written when the newest already holds the same
  bytes. A backup is written to a temp file, fsynced and hard-linked to its final name
  (exclusive: an existing backup is never replaced), so a backup is whole or absent.
- No debris after a SIGKILL at any moment: every temp name is handed, before it
  exists, to a tiny janitor process that waits for our end (its stdin closing) and
  removes whichever of those names still exist. Were the janitor killed too, the next
  run removes temps older than `STALE_AFTER` seconds.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from mcp_tether import platform
from mcp_tether.errors import ConfigError

__all__ = ["state_dir", "backup_dir", "write_config", "backups_of", "TEMP_MARK"]

TEMP_MARK = ".mcp-tether-tmp"  # part of every temp name we create
STALE_AFTER = 600.0
SLOW_ENV = "MCP_TETHER_TEST_SLOW_WRITE"  # tests: seconds to sleep per 64-byte chunk
_SH_JANITOR = 'cat >/dev/null; exec rm -f -- "$@"'
_JANITOR = (
    "import os,sys\n"
    "sys.stdin.buffer.read()\n"
    "for p in sys.argv[1:]:\n"
    "    try: os.unlink(p)\n"
    "    except OSError: pass\n"
)


def state_dir() -> Path:
    """Per-user state: MCP_TETHER_STATE_DIR, else the platform's usual place."""
    explicit = os.environ.get("MCP_TETHER_STATE_DIR")
    if explicit:
        return Path(explicit)
    return Path(platform.state_home()) / "mcp-tether"


def backup_dir(real: Path) -> Path:
    name = quote(str(real), safe="")
    if len(name) > 200:  # file-name limit: keep the tail, which names the file
        name = hashlib.sha256(str(real).encode("utf-8", "surrogatepass")).hexdigest()[:16] \
            + "-" + name[-180:]
    return state_dir() / "backups" / name


def backups_of(real: Path) -> list[Path]:
    """The backups of `real`, oldest first."""
    folder = backup_dir(real)
    first = folder / f"{real.name}.bak"
    out = [first] if first.exists() else []
    n = 1
    while (folder / f"{real.name}.bak.{n}").exists():
        out.append(folder / f"{real.name}.bak.{n}")
        n += 1
    return out


class _Janitor:
    """A child that outlives a SIGKILL of ours just long enough to remove our temps."""

    def __init__(self, paths: list[Path]) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        try:
            # POSIX sh starts in about a millisecond; Python only where there is no sh.
            sh = platform.posix_shell()
            if sh is not None:
                argv = [sh, "-c", _SH_JANITOR, "mcp-tether-janitor"]
            else:
                argv = [sys.executable, "-S", "-c", _JANITOR]
            self.proc = subprocess.Popen(
                [*argv, *map(str, paths)],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                close_fds=True,
            )
        except OSError:
            self.proc = None  # no janitor: the stale-temp sweep is the fallback

    def done(self) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            self.proc.stdin.close()
            self.proc.wait()


def _sweep(folder: Path, prefix: str) -> None:
    """Remove our temps left by a run killed together with its janitor."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    now = time.time()
    for name in names:
        if name.startswith(prefix) and TEMP_MARK in name:
            path = folder / name
            with contextlib.suppress(OSError):
                if now - path.stat().st_mtime > STALE_AFTER:
                    path.unlink()


def _write_all(fd: int, data: bytes) -> None:
    slow = float(os.environ.get(SLOW_ENV) or 0)
    step = 64 if slow else len(data) or 1
    for i in range(0, len(data), step):
        os.write(fd, data[i : i + step])
        if slow:
            time.sleep(slow)  # a test hook: widen the window a SIGKILL can land in


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # POSIX; Windows has no directory fds
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _write_backup(real: Path, raw: bytes, mode: int, tmp: Path) -> Path | None:
    """Keep a copy of `raw`; None when the newest backup already holds exactly these bytes."""
    existing = backups_of(real)
    with contextlib.suppress(OSError):
        if existing and existing[-1].read_bytes() == raw:
            return None
    folder = tmp.parent
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        platform.copy_mode(fd, mode & 0o777)  # configs hold API keys: no more readable
        _write_all(fd, raw)
        os.fsync(fd)
    finally:
        os.close(fd)
    n = len(existing)
    try:
        while True:
            target = folder / (f"{real.name}.bak" if n == 0 else f"{real.name}.bak.{n}")
            try:
                os.link(tmp, target)  # exclusive and atomic: whole or absent
            except FileExistsError:
                n += 1
                continue
            _fsync_dir(folder)
            return target
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _before_replace() -> None:
    """A seam for tests: runs after the temp file is written, before the check."""


@contextlib.contextmanager
def _temps(real: Path) -> Iterator[tuple[Path, Path]]:
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    folder = backup_dir(real)
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ConfigError(str(real), f"cannot create the backup folder {folder}: "
                          f"{exc.strerror or exc}") from None
    bak_tmp = folder / f".{real.name}{TEMP_MARK}-{token}"
    cfg_tmp = real.with_name(f".{real.name}{TEMP_MARK}-{token}")
    _sweep(folder, f".{real.name}")
    _sweep(real.parent, f".{real.name}")
    janitor = _Janitor([bak_tmp, cfg_tmp])
    try:
        yield bak_tmp, cfg_tmp
    finally:
        for tmp in (bak_tmp, cfg_tmp):
            with contextlib.suppress(OSError):
                tmp.unlink()
        janitor.done()


def write_config(path: Path, real: Path, old: bytes, new: bytes) -> Path | None:
    """Back up `old`, then replace `real` by `new` atomically. Returns the backup, if any."""
    try:
        st = real.stat()
    except OSError as exc:
        raise ConfigError(str(path), f"cannot write: {exc.strerror or exc}") from None
    with _temps(real) as (bak_tmp, cfg_tmp):
        try:
            backup = _write_backup(real, old, st.st_mode, bak_tmp)
        except OSError as exc:
            raise ConfigError(str(path), f"cannot back up: {exc.strerror or exc}") from None
        try:
            fd = os.open(cfg_tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                # Not root: the file becomes ours, which it already was.
                platform.copy_mode(fd, st.st_mode & 0o7777, (st.st_uid, st.st_gid))
                _write_all(fd, new)
                os.fsync(fd)
            finally:
                os.close(fd)
            _before_replace()
            # The host may have rewritten its config since we read it: do not clobber that.
            if real.read_bytes() != old:
                raise ConfigError(str(path), "changed while being edited; run again")
            os.replace(cfg_tmp, real)
        except OSError as exc:
            raise ConfigError(str(path), f"cannot write: {exc.strerror or exc}") from None
    _fsync_dir(real.parent)
    return backup
