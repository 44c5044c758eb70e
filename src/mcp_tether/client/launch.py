"""How a client starts a server behind the guard: the argv, and the command check.

Guarantees:
- The guard is always reached through its stable CLI, `python -m mcp_tether run`, with
  the interpreter running the host (`sys.executable`), never through guard internals.
  When that interpreter could not import `mcp_tether` by itself (the host found it via
  PYTHONPATH, which the SDK's default environment drops), a two-line bootstrap puts this
  package's directory on the guard's `sys.path` only: the server's environment is never
  touched. Both forms keep `mcp_tether run` in argv, so `mcp-tether ps` knows the guard.
- `check_command` answers "could exec start this?" before the guard is spawned, with the
  rules exec uses (PATH from the server's environment, relative paths from its cwd), and
  raises the OSError the SDK's own client raises for it (FileNotFoundError for a missing
  command, PermissionError for one that is not executable), message included. The guard
  still exits 127/126 if the file changes in between.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Mapping, Sequence

__all__ = ["guard_command", "check_command", "package_root"]

# The package directory's parent: what `sys.path` needs for `import mcp_tether`.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Run as `python -c BOOT mcp_tether ROOT run ...`: ROOT goes to sys.path, the marker
# "mcp_tether" (there for `ps`, which looks for it in argv[:4]) is dropped, then exactly
# what `python -m mcp_tether` does.
_BOOT = (
    "import sys, runpy; sys.path.insert(0, sys.argv.pop(2)); del sys.argv[1]; "
    "runpy.run_module('mcp_tether', run_name='__main__', alter_sys=True)"
)


def package_root() -> str:
    return _ROOT


def _importable_without_help(env: Mapping[str, str] | None) -> bool:
    """Would a fresh `sys.executable` find mcp_tether without PYTHONPATH tricks of ours?

    A fresh interpreter has the host's sys.path minus the host's PYTHONPATH entries and
    minus the host's script directory (sys.path[0]), plus whatever PYTHONPATH `env` sets.
    """
    here = os.environ if env is None else env
    child_pp = [os.path.abspath(p) for p in here.get("PYTHONPATH", "").split(os.pathsep) if p]
    if _ROOT in child_pp:
        return True
    host_pp = {os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    fresh = [os.path.abspath(p) for p in sys.path[1:] if p]
    return _ROOT in fresh and _ROOT not in host_pp


def guard_command(
    command: str,
    args: Sequence[str] = (),
    *,
    grace: float,
    term_grace: float,
    env: Mapping[str, str] | None = None,
    python: str | None = None,
) -> list[str]:
    """argv that runs `command args` behind the guard with the given graces.

    `env` is the environment the guard will get (None: this process's), used only to
    decide whether the guard needs the import bootstrap.
    """
    head = [python or sys.executable]
    if _importable_without_help(env):
        head += ["-m", "mcp_tether"]
    else:
        head += ["-c", _BOOT, "mcp_tether", _ROOT]
    return [
        *head,
        "run",
        "--grace",
        repr(float(grace)),
        "--term-grace",
        repr(float(term_grace)),
        "--",
        command,
        *args,
    ]


def check_command(
    command: str, env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None
) -> None:
    """Raise the OSError exec would give for `command`, or return if it would start.

    Mirrors CPython's subprocess on POSIX: a name with a slash is tried as a path (from
    `cwd`); a bare name is tried in each PATH entry of `env` in order; ENOENT and ENOTDIR
    mean "try the next one", the first other error is the one reported.
    """
    base = os.fspath(cwd) if cwd is not None else os.getcwd()
    if not os.path.isdir(base):
        return  # the spawn itself reports a bad cwd, exactly as the SDK's client does
    if os.path.dirname(command):
        candidates = [command]
    else:
        candidates = [os.path.join(d, command) for d in os.get_exec_path(dict(env or os.environ))]
    first_error = 0
    for cand in candidates:
        err = _exec_error(os.path.join(base, cand))
        if err == 0:
            return
        if err not in (errno.ENOENT, errno.ENOTDIR) and not first_error:
            first_error = err
    code = first_error or errno.ENOENT
    raise OSError(code, os.strerror(code), command)  # OSError() picks the subclass


def _exec_error(path: str) -> int:
    """0 if execve(path) would get past the permission checks, else its errno."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return exc.errno or errno.ENOENT
    if stat.S_ISDIR(st.st_mode) or not os.access(path, os.X_OK):
        return errno.EACCES
    return 0
