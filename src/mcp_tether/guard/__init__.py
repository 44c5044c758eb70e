"""`mcp-tether run -- CMD...`: a guard that makes any stdio server die with its client.

Guarantees:
- Zero copy. The server inherits the guard's fds 0, 1, 2 (and anything else the host
  passed); the guard never reads or writes them and never writes a byte to stdout. Its
  own fds (signal pipe, pidfds) are close-on-exec.
- The server runs in a session (and so a process group) of its own, with
  PR_SET_PDEATHSIG(SIGKILL) set in the child before exec, and the guard is a child
  subreaper: descendants that escape the group (setsid + double fork) reparent to it.
  Where the platform has neither (macOS), the server's environment carries the guard's
  mark (MCP_TETHER_TREE), by which such descendants are found (`proc.end`), and the guard
  forks a watcher before the server (`proc.watcher`) that ends the server's tree if the
  guard dies without ending it (SIGKILL).
- The client is gone when any of these happens, seen by one poll(2) loop:
  1. stdin hangs up (POLLHUP on a pipe; POLLRDHUP on a socket, so a half-close counts),
     seen without reading: the server shares that stdin and sees EOF by itself;
  2. the guard's parent dies (pidfd on the parent, getppid() as the fallback);
  3. SIGTERM, SIGINT or SIGHUP reach the guard (handlers only wake the loop);
  4. any other signal whose default action would end the guard and that a handler can
     take (SIGQUIT, SIGUSR1/2, SIGALRM, real-time, ...: `session.FATAL_SIGNALS`): not
     forwarded; the ladder runs from SIGTERM, then the guard exits as after the others.
- Then the shutdown ladder (`mcp_tether.ladder.run_ladder`) runs on the server's group
  plus every escaped descendant: after a hang-up, `--grace` for the server to exit on
  its own; after a parent death with stdin still open, no grace (no EOF will come);
  after a signal, the signal is forwarded to the group first and `--grace` follows; then
  SIGTERM, `--term-grace`, SIGKILL. A second SIGINT sends SIGKILL at once.
- A tree is empty when the guard has no child left to reap (it is their subreaper), not
  when a snapshot finds nothing: every rung's signal reaches processes forked while the
  rung lasts, so a pid-hopper cannot slip out (`proc.end`).
- When the server exits by itself while descendants still hold the guard's stdin or
  stdout (a daemonizing launcher handing over to the real server), the guard keeps
  guarding them as it guarded the server; the ladder starts when the client goes, and
  the exit status is then the status of the last of them the guard reaped (or the
  launcher's, if that was not 0). When nothing holds the stdio, what is left of the
  tree gets the same ladder from SIGTERM on.
- The guard exits with the server's status (its code, 128+N after signal N) and never
  returns before the server is reaped; every child of the guard is reaped.
- Missing command: exit 127; not executable: 126 (one line on stderr, nothing started).
- The outcome as data, for a program that starts the guard (the probe): with
  `MCP_TETHER_REPORT_FD=N` in the environment, one versioned JSON line on fd N at the
  end (reason, statuses, the rung that ended the server, the rungs taken, survivors,
  escapees, holders), beside the human summary on stderr; the variable and the fd are
  kept from the server; fds 0-2 are refused. The contract, both ends: `report`. Stop
  signals that come after the run (the tree is gone) stay blocked until the guard
  exits: they cannot cut off the report or the summary line.

The pid the host knows is a thin front (`proc.front`, Linux): the `run` command forks
once before anything else; the front keeps the host's pid, forwards SIGTERM, SIGINT and
SIGHUP to the supervisor behind it and exits with its status; the supervisor (in a
process group of its own) does everything above. A host that SIGKILLs the guard's pid
kills the front only: the supervisor sees its parent die (a pidfd) and ends the whole
tree with the ladder, descendants behind `sh -c`/`npx`, daemons and escapees included.
It watches the host too (a pidfd inherited from before the fork), so the host's own
death is seen as before. Where the front cannot be made (no pidfds), the guard runs as
one process.

PR_SET_PDEATHSIG(SIGKILL) on the server covers what is left: if the supervisor itself
is SIGKILLed (or crashes), the kernel SIGKILLs the server at once, with no grace. Only
the server process is covered: its own children lose their subreaper and are
reparented to init, and survive unless they notice by themselves (EOF on the shared
stdin). The supervisor does not set PDEATHSIG on itself: the kernel would kill it
before it could run the ladder (and the signal fires when the parent *thread* exits,
which hosts that spawn from a worker thread do all the time). It watches instead.

Cost of the session: with CONFIG_SCHED_AUTOGROUP (most desktop kernels) a new session is
also a new scheduling group; on a loaded machine that measured as slower client<->server
ping-pong, exactly as when a client starts the server with start_new_session itself (the
Python SDK does). The guard itself is idle in poll(2) while bytes flow (0 CPU ticks in
bench/bench_guard.py, which prints the new-session baseline beside the guarded figure).

Layout: `session` (the loop, on the core: proc.front, proc.spawn, proc.inbox, proc.end), `result`
(GuardResult and its summary line), `report` (the machine-readable outcome: the guard
writes it, the probe reads it), `cli` (the `run` command), `argv` (recognising a guard
command line, for `hosts` and `probe`).
Import-light on purpose (it is on every guarded server's launch path): stdlib and
mcp_tether.{errors,log,platform,proc,ladder,watch} only, and the ladder only after the
fork, while the server starts. Not thread-safe: call `run_guarded` from the main thread
(signal handlers and the wakeup fd live there).
"""

from __future__ import annotations

from mcp_tether import _lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from mcp_tether.guard.result import GuardResult
    from mcp_tether.guard.session import run_guarded

__all__ = ["GuardResult", "run_guarded"]

# Loaded on first use: `guard.argv` alone (what `hosts` and `ps` read) does not pull in
# the guard's loop.
__getattr__, __dir__ = _lazy.attach(__name__, {"GuardResult": ".result",
                                               "run_guarded": ".session"})
