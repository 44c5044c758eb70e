"""Starting a server process: fork + exec with the child's set-up, errors before it runs.

Guarantees:
- `prepare_child()` is the one child-side set-up (run between fork and exec): a new
  session (so a process group of its own, pgid == pid), PR_SET_PDEATHSIG followed by a
  re-check of getppid() (the parent may have died before the call: then the child exits
  at once with 128+SIGKILL instead of running as an orphan), and default dispositions
  for every signal Python (or we) set a handler for, plus SIGPIPE/SIGXFSZ, which
  Python ignores and exec would keep ignored. Signals the caller's own parent chose to
  ignore (nohup's SIGHUP) stay ignored.
- `spawn()` blocks every signal around fork, so a signal meant for the new process
  cannot run the parent's Python handler in the child; the child unblocks only after
  its dispositions are reset.
- Exec errors come back through a close-on-exec pipe before anything runs: a missing
  command raises `CommandNotFound` (127), one that cannot run `CommandNotExecutable`
  (126, a script without a `#!` line included: "exec format error", as a shell
  without its sh fallback reports it), a missing or unusable `cwd`
  `WorkingDirectoryError` (2), saying the directory, not the command. The failed child
  is reaped before the error is raised.
- The child inherits the parent's fds as they are (fds 0-2 unless replaced, and every
  inheritable fd: hosts pass more than stdio); `pass_fds` are made inheritable in the
  child only. Descriptors created here are close-on-exec.
- `Spawned.ident` is known the moment spawn returns (the child cannot be reaped, so its
  pid cannot be reused, before the caller reaps it), and `Spawned.pidfd` pins it where
  the kernel has pidfds. The caller owns reaping (`proc.reap`) and `close()`.
"""

from __future__ import annotations

import errno
import os
import signal

from mcp_tether import platform
from mcp_tether.errors import (
    CommandNotExecutable,
    CommandNotFound,
    TetherError,
    WorkingDirectoryError,
)
from mcp_tether.proc.identity import ProcessId, read_info

TYPE_CHECKING = False  # typing/collections.abc stay off the guard's start-up path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

__all__ = ["Spawned", "fork_call", "prepare_child", "spawn"]

# Which step failed in the child, as the first byte of the error report.
_AT_CWD = b"c"
_AT_EXEC = b"x"
_AT_SETUP = b"s"


class Spawned:
    """A started child: `ident` (pid, start), `pidfd` (or None), `pid`, `argv`."""

    __slots__ = ("ident", "pidfd", "argv")

    def __init__(self, ident: ProcessId, pidfd: int | None, argv: list[str]) -> None:
        self.ident = ident
        self.pidfd = pidfd
        self.argv = argv

    @property
    def pid(self) -> int:
        return self.ident.pid

    def close(self) -> None:
        """Close the pidfd (the process is not touched)."""
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None

    def __repr__(self) -> str:
        return f"Spawned({self.ident!r}, pidfd={self.pidfd})"


def prepare_child(
    *,
    new_session: bool,
    pdeathsig: int | None,
    reset_signals: bool,
    expected_parent: int | None,
) -> None:
    """The child's set-up between fork and exec (see the module doc). Call only there.

    `expected_parent` is the parent's pid taken *before* the fork; with `pdeathsig`, a
    child whose parent is no longer that pid exits at once (128+pdeathsig). Raises
    OSError if setsid fails (it cannot in a fresh child: we are not a group leader).
    """
    if new_session:
        os.setsid()
    if reset_signals:
        for sig in signal.valid_signals():
            if sig in (signal.SIGKILL, signal.SIGSTOP):
                continue
            try:
                if callable(signal.getsignal(sig)):
                    signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):  # RT signals the libc reserves
                continue
        for num in platform.signals("SIGPIPE", "SIGXFSZ"):  # Python ignores them; exec
            signal.signal(num, signal.SIG_DFL)  # would keep that
    if pdeathsig is not None:
        platform.set_pdeathsig(pdeathsig)
        # Re-check after setting it: the parent may have died before the call.
        if expected_parent is not None and os.getppid() != expected_parent:
            os._exit(128 + pdeathsig)


