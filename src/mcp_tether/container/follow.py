"""Following the container a server command starts, and ending it rung by rung.

The choice (documented in docs/containers.md): the command is rewritten before it runs
to carry `--cidfile <private file>` and two labels, `io.mcp-tether.run=<token>` (this
run, unique) and `io.mcp-tether.owner=<pid>:<start>:<pidns>` (the process that answers
for the container: the guard or the probe's keeper). The cidfile names the container as
soon as the engine created it; the run label finds it even when the engine client died
before writing the file. The owner label is the evidence `ps`/`reap` check later.

Guarantees of `ContainerFollow`:
- `signal(sig)` reaches the container through the engine (`kill --signal`), whatever
  happened to the engine client; "sent", "gone" (not running, or never created) or
  "denied" (the engine refused or did not answer).
- `wait_gone(timeout)` returns the monotonic instant the container was seen stopped
  (engine polled until `timeout`), or None; `exit_code` is its status then.
- `end()` removes the container if it is still running, if one of our rungs ended it,
  or if it was started with `--rm` (one that left by itself without `--rm` is kept, as
  the engine keeps it); idempotent, never raises; the private cidfile goes with it.
- Only containers carrying this run's token are ever signalled or removed.
No helper process outlives a call: a guard counts its children to know its tree is
empty, and a `wait` left running would be one.
"""

from __future__ import annotations

import os
import shutil
import signal as _signal
import tempfile
import time

from mcp_tether import log, platform
from mcp_tether.container.command import RunCommand, parse_run, why_not_followed
from mcp_tether.container.engine import (
    DENIED,
    GONE,
    SENT,
    Engine,
    EngineError,
    engine_for,
    poll_gone,
)
from mcp_tether.container.execfollow import ExecFollow
from mcp_tether.container.labels import LABEL_OWNER, LABEL_RUN
from mcp_tether.proc import read_info

__all__ = ["Box", "ContainerFollow", "follow_for", "owner_label", "LABEL_RUN", "LABEL_OWNER"]

# How far back to look for the `die` event of a container removed before we looked.
EVENTS_SINCE = 3600


def owner_label(pid: int | None = None) -> str:
    """`<pid>:<start ticks>:<pid namespace inode>` of `pid` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    info = read_info(pid)
    start = "?" if info is None else repr(info.start)
    ns = platform.backend.pid_namespace(pid)
    return f"{pid}:{start}:{'?' if ns is None else ns}"


class Box:
    """One container, by full id, reached through its engine: state, rungs, removal."""

    def __init__(self, engine: Engine, container_id: str | None, *,
                 remove: bool = False) -> None:
        self.engine = engine
        self.container_id = container_id
        self.remove = remove  # remove it at end() even once stopped (`--rm`, or ours)
        self.exit_code: int | None = None
        self.stopped_at: float | None = None
        self.removed = False
        self.signalled = False  # a rung reached it: we ended it, so we remove it

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.engine.name} {self.short_id})"

    @property
    def short_id(self) -> str:
        return self.container_id[:12] if self.container_id else "?"

    def find(self) -> str | None:
        return self.container_id

    def state(self) -> str:
        """"running", "stopped", "gone" (removed or never created) or "unknown"."""
        cid = self.find()
        if cid is None:
            return "gone"
        try:
            code, out, err = self.engine.call(
                ["inspect", "--format", "{{.State.Running}} {{.State.ExitCode}}", cid])
        except EngineError:
            return "unknown"
        if code != 0:
            if "no such" not in err.lower():
                return "unknown"
            if self.exit_code is None:  # removed (`--rm`) before we saw it stop
                self._stopped(self._exit_from_events(cid))
            return "gone"
        running, _, exit_code = out.strip().partition(" ")
        if running == "true":
            return "running"
        self._stopped(int(exit_code) if exit_code.lstrip("-").isdigit() else None)
        return "stopped"

    def _exit_from_events(self, cid: str) -> int | None:
        """The exit code of a container already removed, from the engine's recent
        `die` event (the daemon keeps recent events in memory)."""
        if self.engine.name != "docker":
            return None
        try:
            code, out, _err = self.engine.call(
                # `--until` a second ahead: "now" is cut to whole seconds and would
                # miss a die event of this very second (the call blocks until then).
                ["events", "--since", f"{EVENTS_SINCE}s", "--until",
                 f"{int(time.time()) + 1}", "--filter",
                 f"container={cid}", "--filter", "event=die", "--format",
                 '{{index .Actor.Attributes "exitCode"}}'])
        except EngineError:
            return None
        last = out.split()[-1] if code == 0 and out.split() else ""
        return int(last) if last.lstrip("-").isdigit() else None

    def _stopped(self, exit_code: int | None) -> None:
        if self.stopped_at is None:
            self.stopped_at = time.monotonic()
        if self.exit_code is None:
            self.exit_code = exit_code

    # -- the ladder's rungs ------------------------------------------------------------
    def signal(self, sig: int) -> str:
        """`sig` to the container's init, through the engine; see the module doc."""
        cid = self.find()
        if cid is None:
            return GONE
        name = _signal.Signals(sig).name
        try:
            code, _out, err = self.engine.call(["kill", "--signal", name, cid])
        except EngineError as e:
            log.warning(f"container {self.short_id}: {name} not sent: {e}")
            return DENIED
        if code == 0:
            log.debug(f"container {self.short_id}: {name} sent")
            self.signalled = True
            return SENT
        low = err.lower()
        if "not running" in low or "no such" in low:
            return GONE
        log.warning(f"container {self.short_id}: {name} refused: {err.strip()[:200]}")
        return DENIED

    def wait_gone(self, timeout: float) -> float | None:
        """Until the container is stopped (its monotonic instant) or `timeout` passed.

        Polls `inspect` (POLL_MIN doubling to POLL_MAX) rather than keeping an
        `<engine> wait` running: a helper left running by a caller that is SIGKILLed
        mid-wait would outlive it, and a guard counts its children to know it is done.
        The instant is the first poll that saw it stopped (late by at most one poll)."""
        def gone() -> float | None:
            if self.stopped_at is None and self.state() in ("stopped", "gone"):
                self._stopped(None)
            return self.stopped_at

        return poll_gone(gone, timeout)

    def running(self) -> bool:
        return self.state() in ("running", "unknown")

    # -- what is left ------------------------------------------------------------------
    def survivors(self) -> list[dict[str, str]]:
        """[{"container": id12, "cmdline": ...}] for each process of a running container."""
        if self.state() != "running" or self.container_id is None:
            return []
        try:
            code, out, _err = self.engine.call(["top", self.container_id, "-o", "pid,args"])
        except EngineError:
            code, out = 1, ""
        rows = [line.split(None, 1) for line in out.splitlines()[1:]] if code == 0 else []
        procs = [r[1].strip() for r in rows if len(r) == 2]
        return [{"container": self.short_id, "cmdline": c} for c in procs] or [
            {"container": self.short_id, "cmdline": "(not listed by the engine)"}]

    def end(self) -> None:
        """Remove the container if it still runs, if a rung of ours ended it, or if it
        was started with `--rm`; one that left by itself without `--rm` is kept (as the
        engine would keep it). Idempotent; never raises."""
        try:
            if not self.removed and self.find() is not None:
                state = self.state()
                if state == "running" or (state == "stopped"
                                          and (self.remove or self.signalled)):
                    code, _o, err = self.engine.call(["rm", "-f", self.container_id or ""])
                    if code != 0 and "no such" not in err.lower():
                        log.warning(f"container {self.short_id}: rm -f: {err.strip()[:200]}")
                    else:
                        self.removed = True
                elif state == "gone":
                    self.removed = True
        except Exception as e:  # noqa: BLE001  # cleanup must never raise into a caller
            log.warning(f"container {self.short_id}: not removed: {e}")


