"""The machine view's evidence rules, in one place (docs/leaked-servers.md, "The rules").

Guarantees:
- A process is a leaked server only when BOTH its launcher is gone AND its own stdio
  channel lost its client side, with every far end of that channel accounted for:
  `judge` is the only function that says "leaked" (`ps` shows its verdict as the
  state), and `reap` ends only what it says.
- A channel is lost only when no live process outside the candidate's own tree holds
  an end of it that still carries data: each direction is judged by who holds its far
  end and whether that end is shut down for it (a peer's half-close of a socket used
  both ways ends the input, not the output). Any far end held by a live process that
  is not itself leaked means not leaked (`writer-held`, `reader-held`).
- Its own channel is fd 0/1 (what it was started with), or the private copies the `mcp`
  SDK (>= 2) makes of them, recognised by how that SDK makes them
  (`evidence.sdk_diverted` and `evidence.read_channels`). Pipes and sockets a process
  made for its children never count: they have neither shape.
- "Launcher gone" means adopted by an init or a subreaper. pid 1 is an init only when
  it is one by what it is (`pid1_is_init`): the initial pid namespace's pid 1, or a
  program whose name says init (systemd, tini, dumb-init, ..., our own test init). In
  a pid namespace whose pid 1 is any other program, pid 1 is a live parent.
- A process that started MCP servers (the parent of one, holding the client side of
  its channel) is a host: `find` never lists it as a server, so it is never reaped.
- A far end the scan cannot see makes the answer `unknown` (`FAR_END_UNSEEN`): a side
  of the channel that still has a peer, none of whose holders the scan can see (it runs
  in a child pid namespace, the holder is unreadable or gone mid-scan), or held by a
  container engine's shim (the client is beyond it). `unknown` is never leaked, so
  `reap` never ends it, with any `--include`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

from mcp_tether.proc import table
from mcp_tether.proc.table import ProcRecord
from mcp_tether.scan.match import SUBREAPERS
from mcp_tether.scan.model import (
    FAR_END_UNSEEN,
    PARENT_GONE,
    READER_HELD,
    STDIN_NO_WRITER,
    STDOUT_NO_READER,
    WRITER_HELD,
    Channel,
    Server,
)

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["INIT_PROGRAMS", "ENGINE_SHIMS", "pid1_is_init", "adopter", "is_engine_shim",
           "Verdict", "judge", "settle"]

# Programs whose job is to be pid 1: start a service tree and reap what is orphaned in
# it. `pidns_init` is this project's own (tests/pidns_init.py, `tests/run`).
INIT_PROGRAMS = SUBREAPERS | {"openrc-init", "runit", "runit-init", "s6-linux-init",
                              "podman-init", "tini-static", "pidns_init"}
# A container engine's per-container process: it holds the container's stdio for a
# client we cannot see from here (docker, nerdctl, podman).
ENGINE_SHIMS = ("containerd-shim", "conmon")
_INTERPRETERS = ("python", "pypy", "sh", "bash", "dash", "node", "perl")


def _program(rec: ProcRecord) -> str:
    """What a process runs, by name: its script's name for an interpreter."""
    argv = rec.argv
    name = os.path.basename(argv[0]) if argv else rec.comm
    if name.startswith(_INTERPRETERS) and len(argv) > 1:
        script = next((a for a in argv[1:] if not a.startswith("-")), "")
        if script:
            return os.path.splitext(os.path.basename(script))[0]
    return name


def pid1_is_init(rec: ProcRecord | None) -> bool:
    """Is pid 1 an init (so that a child of it was adopted), by what it is?"""
    if table.root_pid_namespace():
        return True  # the machine's own pid 1 is its init, whatever it is called
    if rec is None:
        return False
    return rec.comm in INIT_PROGRAMS or _program(rec) in INIT_PROGRAMS


def adopter(parent: ProcRecord | None, ppid: int, pid1_init: bool) -> bool:
    """Is this parent one that takes in orphans (an init, a known subreaper)?

    ppid 0 is no claim: a parent outside our pid namespace, which we cannot see.
    """
    if ppid == 1:
        return pid1_init
    return parent is not None and ppid > 1 and parent.comm in SUBREAPERS


