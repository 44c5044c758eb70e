"""The backends behind `mcp_tether.platform`: one module per set of OS primitives.

`platform.py` imports exactly one of them, once (`linux`, `portable` or `darwin`);
nothing else imports them. `record` holds the one process record every backend fills
in, `ends` the words channel answers are given in (an fd's end, its far end).

The contract every backend keeps is code: `contract.Backend` and `contract.Channels`
(typing protocols, each member with its meaning), which type checkers hold every backend
module to and `tests/test_seam.py` checks at run time, signatures included. `contract`
is imported by type checkers and tests only (the start-up paths load no `typing`).

- `linux` (+ `linux_fds`): /proc, pidfds, prctl, sock_diag. Stdlib only.
- `portable`: psutil and POSIX; what it cannot see it answers unknown.
- `darwin` (+ `darwin_fds`, `darwin_libproc`): libproc and sysctl through ctypes, exit waits
  on kqueue. Stdlib only. `darwin_sim` answers the same C calls from /proc with macOS's
  meanings (`MCP_TETHER_BACKEND=darwin-sim`, a test backend, never chosen on its own).
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # typing stays off the start-up paths
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from mcp_tether._plat.record import ProcRecord


def has_procfs() -> bool:
    """Linux's /proc is mounted here: what the `linux` backend reads."""
    return os.path.exists("/proc/self/stat")


def fstat_key(fd: int) -> tuple[int, int] | None:
    """(st_dev, st_ino) of the pipe or socket on our `fd`, else None: where fstat names a
    pipe by one inode for both ends (Linux), a process holding either end matches it."""
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode):
        return (st.st_dev, st.st_ino)
    return None


def memo(want: Callable[[str], bool]) -> Callable[[str], bool]:
    """`want` judged once per distinct process name (a table has many of each)."""
    seen: dict[str, bool] = {}

    def judged(comm: str) -> bool:
        got = seen.get(comm)
        if got is None:
            got = seen[comm] = want(comm)
        return got

    return judged


def fill_from(pids: Iterable[int], read: Callable[[int, Callable[[str], bool] | None],
                                                  ProcRecord | None],
              out: dict[int, ProcRecord], want_argv: Callable[[str], bool] | None) -> int:
    """Every process of `pids` that `read` answers into `out`; how many it could not read
    (PermissionError: another user's). For backends that read one process at a time."""
    unreadable = 0
    for pid in pids:
        try:
            p = read(pid, want_argv)
        except PermissionError:
            unreadable += 1
            continue
        if p is not None:
            out[pid] = p
    return unreadable
