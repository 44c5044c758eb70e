"""The guard's watcher: its server's tree still ends when the guard is SIGKILLed, where the
kernel has no parent-death signal (macOS).

On Linux the server has PR_SET_PDEATHSIG and the guard a front (`proc.front`). Where
neither exists, the guard forks one small process right after it spawns the server
(`start`): the watcher, which does nothing but wait for the guard to end.

Guarantees:
- It learns of the guard's end from the kernel, never by polling: a pipe whose only
  write end the guard holds turns to EOF when the guard exits however it exits (the
  kernel closes a SIGKILLed process's descriptors), and `platform.exit_fd` on the guard
  (kqueue EVFILT_PROC/NOTE_EXIT on macOS) turns readable at the same moment.
- A guard that ends its run says so first (`Watcher.stand_down`: one byte, then it
  closes its end and reaps the watcher): the watcher then exits at once and touches
  nothing. A run that ended in an error closes its end unsaid (`abandon`): as a death.
- A guard that ended without saying so (SIGKILL, a crash): the watcher ends the server's
  tree as the guard would, through a `proc.end.Tree` without a subreaper: the server's
  group (proven by the server's identity), every process that carries the guard's mark
  in its environment (`proc.mark`) and what they forked, each identity-checked right
  before its signal; it first leaves what the server detached for its user
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
    """The guard's side: the watcher's pid and the pipe's write end."""

    __slots__ = ("ident", "_fd")

    def __init__(self, ident: ProcessId, fd: int) -> None:
        self.ident = ident
        self._fd: int | None = fd

    @property
    def pid(self) -> int:
        return self.ident.pid

    def stand_down(self) -> None:
        """The run is over and the tree ended: tell the watcher, then let it go."""
        if self._fd is None:
            return
        try:  # noqa: SIM105  # contextlib would cost the guard's start-up an import
            os.write(self._fd, STAND_DOWN)
        except OSError:
            pass  # it is gone already: nothing to tell
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


def start(server: ProcessId, *, term_grace: float, kill_wait: float) -> Watcher | None:
    """Fork the watcher for `server` (spawned by this process, the guard); None where it
    cannot be forked (then the guard runs as before: the server ends at its client's EOF).
    """
    from mcp_tether.proc import mark
    from mcp_tether.proc.leave import Root

    guard = os.getpid()
    token = mark.own_token()
    mine = _start_of(guard)
    if token is None or mine is None:
        return None
    root = Root.read(guard)  # the host and its launchers, while the guard lives
    r, w = os.pipe()  # close-on-exec: the server, already exec'd, never held either end

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
        if _wait(r, guard):
            return
        _end(guard, server, token, mine, root, term_grace, kill_wait)

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


def _wait(r: int, guard: int) -> bool:
    """Until the guard ends; True when it stood the watcher down (a run that ended)."""
    poller = select.poll()
    poller.register(r, select.POLLIN)
    try:
        exit_fd = platform.exit_fd(guard)
    except OSError:  # the guard is already gone (ProcessLookupError) or cannot be watched
        exit_fd = None
    if exit_fd is not None:
        poller.register(exit_fd, select.POLLIN)
    try:
        while True:
            events = dict(poller.poll())
            if r in events or exit_fd in events:
                # The guard writes its byte before it closes the pipe and exits: what is
                # in the pipe now is all it ever said (EOF: it said nothing).
                return _stood_down(r)
    finally:
        if exit_fd is not None:
            os.close(exit_fd)


def _stood_down(r: int) -> bool:
    os.set_blocking(r, False)
    try:
        data = os.read(r, 16)
    except BlockingIOError:  # the guard exited, its write end not closed yet: wait for it
        os.set_blocking(r, True)
        data = os.read(r, 16)
    return STAND_DOWN in data


def _end(guard: int, server: ProcessId, token: str, born: float, root: Root,
         term_grace: float, kill_wait: float) -> None:
    """The guard died: end its server's tree (module doc)."""
    from mcp_tether.proc.end import Tree, end_tree
    from mcp_tether.proc.leave import decide

    tree = Tree(group=server.pid, known=[server], marks=[token], born=born)
    members = tree.members_now()
    if not members:
        return
    tree.leave(decide(members, root=root, server_sid=server.pid, known=[server]))
    log.say(f"mcp-tether: the guard {guard} is gone without ending its server: its "
            f"watcher ends the server's tree ({len(tree.members_now())} process(es))")
    end_tree(tree, grace=0.0, term_grace=term_grace, kill_wait=kill_wait)
