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
- `spawn(gate=True)` closes the window between a child's start and the moment the
  caller has told a third party (the guard's watcher) who it is: the child, set up and
  one step from exec, reads one byte from a pipe whose write end only the caller holds,
  and execs only once `Spawned.go()` wrote it. If the caller dies first (SIGKILL), the
  read sees EOF and the child exits (128+SIGKILL, as if PDEATHSIG had ended it) without
  exec'ing: no program of the caller's ever ran, so nothing can be left behind. Both
  ends are close-on-exec (the program never holds them), the child closes its copy of
  the write end first (else its own copy would hold off that EOF), and exec errors come
  back from `go()` instead (or `cancel()` ends the child unexec'd). Without a gate,
  nothing waits: exec errors come back from `spawn()` itself.
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

__all__ = ["GATE_CLOSED", "Spawned", "fork_call", "prepare_child", "spawn"]

# Which step failed in the child, as the first byte of the error report.
_AT_CWD = b"c"
_AT_EXEC = b"x"
_AT_SETUP = b"s"
# How a gated child exits when the caller died before its go-ahead (never exec'd).
GATE_CLOSED = 128 + 9  # as if PR_SET_PDEATHSIG's SIGKILL had ended it


class Spawned:
    """A started child: `ident` (pid, start), `pidfd` (or None), `pid`, `argv`; a gated
    one (`spawn(gate=True)`) execs only at `go()`."""

    __slots__ = ("ident", "pidfd", "argv", "_gate")

    def __init__(self, ident: ProcessId, pidfd: int | None, argv: list[str],
                 gate: tuple[int, int, str | None] | None = None) -> None:
        self.ident = ident
        self.pidfd = pidfd
        self.argv = argv
        # (the gate's write end, the error report's read end, cwd) until go()/cancel()
        self._gate = gate

    @property
    def pid(self) -> int:
        return self.ident.pid

    @property
    def gated(self) -> bool:
        """Still waiting for `go()` (or `cancel()`)."""
        return self._gate is not None

    def go(self) -> None:
        """Let a gated child exec (nothing without a gate). Raises what `spawn` raises
        for a child that could not run (it is reaped and this handle closed first)."""
        if self._gate is None:
            return
        gate, report_fd, cwd = self._gate
        self._gate = None
        try:
            os.write(gate, b"g")
        except OSError:
            pass  # EPIPE: the child died at the gate (a stray signal); its report says so
        finally:
            os.close(gate)
        report = _read_report(report_fd)
        if report:
            self.close()
            _reap_and_raise(self.pid, self.argv[0], cwd, report)

    def cancel(self) -> None:
        """A gated child that must never run: close its gate (it exits unexec'd at the
        EOF) and reap it. Nothing without a gate."""
        if self._gate is None:
            return
        gate, report_fd, _cwd = self._gate
        self._gate = None
        os.close(gate)
        os.close(report_fd)
        self.close()
        from mcp_tether.proc.reap import wait_child

        wait_child(self.pid)

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
    gate: bool = False,
) -> Spawned:
    """fork + exec `argv` (PATH searched, in `env`'s PATH if given); see the module doc.

    stdin/stdout/stderr: an fd to dup onto 0/1/2 in the child, or None to inherit.
    gate: the child waits for `Spawned.go()` before exec; the caller must call `go()` or
    `cancel()` (exec errors are raised by `go()` then, not here).
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
    gate_r, gate_w = os.pipe() if gate else (None, None)  # O_CLOEXEC too
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        try:
            pid = os.fork()
        except OSError as exc:  # EAGAIN/ENOMEM: said here, where we know what failed
            for fd in (err_r, err_w, gate_r, gate_w):
                if fd is not None:
                    os.close(fd)
            raise TetherError(f"cannot start {argv[0]}: {exc.strerror}") from exc
        if pid == 0:  # the child: never returns into the caller's code
            _child(argv, env_dict, cwd, (stdin, stdout, stderr), keep, err_w, old_mask,
                   (gate_r, gate_w), new_session=new_session, pdeathsig=pdeathsig, me=me)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    os.close(err_w)
    if gate_r is not None:
        os.close(gate_r)  # the child's copy is the only read end
    if gate_w is None:
        report = _read_report(err_r)
        if report:
            _reap_and_raise(pid, argv[0], cwd, report)
    info = read_info(pid)  # a zombie at worst: not reaped, so the pid is still its own
    ident = info.ident if info is not None else ProcessId(pid, 0.0)
    try:
        pidfd = platform.pidfd_open(pid)
    except OSError:  # ProcessLookupError cannot happen: not reaped yet
        pidfd = None
    return Spawned(ident, pidfd, argv,
                   None if gate_w is None else (gate_w, err_r, cwd))


def _read_report(fd: int) -> bytes:
    """The child's error report: b"" at exec (close-on-exec), else stage + errno."""
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def _child(
    argv: list[str],
    env: dict[str, str] | None,
    cwd: str | None,
    stdio: tuple[int | None, int | None, int | None],
    keep: list[int],
    err_w: int,
    old_mask: object,
    gate: tuple[int | None, int | None],
    *,
    new_session: bool,
    pdeathsig: int | None,
    me: int,
) -> None:
    stage = _AT_SETUP
    code = errno.EIO
    gate_r, gate_w = gate
    try:
        if gate_w is not None:
            os.close(gate_w)  # ours would hold off the EOF of the caller's death
        while gate_r is not None and gate_r <= 2:  # the caller runs with 0-2 closed:
            gate_r = os.dup(gate_r)  # out of reach of the dup2s below (non-inheritable)
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
        if gate_r is not None:
            stage = _AT_SETUP
            if not os.read(gate_r, 1):  # EOF: the caller died before its go-ahead
                os._exit(GATE_CLOSED)
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


def _reap_and_raise(pid: int, name: str, cwd: str | None, report: bytes) -> None:
    """Reap the child that could not run, then raise what its report says."""
    from mcp_tether.proc.reap import wait_child

    wait_child(pid)
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
