"""What wrapping would break, and which files are not ours to touch without asking.

Guarantees:
- `hazard(entry, host, machine)` is the one-line reason an entry must not be wrapped,
  or None: the host's own checks (allowlists, debug mode, remote execution: see each
  host module) and, for every host, commands that cannot run here (a command that is
  not found would turn into the guard's 127), `cmd /c ...` launches on a machine
  without `cmd`, and a single-string command with spaces that names no file (hosts
  do not split it; the guard would not either).
- `work_tree(path)` finds the version-controlled tree (git, hg, svn, jj) a file is in.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from mcp_tether.hosts.base import Host
from mcp_tether.hosts.model import Machine, ServerEntry

__all__ = ["hazard", "work_tree", "runnable_problem"]

_VCS_MARKERS = (".git", ".hg", ".svn", ".jj")


def work_tree(path: Path) -> Path | None:
    """The root of the version-controlled tree holding `path`, or None."""
    try:
        folder = Path(os.path.abspath(path)).parent
    except (OSError, ValueError):
        return None
    for candidate in (folder, *folder.parents):
        for marker in _VCS_MARKERS:
            if os.path.lexists(candidate / marker):
                return candidate
    return None


def _has_variable(word: str) -> bool:
    return "${" in word or "{env:" in word or word.startswith("$")


def runnable_problem(entry: ServerEntry, machine: Machine) -> str | None:
    """Why `entry.command` cannot be started here, or None (variables: not judged)."""
    cmd = entry.command or ""
    if not cmd or _has_variable(cmd):
        return None
    path_var = entry.env.get("PATH") or machine.env.get("PATH")
    base = cmd.replace("\\", "/").rsplit("/", 1)[-1].lower()
    if base in ("cmd", "cmd.exe") and machine.platform != "win32":
        return "launches through cmd /c, which does not exist here"
    if "/" in cmd or (machine.platform == "win32" and "\\" in cmd):
        where = Path(cmd) if os.path.isabs(cmd) or entry.cwd is None else Path(entry.cwd) / cmd
        found = where.exists()
    else:
        found = shutil.which(cmd, path=path_var) is not None
    if found:
        return None
    if " " in cmd.strip():
        return (f"command {cmd!r} has spaces and names no program: hosts do not split it; "
                "put the words in args")
    return f"{cmd}: command not found here (wrapping would turn it into exit 127)"


def hazard(entry: ServerEntry, host: Host | None, machine: Machine) -> str | None:
    """The reason wrapping `entry` would break it, or None."""
    for check in host.checks if host else ():
        reason = check(entry, machine)
        if reason:
            return reason
    return runnable_problem(entry, machine)
