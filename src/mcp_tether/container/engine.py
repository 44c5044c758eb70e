"""The container engine's command line: found, checked once, called with a deadline.

Guarantees:
- `engine_for(name)` finds `docker` or `podman` on PATH (or the path given) and answers
  whether its daemon is reachable, cached per (executable, DOCKER_HOST, PATH, options):
  for a plain local docker by one GET on its socket (`container.api`; `Engine.socket`
  is then set and reads may use it), else by `<engine> version` within `PROBE_TIMEOUT`.
  When it is not, `Engine.off` holds the one line "container support is off: <why>" and
  nothing else is attempted.
- `Engine.call()` runs one engine command with a deadline and returns (code, stdout,
  stderr); an engine that is missing, hangs or dies is an `EngineError`, never a
  traceback for the user. Every call carries the global options of the user's own
  command (`-H`, `--context`, ...), so it talks to the daemon that runs the container.
Stdlib only: the guard imports this module when (and only when) it runs a container.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from mcp_tether.container import api

# What one rung did to a container (a follower's answer), shared by both followers.
SENT, GONE, DENIED = "sent", "gone", "denied"
# How often a follower's wait_gone asks the engine (each ask is one short CLI call, ~0.1 s).
POLL_MIN = 0.05
POLL_MAX = 0.25

__all__ = ["Engine", "EngineError", "engine_for", "ENGINES", "PROBE_TIMEOUT"]

# Container clients whose `run -i` we know how to follow.
ENGINES = ("docker", "podman")
# How long `<engine> version` may take before we call the daemon unreachable.
PROBE_TIMEOUT = 10.0
# Default deadline of one engine command (inspect, kill, rm).
CALL_TIMEOUT = 15.0

_cache: dict[tuple[str, str, str, tuple[str, ...]], Engine] = {}


def poll_gone(gone: Callable[[], float | None], timeout: float) -> float | None:
    """A follower's wait_gone: ask `gone()` (the instant it saw the end, or None) POLL_MIN
    doubling to POLL_MAX apart, until it answers or `timeout` passed (then None)."""
    deadline = time.monotonic() + max(0.0, timeout)
    pause = POLL_MIN
    while True:
        at = gone()
        if at is not None:
            return at
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        time.sleep(min(pause, remaining))  # polling the engine with a deadline
        pause = min(pause * 2, POLL_MAX)


class EngineError(Exception):
    """An engine command could not be run or did not answer in time."""


@dataclass
class Engine:
    """One engine executable plus the global options that pick its daemon."""

    name: str  # "docker" | "podman"
    exe: str | None  # absolute path, None when not installed
    global_args: list[str]  # e.g. ["-H", "unix:///x.sock"]
    off: str | None = None  # None when usable, else "container support is off: <why>"
    # The Engine API socket reads may use (docker), set once the daemon answered there.
    socket: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.global_args = list(self.global_args)  # ours: the caller's list may change

    def call(self, args: list[str], timeout: float = CALL_TIMEOUT) -> tuple[int, str, str]:
        """Run `<engine> <global args> <args>`; (exit code, stdout, stderr)."""
        if self.exe is None:
            raise EngineError(f"{self.name}: not installed")
        try:
            done = subprocess.run(
                [self.exe, *self.global_args, *args],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            raise EngineError(f"{self.name} {args[0]}: no answer in {timeout:g} s") from e
        except OSError as e:
            raise EngineError(f"{self.name}: {e.strerror or e}") from e
        return (done.returncode, done.stdout.decode(errors="replace"),
                done.stderr.decode(errors="replace"))


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:200]
    return "no output"


def engine_for(name: str = "docker", global_args: list[str] | None = None,
               *, path: str | None = None) -> Engine:
    """The engine `name` (a basename or a path) and whether its daemon answers; cached."""
    base = os.path.basename(name)
    key = (name, os.environ.get("DOCKER_HOST", ""), os.environ.get("PATH", ""),
           tuple(global_args or ()))
    if path is None and key in _cache:
        return _cache[key]
    exe = shutil.which(name, path=path)
    if exe is None:
        engine = Engine(base, None, global_args or [],
                        off=f"container support is off: {base} not found on PATH")
    elif base == "docker" and (sock := api.local_socket(global_args)):
        engine = Engine(base, exe, [])
        try:
            api.get(sock, "/version", timeout=PROBE_TIMEOUT)
            engine.socket = sock
        except api.Unreachable as e:  # the CLI would talk to the same socket: no daemon
            engine.off = f"container support is off: no docker daemon answers at {e}"
        except api.ApiError:  # something else answers there: let the CLI judge
            engine = _probe_cli(Engine(base, exe, []))
    else:
        engine = _probe_cli(Engine(base, exe, global_args or []))
    if path is None:
        _cache[key] = engine
    return engine


def _probe_cli(engine: Engine) -> Engine:
    """Ask `<engine> version` whether the daemon answers; sets `engine.off` if not."""
    try:
        code, out, err = engine.call(["version", "--format", "{{.Server.Version}}"]
                                     if engine.name == "docker" else ["version"],
                                     timeout=PROBE_TIMEOUT)
    except EngineError as e:
        engine.off = f"container support is off: {e}"
    else:
        if code != 0 or not out.strip():
            engine.off = (f"container support is off: {engine.name} daemon not reachable "
                          f"({_first_line(err or out)})")
    return engine


def clear_cache() -> None:
    """Forget every probed engine (tests change PATH and DOCKER_HOST)."""
    _cache.clear()