def fork_call(
    child_main: Callable[[], object],
    *,
    before: Callable[[], object] | None = None,
    new_session: bool,
    pdeathsig: int | None,
    reset_signals: bool,
) -> int:
    """Fork; in the child, `before()` (dropping the parent's fds and handlers), then
    `prepare_child` (against this process as the parent), then `child_main()`, then
    `os._exit(70)` whether it returned or raised: a child never unwinds into the
    parent's code. Returns the child's pid in the parent.

    For a child that runs Python code of ours rather than exec'ing a program (the
    probe's client)."""
    me = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            if before is not None:
                before()
            prepare_child(new_session=new_session, pdeathsig=pdeathsig,
                          reset_signals=reset_signals, expected_parent=me)
            child_main()
        finally:
            os._exit(70)
    return pid


def spawn(
    argv: list[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stdin: int | None = None,
    stdout: int | None = None,
    stderr: int | None = None,
    new_session: bool = True,
    pdeathsig: int | None = None,
    pass_fds: Iterable[int] = (),
) -> Spawned:
    """fork + exec `argv` (PATH searched, in `env`'s PATH if given); see the module doc.

    stdin/stdout/stderr: an fd to dup onto 0/1/2 in the child, or None to inherit.
    """
    if not argv:
        raise TetherError("no command to run")
    argv = list(argv)
    keep = list(pass_fds)
    env_dict = None if env is None else dict(env)
    if pdeathsig is not None:
        platform.load_prctl()  # no library loading between fork and exec
    me = os.getpid()
    err_r, err_w = os.pipe()  # O_CLOEXEC: EOF at a successful exec
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        try:
            pid = os.fork()
        except OSError as exc:  # EAGAIN/ENOMEM: said here, where we know what failed
            os.close(err_r)
            os.close(err_w)
            raise TetherError(f"cannot start {argv[0]}: {exc.strerror}") from exc
        if pid == 0:  # the child: never returns into the caller's code
            _child(argv, env_dict, cwd, (stdin, stdout, stderr), keep, err_w, old_mask,
                   new_session=new_session, pdeathsig=pdeathsig, me=me)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    os.close(err_w)
    with os.fdopen(err_r, "rb") as fh:
        report = fh.read()  # b"" at exec (close-on-exec), else stage + errno
    if report:
        from mcp_tether.proc.reap import wait_child

        wait_child(pid)
        _raise(argv[0], cwd, report)
    info = read_info(pid)  # a zombie at worst: not reaped, so the pid is still its own
    ident = info.ident if info is not None else ProcessId(pid, 0.0)
    try:
        pidfd = platform.pidfd_open(pid)
    except OSError:  # ProcessLookupError cannot happen: not reaped yet
        pidfd = None
    return Spawned(ident, pidfd, argv)


def _child(
    argv: list[str],
    env: dict[str, str] | None,
    cwd: str | None,
    stdio: tuple[int | None, int | None, int | None],
    keep: list[int],
    err_w: int,
    old_mask: object,
    *,
    new_session: bool,
    pdeathsig: int | None,
    me: int,
) -> None:
    stage = _AT_SETUP
    code = errno.EIO
    try:
        prepare_child(new_session=new_session, pdeathsig=pdeathsig, reset_signals=True,
                      expected_parent=me)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)  # type: ignore[arg-type]
        for target, fd in enumerate(stdio):
            if fd is not None and fd != target:
                os.dup2(fd, target)  # dup2 makes the target inheritable
            elif fd is not None:
                os.set_inheritable(fd, True)
        for fd in keep:
            os.set_inheritable(fd, True)
        if cwd is not None:
            stage = _AT_CWD
            os.chdir(cwd)
        stage = _AT_EXEC
        if env is None:
            os.execvp(argv[0], argv)
        else:
            os.execvpe(argv[0], argv, env)
    except OSError as exc:
        code = exc.errno or errno.EIO
    except BaseException:  # noqa: BLE001, S110  # anything: report, never unwind
        code = errno.EIO
    try:
        os.write(err_w, stage + str(code).encode())
    finally:
        os._exit(127)


def _raise(name: str, cwd: str | None, report: bytes) -> None:
    stage, code = report[:1], int(report[1:] or errno.EIO)
    if stage == _AT_CWD:
        raise WorkingDirectoryError(str(cwd), os.strerror(code).lower())
    if stage == _AT_EXEC:
        if code in (errno.ENOENT, errno.ENOTDIR):
            raise CommandNotFound(name)
        reason = os.strerror(code).lower()
        if code == errno.ENOEXEC:
            reason += " (a script without a #! line?)"
        raise CommandNotExecutable(name, reason)
    raise TetherError(f"cannot start {name}: {os.strerror(code).lower()}")
