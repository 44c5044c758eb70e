"""Run a command inside a pid namespace of its own, where the kernel allows one.

    status = run_in_pid_namespace([sys.executable, "-m", "mcp_tether", "survey", ...])
    if status is None: ...  # already inside one, or none can be made: run here

Guarantees:
- The command runs as pid 1 of a new pid namespace with a /proc of its own (`unshare
  --pid --fork --mount-proc --kill-child`). When it exits, or `unshare` dies (then
  --kill-child SIGKILLs it), the kernel SIGKILLs every process left in the namespace:
  servers that daemonize, escape their group or ignore every signal cannot outlive it,
  even if it is interrupted or killed.
- This process stays the one the user started (not replaced by unshare, which ignores
  SIGTERM and SIGINT while it waits): SIGTERM, SIGINT and SIGHUP sent to it are recorded
  (handlers only record) and forwarded to the command, the direct child of `unshare`,
  found in the process table and signalled by identity. Returns the command's status
  (128+N when a signal N ended it), after it and unshare are reaped.
- The environment marks the namespace (MCP_TETHER_PIDNS=1, as `tests/run` does), so the
  command does not enter another. None (nothing done) where unshare is missing or not
  permitted (not root, no user namespaces, not Linux).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess

from mcp_tether.proc.inbox import SignalInbox
from mcp_tether.proc.signals import signal_process
from mcp_tether.proc.tree import snapshot

__all__ = ["in_pid_namespace", "run_in_pid_namespace", "MARK"]

MARK = "MCP_TETHER_PIDNS"
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def in_pid_namespace() -> bool:
    return os.environ.get(MARK) == "1"


def _unshare() -> list[str] | None:
    found = shutil.which("unshare")
    if found is None:
        return None
    base = [found, "--pid", "--fork", "--mount-proc", "--kill-child"]
    ok = subprocess.run(base + ["true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL, check=False).returncode == 0
    return base if ok else None


def run_in_pid_namespace(argv: list[str]) -> int | None:
    if in_pid_namespace():
        return None
    base = _unshare()
    if base is None:
        return None
    inbox = SignalInbox(FORWARDED)
    try:
        p = subprocess.Popen(base + list(argv), env=dict(os.environ, **{MARK: "1"}))
        while True:
            try:
                status = p.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            for sig in inbox.drain():
                _forward(p.pid, sig)
    finally:
        inbox.restore()
    return 128 - status if status < 0 else status


def _forward(unshare_pid: int, sig: int) -> None:
    """To the command: the one child of our own unshare (pid 1 inside)."""
    snap = snapshot()
    for info in snap.values():
        if info.ppid == unshare_pid and not info.exited:
            signal_process(info.ident, sig)
