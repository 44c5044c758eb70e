"""Who holds a given pipe or socket: the open-file check behind "still holds our stdio".

Guarantees:
- `stdio_key(fd)` names the open pipe (either end) or socket on `fd`, the backend's way
  (Linux: (st_dev, st_ino)), the same for every process that holds it; None for
  anything else (a tty, /dev/null, a regular file): those are shared by unrelated
  processes all the time and prove nothing.
- `holds(pid, keys)` is True when process `pid` has one of them open on any fd, read
  by the platform backend (Linux: /proc/<pid>/fd, readable for our own descendants),
  False when it has none, None when it cannot be told (the portable backend always;
  no permission; gone). None never counts as "holds" nor as "does not hold".
"""

from __future__ import annotations

from mcp_tether import platform

__all__ = ["stdio_key", "holds"]


def stdio_key(fd: int) -> tuple[int, int] | None:
    """The backend's key for the pipe or socket open on `fd`, else None."""
    return platform.backend.stdio_key(fd)


def holds(pid: int, keys: set[tuple[int, int]]) -> bool | None:
    """Whether `pid` has any of `keys` open now (see the module doc)."""
    if not keys:
        return False
    return platform.backend.holds(pid, keys)
