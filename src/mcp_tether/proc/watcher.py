"""The guard's watcher: its server's tree still ends when the guard is SIGKILLed, where the
kernel has no parent-death signal (macOS).

On Linux the server has PR_SET_PDEATHSIG and the guard a front (`proc.front`). Where
neither exists, the guard forks one small process right before it spawns the server
(`start`; it then names the server to it, `Watcher.server`): the watcher, which does
nothing but wait for the guard to end. The server's child execs only after that naming
(`spawn(gate=True)`): a guard SIGKILLed before it leaves a child that exits unexec'd, so
no server ever runs unnamed (the portable backend cannot find one by its mark).

Guarantees:
- It learns of the guard's end from the kernel, never by polling: a pipe whose only
  write end the guard holds turns to EOF when the guard exits however it exits (the
  kernel closes a SIGKILLed process's descriptors), and `platform.exit_fd` on the guard
  (kqueue EVFILT_PROC/NOTE_EXIT on macOS) turns readable at the same moment.
- A guard that ends its run says so first (`Watcher.stand_down`: one byte, then it
  closes its end and reaps the watcher): the watcher then exits at once and touches
  nothing. A run that ended in an error closes its end unsaid (`abandon`): as a death.
- A guard that ended without saying so (SIGKILL, a crash): the watcher ends the server's
  tree as the guard would, through a `proc.end.Tree` without a subreaper: every process
  that carries the guard's mark in its environment (`proc.mark`: the server from its
  first instant) and what they forked, and
  the server's group (proven by the server's identity) once named, each
  identity-checked right before its signal; it first leaves what the server detached for its user
  (`proc.leave`, with the host and its launchers as they were read while the guard
  lived). The ladder: SIGTERM, the guard's term grace, SIGKILL. One stderr line says so.
- It keeps the guard's stdin (the read end: no writer waits on it, and `ps` sees it as
  part of the guard's conversation, not a server of its own) and stderr (its one line);
  its stdout is /dev/null and every other descriptor of the guard is closed but its
  pipe, so no EOF the host waits for waits on it. It is in a process group of its own
  (a host's kill of the guard's group does not reach it; a terminal's Ctrl-C goes to
  the guard, which stands it down) and ignores SIGINT and SIGHUP.
- It never outlives its work: it exits once the guard stood it down, or once the tree
  it ended is empty or the ladder is over.
"""

from __future__ import annotations

import os
import select
import signal

from mcp_tether import log, platform
from mcp_tether.proc.identity import ProcessId
from mcp_tether.proc.spawn import fork_call

TYPE_CHECKING = False  # typing stays off the guard's start-up path
if TYPE_CHECKING:
    from mcp_tether.proc.leave import Root

__all__ = ["Watcher", "start"]

STAND_DOWN = b"D"


