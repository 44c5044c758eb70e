"""Following the process a `docker exec -i CONTAINER CMD` (or `podman exec -i`) starts.

An exec'd process lives in a container that runs on without us: when its engine client
dies or is signalled, the engine does not end it (there is no signal proxy for exec),
so one is left per session. The choice (documented in docs/containers.md): the command
is rewritten before it runs to carry `--env MCP_TETHER_EXEC=<token>` (unique to this
run), and the process is reached *inside* the container, through the engine: each rung
is one `<engine> exec CONTAINER sh -c SCRIPT` whose script finds the processes whose
environment holds exactly that token (the exec'd process and whatever it started, which
inherit it) and signals each one as it reads it.

Why not the exec's pid from the Engine API (`GET /exec/{id}/json` -> Pid): that pid is
in the daemon's pid namespace, which a guard in another one (a container, a CI job's
namespace) cannot see or check; and the exec ids of a container do not say which
client made which exec, so two sessions running the same command could not be told
apart. The token says both, from wherever the engine answers.

Guarantees of `ExecFollow` (the interface of `follow.ContainerFollow`, as the guard's
ladder and the probe's keeper use it):
- `signal(sig)` reaches only processes that carry this run's token, read in the same
  shell loop right before each kill (a pid reused inside the container in between would
  have to be a new process started with our token: none is); "sent", "gone" (nothing
  carries it, or the container is not running) or "denied" (the engine refused, or the
  container has no `sh`: then one warning line says so and nothing is signalled).
- `wait_gone(timeout)` polls until nothing carries the token (the instant it saw that),
  or returns None.
- `end()` sends SIGKILL to whatever still carries the token (idempotent, never raises);
  the container itself is never stopped or removed: it is not ours.
Limits: the container needs `sh` and `cat` (busybox, Debian, Alpine have them;
distroless images do not: then the exec'd process is left, and said so); a process
that rewrites its own environment block, or clears it, is not found.
"""

from __future__ import annotations

import os
import signal as _signal
import time

from mcp_tether import log
from mcp_tether.container.command import RunCommand
from mcp_tether.container.engine import DENIED, GONE, SENT, Engine, EngineError, poll_gone

__all__ = ["ExecFollow", "EXEC_ENV"]

EXEC_ENV = "MCP_TETHER_EXEC"
KILL_PASSES = 5  # SIGKILL passes at most, each one engine call
# $1: the exact NAME=token line to look for; $2: a signal name, or "" to only list.
# Prints each matching pid; a process that is gone (or a zombie: empty environ) does not
# match. `$$` is this shell, which does not carry the token anyway.
_SCRIPT = (
    'for f in /proc/[0-9]*/environ; do '
    'p=${f#/proc/}; p=${p%/environ}; [ "$p" = "$$" ] && continue; '
    # The shell drops the NUL bytes between variables: a substring match, and a 64-bit
    # random token that no other variable's text carries by chance.
    'case "$(cat "$f" 2>/dev/null)" in *"$1"*) ;; *) continue;; esac; '
    'if [ -n "$2" ]; then kill -s "$2" "$p" 2>/dev/null && echo "$p"; else echo "$p"; fi; '
    'done; exit 0'
)


class ExecFollow:
    """The process tree one `exec` command starts in a running container."""

    def __init__(self, engine: Engine, cmd: RunCommand, owner: str) -> None:
        self.engine = engine
        self.cmd = cmd
        self.owner = owner
        self.container = cmd.image or ""  # the container as named in the command
        self.container_id: str | None = self.container
        self.token = os.urandom(8).hex()
        self.argv = cmd.rewrite(["--env", f"{EXEC_ENV}={self.token}"])
        self.exit_code: int | None = None  # the engine client reports it; we cannot
        self.stopped_at: float | None = None
        self.signalled = False
        self._warned = False

    def __repr__(self) -> str:
        return f"ExecFollow({self.engine.name} exec in {self.container})"

    @property
    def short_id(self) -> str:
        return self.container[:12]

    def find(self) -> str | None:
        return self.container_id

    def _run(self, sig: str) -> tuple[str, list[int]]:
        """(state, pids): state "ok", "gone" (container not running) or "denied"."""
        try:
            code, out, err = self.engine.call(
                ["exec", self.container, "sh", "-c", _SCRIPT, "sh",
                 f"{EXEC_ENV}={self.token}", sig])
        except EngineError as e:
            self._warn(str(e))
            return DENIED, []
        if code == 0:
            return "ok", [int(w) for w in out.split() if w.isdigit()]
        low = err.lower()
        if "not running" in low or "no such container" in low:
            return GONE, []
        self._warn(err.strip()[:200] or f"exit status {code}")
        return DENIED, []

    def _warn(self, why: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning(f"exec'd process in container {self.container} not reached "
                        f"(it needs sh and cat): {why}")

    # -- the ladder's rungs ------------------------------------------------------------
    def signal(self, sig: int) -> str:
        """`sig` to every process in the container that carries our token."""
        name = _signal.Signals(sig).name[3:]  # `kill -s TERM`: busybox wants no SIG
        state, pids = self._run(name)
        if state != "ok":
            return state
        if not pids:
            return GONE
        # A process forked after the script listed /proc (a shell loop starting its next
        # child) carries the token too: SIGKILL goes round again until a pass finds none.
        # Not SIGTERM: a second one cuts short a graceful exit some servers begin on it.
        passes = 1
        while sig == _signal.SIGKILL and passes < KILL_PASSES:
            again, more = self._run(name)
            if again != "ok" or not more:
                break
            passes += 1
        log.debug(f"container {self.container}: {name} sent to {pids}")
        self.signalled = True
        return SENT

    def state(self) -> str:
        """"running" (something carries the token), "gone" or "unknown"."""
        if self.stopped_at is not None:
            return "gone"
        state, pids = self._run("")
        if state == DENIED:
            return "unknown"
        if state == GONE or not pids:
            self.stopped_at = time.monotonic()
            return "gone"
        return "running"

    def running(self) -> bool:
        return self.state() in ("running", "unknown")

    def wait_gone(self, timeout: float) -> float | None:
        """Until nothing carries the token (its monotonic instant) or `timeout` passed;
        polled (each look is one engine call), never a helper left running."""
        return poll_gone(lambda: self.stopped_at if self.state() == "gone" else None, timeout)

    def survivors(self) -> list[dict[str, str]]:
        state, pids = self._run("")
        return [{"container": self.short_id, "cmdline": f"exec'd pid {p} (in the container)"}
                for p in pids] if state == "ok" else []

    def end(self) -> None:
        """SIGKILL to whatever still carries the token; never raises."""
        try:
            if self.stopped_at is None and self.state() == "running":
                self.signal(_signal.SIGKILL)
        except Exception as e:  # noqa: BLE001  # cleanup must never raise into a caller
            log.warning(f"container {self.container}: exec'd process not ended: {e}")
