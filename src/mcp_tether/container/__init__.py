"""Servers in containers: a `docker run -i` / `podman run -i` server (or a process
started by `docker exec -i` / `podman exec -i`) dies with its client.

The server's processes live under the engine's shim, not under whoever ran the engine
client, so no process-tree mechanism reaches them. This package follows the container
instead (see docs/containers.md):
- `follow_for(argv)` -> `ContainerFollow` | None: rewrites a container-run command to
  carry `--cidfile` and our labels, then names the container, signals it through the
  engine (each ladder rung), waits for it to stop, lists what runs in it, removes it.
  For `exec`, the follower is `execfollow.ExecFollow`: an `--env` token marks the
  exec'd process, reached inside the container through the engine.
  A container command that cannot be followed is named in one warning line.
- `WithContainer(tree, follow)`: the ladder target the guard climbs on (tree + box).
- `leaked_containers()` / `end_container()`: the machine view for `ps` / `reap`.
- `end_owned_by(argv, tree)`: the probe's clean-up of a guard's container.
- Where no engine is installed or its daemon does not answer, one line says
  "container support is off: <why>" and everything else goes on as without containers.
Import-light: importing the package costs `os` only; `maybe_container_run(argv)` is the
guard's cheap first look, and the rest is imported on first use.
"""

from __future__ import annotations

import os

from mcp_tether import _lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from mcp_tether.container.follow import ContainerFollow, follow_for
    from mcp_tether.container.leaked import LeakedContainer, end_container, leaked_containers
    from mcp_tether.container.target import WithContainer

__all__ = [
    "maybe_container_run",
    "end_owned_by",
    "follow_for",
    "ContainerFollow",
    "WithContainer",
    "leaked_containers",
    "end_container",
    "LeakedContainer",
]

_ENGINES = ("docker", "podman")
__getattr__, __dir__ = _lazy.attach(__name__, {
    **dict.fromkeys(("follow_for", "ContainerFollow"), ".follow"),
    "WithContainer": ".target",
    **dict.fromkeys(("leaked_containers", "end_container", "LeakedContainer"), ".leaked"),
})


def maybe_container_run(argv: list[str]) -> bool:
    """Cheap first look, no parsing: may `argv` start a container? (False: surely not.)"""
    for word in argv[:6]:
        if os.path.basename(word) in _ENGINES:
            return True
        if (" run" in word or " exec" in word or " start" in word) and any(
                e in word for e in _ENGINES):
            return True  # an `sh -c '... docker run ...'` string
    return False


def end_owned_by(argv: list[str], tree: Iterable[tuple[int, float]]) -> list[str]:
    """For the probe's keeper, after it SIGKILLed the tree of `argv`, a command it did not
    follow itself: when that command names a container engine (a guard in front,
    `mcp-tether run -- docker run ...`), remove the running containers whose owner
    label names a process of `tree` (the keeper's record of its (pid, start) pairs):
    that guard can no longer end them. Container ids removed; no engine call for other commands."""
    name = next((w for w in argv if os.path.basename(w) in _ENGINES), None)
    if name is None:
        return []
    from mcp_tether.container.leaked import remove_owned

    return remove_owned(name, tree)