def is_engine_shim(comm: str) -> bool:
    return comm.startswith(ENGINE_SHIMS)


class Verdict(NamedTuple):
    """`judge`'s answer for one process tree."""

    evidence: list[str]  # the evidence constants; `Server.state` reads its state from them
    far: dict[int, list[int]]  # channel fd -> the pids seen holding its far end
    notes: dict[int, str]  # channel fd -> what to add to that channel's detail


def judge(parent_gone: bool, channels: list[Channel],
          holders: Callable[[Channel], list[int] | None],
          comm_of: Callable[[int], str | None], *, sees_far_ends: bool = True,
          leaked_elsewhere: frozenset[int] | set[int] = frozenset()) -> Verdict:
    """The evidence for one process tree, and so its state: the one verdict `ps` shows
    and `reap` acts on.

    A channel is lost only when no live process outside the tree holds an end of it
    that still carries data its way. Each channel is one direction (`evidence`: a socket
    used both ways is two); a direction whose far end is closed or shut down for it has
    no client. When a direction is gone but another still has a far end, that far end
    must be accounted for: held by a live process outside the tree that is not itself
    leaked (`leaked_elsewhere`: members of other trees judged leaked, whose hold is no
    client's) means not leaked (`writer-held`, `reader-held`); held by no process the
    scan can see, or by a container engine's shim, means `unknown`.

    `holders(c)`: the pids outside the tree we can see holding the far end of a channel
    `c` whose peer is "yes" (None: cannot tell). Asked only when a side is gone, so the
    common case (a live server, every side held) costs nothing. `sees_far_ends` False (a
    backend that cannot look at other processes' fds): a server whose launcher is gone
    is `unknown`, whatever its own channels say.
    """
    ev: list[str] = []
    far: dict[int, list[int]] = {}
    notes: dict[int, str] = {}
    if parent_gone:
        ev.append(PARENT_GONE)
        if not sees_far_ends:
            return Verdict([*ev, FAR_END_UNSEEN], far, notes)
    ins = [c for c in channels if c.side == "in"]
    outs = [c for c in channels if c.side == "out"]
    if ins and all(c.peer == "no" for c in ins):
        ev.append(STDIN_NO_WRITER)
    if outs and all(c.peer == "no" for c in outs):
        ev.append(STDOUT_NO_READER)
    if STDIN_NO_WRITER not in ev and STDOUT_NO_READER not in ev:
        return Verdict(ev, far, notes)
    unseen = False
    held: set[str] = set()
    for c in channels:
        if c.peer == "no":
            continue
        got = holders(c) if c.peer == "yes" else None
        if not got or any(is_engine_shim(comm_of(pid) or "") for pid in got):
            unseen = True
            notes[c.fd] = "far end not visible here"
            continue
        far[c.fd] = got
        keepers = [pid for pid in got if pid not in leaked_elsewhere]
        if keepers and parent_gone:
            held.add(c.side)
            notes[c.fd] = ("write end" if c.side == "in" else "read end") + " held by " + \
                ", ".join(f"{pid} ({comm_of(pid) or '?'})" for pid in keepers)
    if unseen:
        ev.append(FAR_END_UNSEEN)
    ev += [e for side, e in (("in", WRITER_HELD), ("out", READER_HELD)) if side in held]
    return Verdict(ev, far, notes)


def settle(trees: list[Server], judge_tree: Callable[[Server, frozenset[int]], None]) -> None:
    """Judge every tree, with `leaked_elsewhere` the members of the trees that are leaked.

    A far end held by another leaked tree keeps nothing (two servers of one dead client
    that inherited each other's pipes are both leaked), one held by a live tree keeps
    its holder's chain: starting from every tree whose launcher is gone, each round can
    only drop trees from the leaked set, so it ends in at most one round per tree, with
    the largest set whose every tree is leaked given the others.
    """
    leaked = frozenset(m.ident.pid for s in trees if s.parent.get("role") == "adopter"
                       for m in s.members)
    for _ in range(len(trees) + 1):
        for s in trees:
            judge_tree(s, leaked)
        now = frozenset(m.ident.pid for s in trees if s.leaked for m in s.members)
        if now == leaked:
            return
        leaked = now
