"""What can be seen from outside about a process that outlived its client: evidence.

`collect(pid, wire=...)` asks the platform backend and returns a plain dict (its keys
and what each holds: `record.Evidence`):

    {"pid", "alive", "comm", "exe", "cmdline": [..], "state", "wchan",
     "threads": [names, main thread first], "thread_waits": [kernel wait channels],
     "children": [pids],
     "fds": {"0": "socket:[123]", ...} (0, 1, 2 only),
     "ipc_fds": how many of its fds are pipes or sockets,
     "sig_blocked" / "sig_ignored" / "sig_caught": [SIGHUP, SIGINT, SIGPIPE, SIGTERM ...],
     "holds_wire": True/False/None (it still holds the scenario's stdio ends),
     "started_at": when it started, in seconds on the backend's process clock (the one
         a Node tether's `armed.at` is on: probe/shutdowns.py), or None,
     "tether_marks": the Node tethers whose tree it was started in (the tokens of
         MCP_TETHER_TREE in its environment: [] none), or None where the environment
         cannot be read,
     "server_env": it was started with the environment the probe gave the server, or a
         copy of it (it carries the probe's own MCP_TETHER_SHUTDOWN_REPORT), or None}

Of the environment, those two variables are read (both the package's and the probe's
own): nothing else of it (a key, a token) is kept or reaches a report.

It never raises: a vanished pid or a denied read gives what was read before; what the
backend cannot see (the portable one: fds, threads, signal masks) stays empty or None.
The probe keeper imports it at run time: it loads nothing heavy at import.
It only reads; it never signals anything.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING, Literal

from mcp_tether import platform
from mcp_tether.guard.result import signame
from mcp_tether.probe.shutdowns import ENV as REPORT_ENV
from mcp_tether.probe.shutdowns import TREE_MARK

if TYPE_CHECKING:
    from mcp_tether.probe.record import Evidence

__all__ = ["collect", "stdio_links"]

MAX_THREADS = 64  # a runaway pool says enough with its first 64 names
# The signals whose disposition says something about a server's shutdown.
WATCHED_SIGNALS = {s: signame(s) for s in (signal.SIGHUP, signal.SIGINT, signal.SIGPIPE,
                                            signal.SIGTERM)}
_MASKS: dict[str, Literal["sig_blocked", "sig_ignored", "sig_caught"]] = {
    "blocked": "sig_blocked", "ignored": "sig_ignored", "caught": "sig_caught"}
_IPC = ("pipe", "socket")


def stdio_links(pid: int) -> list[str]:
    """The pipes and sockets a process's fd 0 and 1 are on (its wire, when just spawned),
    by the channel both ends of a pipe share (`End.channel`)."""
    ends = platform.backend.channels().fd_ends(pid, (0, 1)) or {}
    return [e.channel for fd in (0, 1) if (e := ends.get(fd)) is not None and e.kind in _IPC]


def _children(pid: int) -> list[int]:
    kids = platform.backend.children(pid)
    if kids is not None:
        return sorted(set(kids))
    # The kernel does not list children: scan every process's parent.
    out = []
    for other in platform.backend.pids():
        try:
            rec = platform.backend.read(other)
        except OSError:
            continue
        if rec is not None and rec.ppid == pid:
            out.append(other)
    return sorted(out)


def collect(pid: int, wire: list[str] | None = None) -> Evidence:
    """Evidence about `pid` now; `wire`: the scenario's stdio links (see `stdio_links`)."""
    ev: Evidence = {
        "pid": pid, "alive": False, "comm": None, "exe": None, "cmdline": [],
        "state": None, "wchan": None, "threads": [], "thread_waits": [], "children": [],
        "fds": {},
        "ipc_fds": 0, "holds_wire": None, "sig_blocked": [], "sig_ignored": [],
        "sig_caught": [], "started_at": None, "tether_marks": None, "server_env": None,
    }
    backend = platform.backend
    try:
        rec = backend.read(pid)
        if rec is None:
            return ev
        ev["state"] = rec.state
        ev["alive"] = ev["state"] not in ("Z", "X")
        ev["comm"] = rec.comm.strip() or None
        ev["exe"] = backend.read_link(pid, "exe") or None
        ev["cmdline"] = [a for a in (backend.read_argv(pid) or []) if a]
        for name, mask in (backend.signal_masks(pid) or {}).items():
            ev[_MASKS[name]] = [n for s, n in WATCHED_SIGNALS.items() if mask >> (s - 1) & 1]
        ev["wchan"] = backend.wait_channel(pid)
        for _tid, name, wchan in backend.threads(pid, MAX_THREADS) or []:
            ev["threads"].append(name)
            ev["thread_waits"].append(wchan)
        ev["children"] = _children(pid)
        now = backend.clock()
        ev["started_at"] = round(now - backend.age_seconds(rec.start, now,
                                                           platform.clock_ticks()), 3)
        env = backend.channels().environ(pid)
        if env is not None:
            ev["tether_marks"] = [m for m in env.get(TREE_MARK, "").split(",") if m]
            ev["server_env"] = REPORT_ENV in env
        ends = backend.channels().fd_ends(pid)
        if ends is None:
            return ev  # not ours to read: say nothing about its fds
        ev["ipc_fds"] = sum(1 for e in ends.values() if e.kind in _IPC)
        ev["fds"] = {str(fd): ends[fd].name for fd in (0, 1, 2) if fd in ends}
        if wire:
            ev["holds_wire"] = any(e.channel in wire for e in ends.values())
    except Exception:  # noqa: BLE001  # evidence is best effort; never break the keeper
        pass
    return ev
