"""Run the rest of a command inside a pid namespace of its own, where the kernel allows one.

    if reexec_in_pid_namespace([sys.executable, "-m", "mcp_tether", "survey", ...]):
        ...  # not reached: the process was replaced
    # here: already inside one, or none can be made (say so and go on)

Guarantees: `unshare --pid --fork --mount-proc --kill-child` replaces this process; the
command becomes pid 1 of a new namespace (with a /proc of its own). When it exits, or
when `unshare` itself dies (--kill-child: SIGKILL to it), the kernel SIGKILLs every
process left in the namespace, so servers that daemonize, escape their group or ignore
every signal cannot outlive the command, even if it is interrupted or killed. The
environment marks the namespace (MCP_TETHER_PIDNS=1, as `tests/run` does), so the
command does not re-enter. Returns False (nothing done) where unshare is missing or not
permitted (not root, no user namespaces, not Linux).
"""

from __future__ import annotations

import os
import shutil
import subprocess

__all__ = ["in_pid_namespace", "reexec_in_pid_namespace", "MARK"]

MARK = "MCP_TETHER_PIDNS"


def in_pid_namespace() -> bool:
    return os.environ.get(MARK) == "1"


def reexec_in_pid_namespace(argv: list[str]) -> bool:
    """Replace this process with `argv` run as pid 1 of a new pid namespace; False when
    already inside one or none can be made."""
    if in_pid_namespace():
        return False
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    base = [unshare, "--pid", "--fork", "--mount-proc", "--kill-child"]
    ok = subprocess.run(base + ["true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL, check=False).returncode == 0
    if not ok:
        return False
    os.environ[MARK] = "1"
    os.execv(unshare, base + list(argv))
    return True  # not reached
