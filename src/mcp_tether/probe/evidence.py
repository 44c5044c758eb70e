"""What can be seen from outside about a process that outlived its client: evidence.

`collect(pid, wire=...)` reads /proc only (Linux) and returns a plain dict:

    {"pid", "alive", "comm", "exe", "cmdline": [..], "state", "wchan",
     "threads": [names, main thread first], "thread_waits": [kernel wait channels],
     "children": [pids],
     "fds": {"0": "socket:[123]", ...} (0, 1, 2 only),
     "ipc_fds": how many of its fds are pipes or sockets,
     "sig_blocked" / "sig_ignored" / "sig_caught": [SIGHUP, SIGINT, SIGPIPE, SIGTERM ...],
     "holds_wire": True/False/None (it still holds the scenario's stdio ends)}

It never raises: a vanished pid or a denied read gives what was read before. The probe
keeper imports it at run time, so it is stdlib only and loads nothing heavy at import.
It only reads; it never signals anything.
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING

from mcp_tether.guard.result import signame

if TYPE_CHECKING:
    from typing import Any

__all__ = ["collect", "stdio_links"]

PROC = "/proc"
MAX_THREADS = 64  # a runaway pool says enough with its first 64 names
# The signals whose disposition says something about a server's shutdown.
WATCHED_SIGNALS = {s: signame(s) for s in (signal.SIGHUP, signal.SIGINT, signal.SIGPIPE,
                                            signal.SIGTERM)}
_MASKS = {"SigBlk": "sig_blocked", "SigIgn": "sig_ignored", "SigCgt": "sig_caught"}


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return None


def _link(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def stdio_links(pid: int, base: str = PROC) -> list[str]:
    """The pipe/socket ends a process's fd 0 and 1 point at (its wire, when just spawned)."""
    out = []
    for fd in (0, 1):
        target = _link(f"{base}/{pid}/fd/{fd}")
        if target and (target.startswith("pipe:") or target.startswith("socket:")):
            out.append(target)
    return out


def _children(pid: int, base: str) -> list[int]:
    kids: list[int] = []
    try:
        tids = os.listdir(f"{base}/{pid}/task")
    except OSError:
        return kids
    found = False
    for tid in tids:
        text = _read(f"{base}/{pid}/task/{tid}/children")
        if text is not None:
            found = True
            kids += [int(w) for w in text.split()]
    if found:
        return sorted(set(kids))
    # No CONFIG_PROC_CHILDREN: scan every process's parent.
    for name in os.listdir(base):
        if name.isdigit():
            stat = _read(f"{base}/{name}/stat")
            if stat and ")" in stat:
                fields = stat.rsplit(")", 1)[1].split()
                if len(fields) > 1 and fields[1] == str(pid):
                    kids.append(int(name))
    return sorted(kids)


def collect(pid: int, wire: list[str] | None = None, base: str = PROC) -> dict[str, Any]:
    """Evidence about `pid` now; `wire`: the scenario's stdio links (see `stdio_links`)."""
    ev: dict[str, Any] = {
        "pid": pid, "alive": False, "comm": None, "exe": None, "cmdline": [],
        "state": None, "wchan": None, "threads": [], "thread_waits": [], "children": [],
        "fds": {},
        "ipc_fds": 0, "holds_wire": None, "sig_blocked": [], "sig_ignored": [],
        "sig_caught": [],
    }
    try:
        root = f"{base}/{pid}"
        stat = _read(f"{root}/stat")
        if stat is None or ")" not in stat:
            return ev
        ev["state"] = stat.rsplit(")", 1)[1].split()[0]
        ev["alive"] = ev["state"] not in ("Z", "X")
        ev["comm"] = (_read(f"{root}/comm") or "").strip() or None
        ev["exe"] = _link(f"{root}/exe")
        raw = _read(f"{root}/cmdline") or ""
        ev["cmdline"] = [a for a in raw.split("\0") if a]
        for line in (_read(f"{root}/status") or "").splitlines():
            key, _, value = line.partition(":")
            if key in _MASKS:
                mask = int(value.strip() or "0", 16)
                ev[_MASKS[key]] = [n for s, n in WATCHED_SIGNALS.items() if mask >> (s - 1) & 1]
        wchan = (_read(f"{root}/wchan") or "").strip()
        ev["wchan"] = wchan if wchan and wchan != "0" else None
        try:
            tids = sorted(os.listdir(f"{root}/task"), key=lambda t: (t != str(pid), int(t)))
        except OSError:
            tids = []
        waits = ev["thread_waits"] = []
        for tid in tids[:MAX_THREADS]:
            name = _read(f"{root}/task/{tid}/comm")
            if name is not None:
                ev["threads"].append(name.strip())
                wchan = (_read(f"{root}/task/{tid}/wchan") or "").strip()
                waits.append(wchan if wchan and wchan != "0" else None)
        ev["children"] = _children(pid, base)
        try:
            fds = os.listdir(f"{root}/fd")
        except OSError:
            return ev  # not ours to read: say nothing about its fds
        links = {}
        for fd in fds:
            target = _link(f"{root}/fd/{fd}")
            if target is None:
                continue
            links[fd] = target
            if target.startswith("pipe:") or target.startswith("socket:"):
                ev["ipc_fds"] += 1
        ev["fds"] = {fd: links[fd] for fd in ("0", "1", "2") if fd in links}
        if wire:
            ev["holds_wire"] = any(t in wire for t in links.values())
    except Exception:  # noqa: BLE001  # evidence is best effort; never break the keeper
        pass
    return ev
