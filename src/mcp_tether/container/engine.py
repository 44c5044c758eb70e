"""The container engine's command line: found, checked once, called with a deadline.

Guarantees:
- `engine_for(name)` finds `docker` or `podman` on PATH (or the path given) and answers
  whether its daemon is reachable (`<engine> version` within `PROBE_TIMEOUT`), cached
  per (executable, DOCKER_HOST, CONTAINER_HOST). When it is not, `Engine.off` holds
  the one line "container support is off: <why>" and nothing else is attempted.
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

__all__ = ["Engine", "EngineError", "engine_for", "ENGINES", "PROBE_TIMEOUT"]

# Container clients whose `run -i` we know how to follow.
ENGINES = ("docker", "podman")
# How long `<engine> version` may take before we call the daemon unreachable.
PROBE_TIMEOUT = 10.0
# Default deadline of one engine command (inspect, kill, rm).
CALL_TIMEOUT = 15.0

_cache: dict[tuple[str, str, str, tuple[str, ...]], Engine] = {}


class EngineError(Exception):
    """An engine command could not be run or did not answer in time."""


class Engine:
    """One engine executable plus the global options that pick its daemon."""

    def __init__(self, name: str, exe: str | None, global_args: list[str],
                 off: str | None = None) -> None:
        self.name = name  # "docker" | "podman"
        self.exe = exe  # absolute path, None when not installed
        self.global_args = list(global_args)  # e.g. ["-H", "unix:///x.sock"]
        self.off = off  # None when usable, else "container support is off: <why>"

    def __repr__(self) -> str:
        return f"Engine({self.name!r}, {self.exe!r}, off={self.off!r})"

    @property
    def usable(self) -> bool:
        return self.off is None

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


DEFAULT_SOCKETS = ("/var/run/docker.sock", "/run/docker.sock")


def _docker_socket_plausible() -> bool:
    """False only when the docker CLI can have no daemon to reach: no DOCKER_HOST or
    DOCKER_CONTEXT, no current context in its config, and no default socket."""
    if os.environ.get("DOCKER_HOST") or os.environ.get("DOCKER_CONTEXT"):
        return True
    cfg = os.path.join(os.environ.get("DOCKER_CONFIG") or os.path.expanduser("~/.docker"),
                       "config.json")
    try:
        with open(cfg, encoding="utf-8", errors="replace") as fh:
            if "currentContext" in fh.read():
                return True
    except OSError:
        pass
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    sockets = list(DEFAULT_SOCKETS)
    if runtime:
        sockets.append(os.path.join(runtime, "docker.sock"))
    return any(os.path.exists(p) for p in sockets)


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
    elif base == "docker" and not global_args and not _docker_socket_plausible():
        # No daemon to ask: skip a `docker version` that could only fail (~15 ms of CPU
        # on every `ps`).
        engine = Engine(base, exe, [], off="container support is off: no docker daemon "
                        "socket (/var/run/docker.sock; DOCKER_HOST and contexts unset)")
    else:
        engine = Engine(base, exe, global_args or [])
        try:
            code, out, err = engine.call(["version", "--format", "{{.Server.Version}}"]
                                         if base == "docker" else ["version"],
                                         timeout=PROBE_TIMEOUT)
        except EngineError as e:
            engine.off = f"container support is off: {e}"
        else:
            if code != 0 or not out.strip():
                engine.off = (f"container support is off: {base} daemon not reachable "
                              f"({_first_line(err or out)})")
    if path is None:
        _cache[key] = engine
    return engine


def clear_cache() -> None:
    """Forget every probed engine (tests change PATH and DOCKER_HOST)."""
    _cache.clear()
