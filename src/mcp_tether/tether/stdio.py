"""The tethered process's own stdio, as the shutdown needs it.

- `is_null_device(fd)`: is this descriptor /dev/null (a server started with stdin from
  /dev/null sees EOF at once: EOF handling belongs to stdio mode only).
- `flush_std_streams()`: flush what Python buffered for stdout/stderr before `os._exit`,
  which skips the interpreter's own flush; never raises, never blocks the exit for long
  (the caller runs it in a daemon thread with a timeout).
"""

from __future__ import annotations

import os
import stat
import sys

__all__ = ["flush_std_streams", "is_null_device"]


def is_null_device(fd: int) -> bool:
    try:
        st, null = os.fstat(fd), os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == null.st_rdev


def flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (ValueError, OSError, AttributeError):
            pass  # closed (mcp 1.x closes sys.stdout after run()) or broken: nothing to save
