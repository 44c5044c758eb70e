"""The metrics file a node exporter's textfile collector reads (`ps --textfile`,
`reap --watch --textfile`).

Guarantees:
- The collector may read the file at any moment: it is written whole or not at all (a
  temporary file in the same folder, a name the collector skips, not `*.prom`; flushed to
  disk; then renamed over the file, which is atomic within one filesystem). A write that
  fails leaves the last whole file in place and no temporary file, and raises the
  OSError: the caller decides (`ps`: one line, exit 2; `reap --watch`: counted, said
  once, and the janitor goes on).
- Readable by the exporter's own user (0644).
"""

from __future__ import annotations

import contextlib
import os
import tempfile

__all__ = ["write_textfile", "missing_folder"]


def write_textfile(path: str, text: str) -> None:
    """Replace `path` with `text` atomically; OSError (nothing changed) if it cannot."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def missing_folder(path: str) -> str | None:
    """The folder `path` would be written in, if it is not a folder now."""
    folder = os.path.dirname(os.path.abspath(path))
    return None if os.path.isdir(folder) else folder