class Watcher:
    """The guard's side: the watcher's identity and the pipe's write end."""

    __slots__ = ("ident", "_fd")

    def __init__(self, ident: ProcessId, fd: int) -> None:
        self.ident = ident
        self._fd: int | None = fd

    @property
    def pid(self) -> int:
        return self.ident.pid

    def server(self, ident: ProcessId) -> None:
        """Tell the watcher the server's identity (its group is then ended too)."""
        self._say(f"S {ident.pid} {ident.start!r}\n".encode())

    def _say(self, what: bytes) -> None:
        if self._fd is None:
            return
        try:  # noqa: SIM105  # contextlib would cost the guard's start-up an import
            os.write(self._fd, what)
        except OSError:
            pass  # it is gone already: nothing to tell

    def stand_down(self) -> None:
        """The run is over and the tree ended: tell the watcher, then let it go."""
        if self._fd is None:
            return
        self._say(STAND_DOWN)
        os.close(self._fd)
        self._fd = None
        from mcp_tether.proc.reap import wait_child

        try:  # noqa: SIM105  # contextlib would cost the guard's start-up an import
            wait_child(self.pid)  # our own child: reaped, so the guard leaves nothing
        except ChildProcessError:
            pass  # reaped already with the tree's other children

    def abandon(self) -> None:
        """The run ended without ending the tree (an error): close our end unsaid, and
        the watcher ends the tree as after the guard's death."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def start(*, term_grace: float | None, kill_wait: float | None) -> Watcher | None:
    """Fork the watcher, before the guard spawns its server (so that no instant exists
    when the server runs unwatched); None where it cannot be forked (then the guard runs
    as before: the server ends at its client's EOF). `term_grace`, `kill_wait`: the
    guard's (None: the ladder's)."""
    from mcp_tether.proc import mark

    guard = os.getpid()
    token = mark.own_token()
    mine = _start_of(guard)
    if token is None or mine is None:
        return None
    r, w = os.pipe()  # close-on-exec: the server, exec'd later, never holds either end

    def drop() -> None:
        os.setpgid(0, 0)
        signal.set_wakeup_fd(-1)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 1)
        os.closerange(3, r)
        os.closerange(r + 1, _max_fd())

    def main() -> None:
        for sig in (signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        from mcp_tether.proc.leave import Root

        root = Root.read(guard)  # the host and its launchers, while the guard lives
        said = _wait(r, guard)
        if STAND_DOWN not in said:
            _end(guard, _server(said), token, mine, root, term_grace, kill_wait)

    # Every signal blocked around the fork (as `spawn` does): none may run the guard's
    # handlers in the watcher before its dispositions are reset.
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        pid = fork_call(main, before=drop, new_session=False, pdeathsig=None,
                        reset_signals=True)
    except OSError:
        os.close(r)
        os.close(w)
        return None
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    os.close(r)
    from mcp_tether.proc.identity import read_info

    info = read_info(pid)  # our unreaped child: the pid is its own
    return Watcher(info.ident if info is not None else ProcessId(pid, 0.0), w)


def _start_of(pid: int) -> float | None:
    from mcp_tether.proc.identity import read_info

    info = read_info(pid)
    return None if info is None else info.start


def _max_fd() -> int:
    try:
        return os.sysconf("SC_OPEN_MAX")
    except (OSError, ValueError):
        return 1024


def _wait(r: int, guard: int) -> bytes:
    """Until the guard ends (the pipe's EOF, or its exit descriptor); all it said."""
    poller = select.poll()
    poller.register(r, select.POLLIN)
    try:
        exit_fd = platform.exit_fd(guard)
    except OSError:  # the guard is already gone (ProcessLookupError) or cannot be watched
        exit_fd = None
    if exit_fd is not None:
        poller.register(exit_fd, select.POLLIN)
    said = b""
    try:
        while True:
            events = dict(poller.poll())
            if r in events:
                got = os.read(r, 4096)
                if not got:
                    return said  # EOF: every write end is closed, the guard's last
                said += got
                if STAND_DOWN in said:
                    return said
            elif exit_fd in events:
                # The guard exited: its write end is closed (or is being closed) by the
                # kernel; what is in the pipe is all it ever said.
                os.set_blocking(r, True)
                while got := os.read(r, 4096):
                    said += got
                return said
    finally:
        if exit_fd is not None:
            os.close(exit_fd)


def _server(said: bytes) -> ProcessId | None:
    """The server's identity, if the guard said it before it died."""
    for line in said.decode("ascii", "replace").splitlines():
        words = line.split()
        if len(words) == 3 and words[0] == "S":
            try:
                return ProcessId(int(words[1]), float(words[2]))
            except ValueError:
                return None
    return None


def _end(guard: int, server: ProcessId | None, token: str, born: float, root: Root,
         term_grace: float | None, kill_wait: float | None) -> None:
    """The guard died: end its server's tree (module doc): what carries the guard's mark
    (the server included), and the server's group when it was named."""
    from mcp_tether import ladder
    from mcp_tether.proc.end import Tree, end_tree
    from mcp_tether.proc.leave import decide

    known = [server] if server is not None else []
    tree = Tree(group=None if server is None else server.pid, known=known, marks=[token],
                born=born)
    members = tree.members_now()
    if not members:
        return
    tree.leave(decide(members, root=root, server_sid=None if server is None else server.pid,
                      known=known))
    log.say(f"mcp-tether: the guard {guard} is gone without ending its server: its "
            f"watcher ends the server's tree ({len(tree.members_now())} process(es))")
    end_tree(tree, grace=0.0,
             term_grace=ladder.TERM_GRACE if term_grace is None else term_grace,
             kill_wait=ladder.KILL_WAIT if kill_wait is None else kill_wait)
