"""The process core: identity, tree snapshots, exit waits and identity-checked signals.

Guarantees:
- A process is a `ProcessId(pid, start)`; `start` is the kernel's start time, so a reused
  pid is a different process. `compare()` answers SAME, DIFFERENT or UNKNOWN.
- `signal_process()` re-checks identity immediately before sending and, with pidfds,
  sends through a descriptor verified to be that process (no pid-reuse race after the
  check). ESRCH means gone; EPERM means we may not, never "gone".
- A zombie counts as exited: `kill(pid, 0)` succeeds on a zombie, so it is never trusted.
- `reap` (exit statuses, reaping, "no child left"), `inbox` (SignalInbox), `spawn`
  (fork + exec + the child's set-up) and `end` (Tree, end_tree for a subreaper) are
  imported from their modules, not re-exported here: the guard loads only what it uses.
- Only stdlib is imported here: the guard and the probe's clients import this. The names
  below load their module on first use, so `ps`, which reads the table, never loads
  the signalling and waiting core (signal, select).
"""

from __future__ import annotations

from mcp_tether import _lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from mcp_tether.proc.identity import (
        DIFFERENT,
        SAME,
        UNKNOWN,
        ProcessId,
        ProcRecord,
        compare,
        identify,
        is_running,
        read_info,
    )
    from mcp_tether.proc.signals import Pinned, pin, signal_group, signal_process
    from mcp_tether.proc.tree import cmdline, descendants, snapshot
    from mcp_tether.proc.wait import ExitWaiter, wait_gone

__all__ = [
    "SAME",
    "DIFFERENT",
    "UNKNOWN",
    "ProcessId",
    "ProcRecord",
    "compare",
    "identify",
    "is_running",
    "read_info",
    "Pinned",
    "pin",
    "signal_process",
    "signal_group",
    "snapshot",
    "descendants",
    "cmdline",
    "ExitWaiter",
    "wait_gone",
]

__getattr__, __dir__ = _lazy.attach(__name__, {
    **dict.fromkeys(("SAME", "DIFFERENT", "UNKNOWN", "ProcessId", "ProcRecord", "compare",
                     "identify", "is_running", "read_info"), ".identity"),
    **dict.fromkeys(("Pinned", "pin", "signal_process", "signal_group"), ".signals"),
    **dict.fromkeys(("snapshot", "descendants", "cmdline"), ".tree"),
    **dict.fromkeys(("ExitWaiter", "wait_gone"), ".wait"),
})