class ContainerFollow(Box):
    """The container of one server command; see the module doc."""

    def __init__(self, engine: Engine, cmd: RunCommand, owner: str) -> None:
        super().__init__(engine, None, remove=cmd.remove)
        self.cmd = cmd
        self.token = os.urandom(8).hex()
        self.owner = owner
        self._dir: str | None = None
        if cmd.cidfile:
            self.cidfile = cmd.cidfile
            extra: list[str] = []
        else:
            self._dir = tempfile.mkdtemp(prefix="mcp-tether-cid.")
            self.cidfile = os.path.join(self._dir, "cid")
            extra = ["--cidfile", self.cidfile]
        extra += ["--label", f"{LABEL_RUN}={self.token}", "--label", f"{LABEL_OWNER}={owner}"]
        self.argv = cmd.rewrite(extra)

    # -- finding it ------------------------------------------------------------------
    def find(self) -> str | None:
        """The container's full id, once the engine created it (cidfile, then label)."""
        if self.container_id:
            return self.container_id
        try:
            with open(self.cidfile) as fh:
                cid = fh.read().strip()
        except OSError:
            cid = ""
        if not cid:
            try:
                code, out, _err = self.engine.call(
                    ["ps", "-aq", "--no-trunc", "--filter", f"label={LABEL_RUN}={self.token}"])
            except EngineError:
                return None
            ids = out.split() if code == 0 else []
            cid = ids[0] if ids else ""
        self.container_id = cid or None
        return self.container_id

    def end(self) -> None:
        """Remove the container (see `Box.end`) and the private cidfile; never raises."""
        try:
            super().end()
        finally:
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None


def follow_for(argv: list[str], *, owner: str | None = None,
               quiet: bool = False) -> ContainerFollow | None:
    """A follower for `argv` if it runs a container (or execs into one) and the engine
    answers, else None: a `ContainerFollow`, or for `exec` an `execfollow.ExecFollow`
    (the same interface).

    When `argv` is a container run but the engine is unusable, says the one line
    "container support is off: <why>" on stderr (unless `quiet`) and returns None. When
    it would start a container process that cannot be followed (`run -d`, a `-c` string
    that is not one simple command, `docker start`), says so in one warning line
    (unless `quiet`): it may outlive its client."""
    cmd = parse_run(argv)
    if cmd is None:
        if not quiet:
            why = why_not_followed(argv)
            if why is not None:
                log.warning(f"not following the container of this command ({why}): it "
                            f"may outlive its client; see docs/containers.md")
        return None
    engine = engine_for(cmd.engine, cmd.global_args)
    if engine.off is not None:
        if not quiet:
            log.say(f"mcp-tether: {engine.off}")
        return None
    if cmd.verb == "exec":
        return ExecFollow(engine, cmd, owner or owner_label())  # type: ignore[return-value]  # same interface, duck-typed by the ladder and the keeper
    return ContainerFollow(engine, cmd, owner or owner_label())


