"""`spawn`: a plain, synchronous handle on a server behind the guard, for any host.

For hosts that frame messages themselves (no SDK client): `spawn(argv)` starts
`python -m mcp_tether run -- argv` with pipes for stdin and stdout, in a session of its
own, and returns a `ServerProcess` with binary, unbuffered `.stdin` / `.stdout`, the
guard's `.pid`, `poll()` / `wait()` like `subprocess.Popen`, and `close()`.

Guarantees: the server's whole tree dies with this host however the host dies (the
guard watches its stdin and its parent); `close()` (or leaving the `with` block) closes
stdin, lets the guard run the ladder on the whole tree (`grace`, SIGTERM, `term_grace`,
SIGKILL) and returns the server's exit status once the last process is gone, with the
safety rung of `stop.settle` if the guard itself is stuck. A command that cannot start
raises FileNotFoundError / PermissionError before anything is spawned, as
`subprocess.Popen` would. Stdlib only: no MCP SDK needed.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import IO

from mcp_tether.client.launch import check_command, guard_command
from mcp_tether.client.stop import Settled, settle, settle_budget
from mcp_tether.ladder import GRACE_AFTER_EOF, TERM_GRACE
from mcp_tether.proc import ProcessId, identify

__all__ = ["spawn", "ServerProcess"]

# How long `close()` waits to reap the guard once it is known to have exited.
REAP_TIMEOUT = 2.0


class ServerProcess:
    """A server running behind the guard. `.pid` is the guard's; the server is its child."""

    def __init__(self, popen: subprocess.Popen[bytes], grace: float, term_grace: float) -> None:
        self._popen = popen
        self.guard: ProcessId | None = identify(popen.pid)
        self.grace = grace
        self.term_grace = term_grace
        self.settled: Settled | None = None  # how close() ended, once it has run
        assert popen.stdin is not None and popen.stdout is not None
        self.stdin: IO[bytes] = popen.stdin
        self.stdout: IO[bytes] = popen.stdout

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        """The server's exit status as the guard mirrors it (128+N after signal N)."""
        return self._popen.returncode

    def poll(self) -> int | None:
        return self._popen.poll()

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the guard to exit by itself (the server ended); see subprocess."""
        return self._popen.wait(timeout)

    def close(self) -> int | None:
        """Close stdin, let the ladder end the tree, return the exit status. Idempotent.

        Returns None only if even the safety rung could not see the guard go.
        """
        if self.settled is None:
            with contextlib.suppress(OSError):  # EPIPE on a flush: the server is gone
                self.stdin.close()
            # Drop what the server still writes: one blocked on a full stdout pipe
            # could never read the EOF it is being sent. The tree's end gives EOF.
            drain = threading.Thread(target=_drain, args=(self.stdout,), daemon=True)
            drain.start()
            budget = settle_budget(self.grace, self.term_grace)
            self.settled = settle(self.guard, budget)
            drain.join(REAP_TIMEOUT)
            if not drain.is_alive():
                self.stdout.close()
        try:
            return self._popen.wait(REAP_TIMEOUT)
        except subprocess.TimeoutExpired:
            return None

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ServerProcess guard pid={self.pid} returncode={self.returncode}>"


def _drain(stream: IO[bytes]) -> None:
    with contextlib.suppress(OSError, ValueError):
        while stream.read(65536):
            pass


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stderr: IO[str] | IO[bytes] | int | None = None,
    grace: float = GRACE_AFTER_EOF,
    term_grace: float = TERM_GRACE,
) -> ServerProcess:
    """Start `argv` behind the guard. `env` None inherits this process's environment
    (as subprocess does); `stderr` None shares our fd 2. Graces default to the SDKs' 2 s."""
    if not argv:
        raise ValueError("spawn() needs a command")
    command, *args = argv
    check_command(command, env, cwd)
    full = guard_command(command, args, grace=grace, term_grace=term_grace, env=env)
    popen = subprocess.Popen(
        full,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=None if env is None else dict(env),
        cwd=cwd,
        bufsize=0,
        start_new_session=True,
    )
    return ServerProcess(popen, grace, term_grace)
