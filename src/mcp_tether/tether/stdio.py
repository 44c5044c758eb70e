"""The tethered process's own stdio, as the shutdown needs it.

- `flush_std_streams()`: flush what Python buffered for stdout/stderr before `os._exit`,
  which skips the interpreter's own flush; never raises, never blocks the exit for long
  (the caller runs it in a daemon thread with a timeout).
"""

from __future__ import annotations

import sys

__all__ = ["flush_std_streams"]


def flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (ValueError, OSError, AttributeError):
            pass  # closed (mcp 1.x closes sys.stdout after run()) or broken: nothing to save
