"""What `ps`, `reap` and `reap --watch` saw of server trees over time, kept between runs.

`scan.superseded` judges a copy from what its host did over time: which copy's read and
write counters moved, which stayed still. One scan sees one instant, so the looks are
kept: in memory across `reap --watch` rounds, and in a small file under the user's
state folder between one-off runs.

Guarantees:
- Per process ("pid:start"): `runs`, each [first seen, last seen, rchar, wchar, syscr,
  syscw] for a stretch of equal counters, oldest first; `settled`, the first look at
  which its start-up was over (it was waiting on its input, or its counters were the
  same on two looks in a row), or None; `entries`, the config entries it matched in some
  scan, each with the entry's fingerprint when it matched it exactly (as written: its
  command, every argument, its cwd and environment), else None.
- Per host ("pid:start"): the servers it was seen using side by side (an older copy
  used after a newer copy of it had settled), each with when and what was seen.
- Idle time is what was observed, never guessed: counters only grow, so a copy is idle
  since the first look that showed its current counters. A lost look only makes the
  observed idle time shorter. The clock is the monotonic one: time spent suspended is
  not idle time.
- The file is evidence, trusted only as far as the kernel agrees with it. It is read
  only when it is a regular file owned by us with mode 0600 or stricter (anything else,
  a symlink included, is ignored whole, said once on stderr), written for this boot (its
  boot id; another boot's file is ignored whole), and well formed. A process's record
  that contradicts what the kernel says now (a look before the process could have
  started or in the future, counters above the ones it has now or going down) is
  dropped: its idle time is then observed from now on.
- Reads and writes this one file only; nothing here signals.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp_tether import log, platform
from mcp_tether.proc import table

if TYPE_CHECKING:
    from mcp_tether.proc import ProcessId

__all__ = ["Samples", "Counters", "default_path", "FORMAT"]

MAX_RUNS = 16  # runs of equal counters kept per process (oldest dropped first)
MAX_PROCESSES = 4096  # processes kept in the file (the oldest-seen dropped first)
MAX_SIDE_BY_SIDE = 64  # servers remembered per host as used side by side
# How far a look may seem to precede its process's start: the start time has clock-tick
# resolution, the table and the look read two clocks a scan's length apart.
START_SLACK = 2.0
FORMAT = 2  # 1: no boot id, no hosts, entries without fingerprints (ignored whole)

Counters = tuple[int, int, int, int]  # rchar, wchar, syscr, syscw: a tree's sums

_warned: set[str] = set()  # files refused, said once per process


def _key(ident: ProcessId) -> str:
    return f"{ident.pid}:{ident.start}"


def default_path() -> str:
    """The samples file: under the user's state folder, one per pid namespace (a pid
    and a start time name a process only within its namespace)."""
    ns = table.pid_namespace(os.getpid())
    return os.path.join(platform.state_home(), "mcp-tether",
                        f"io-samples-{ns if ns is not None else 'unknown'}.json")


def _refused(path: str, why: str) -> None:
    if path not in _warned:
        _warned.add(path)
        log.warning(f"ignoring {path}: {why}; idle times are observed from now on")


def _read(path: str) -> dict[str, Any] | None:
    """The file's document if we may trust where it comes from (module docstring)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None  # none yet: nothing to say
    euid = platform.euid()
    if not stat.S_ISREG(st.st_mode):
        _refused(path, "not a regular file (a symlink, or another kind)")
        return None
    if euid is not None and st.st_uid != euid:
        _refused(path, f"owned by uid {st.st_uid}, not by us ({euid})")
        return None
    if st.st_mode & 0o077:
        _refused(path, f"mode {stat.S_IMODE(st.st_mode):04o} lets others read or write "
                       "it (0600 or stricter only)")
        return None
    try:
        fh = open(path, "rb")  # noqa: SIM115  # closed below, after the identity check
    except OSError:
        return None
    with fh:
        # The same file lstat saw: a symlink or another file swapped in since has another
        # identity (and a regular file is never a FIFO that would block the read).
        again = os.fstat(fh.fileno())
        if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino):
            return None  # replaced between the two looks: read it next time
        try:
            doc = json.loads(fh.read(64 << 20))
        except (OSError, ValueError):
            return None
    return doc if isinstance(doc, dict) else None


class Samples:
    """Observed counters of server trees, the config entries each matched, and the hosts
    seen using copies side by side (module docstring)."""

    def __init__(self, path: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self.clock = clock
        self.procs: dict[str, dict[str, Any]] = {}
        self.hosts: dict[str, dict[str, list[Any]]] = {}
        self.unsaved: OSError | None = None  # why the last save() failed, if it did

    @classmethod
    def open(cls, path: str | None = None) -> Samples:
        """Samples kept in `path` (default `default_path()`); a missing, refused,
        other-boot or malformed file starts empty (idleness is then observed from now)."""
        got = cls(path or default_path())
        doc = _read(got.path or "")
        if doc is None or doc.get("format") != FORMAT:
            return got
        boot = table.boot_id()
        if boot is None or doc.get("boot_id") != boot:
            return got  # another boot's pids and clocks: nothing in it is about us
        with contextlib.suppress(ValueError, TypeError, AttributeError, KeyError):
            procs = {str(k): _clean(v) for k, v in doc["processes"].items()}
            hosts = {str(k): _clean_host(v) for k, v in doc.get("hosts", {}).items()}
            got.procs, got.hosts = procs, hosts
        return got

    def save(self) -> None:
        """Best effort, atomically (a temporary file of mode 0600, then a rename): a look
        that is not kept only shortens the idle time a later run observes. Never raises:
        why a save failed (a full disk, a read-only folder) is left in `unsaved`."""
        self.unsaved = None
        if self.path is None:
            return
        try:
            folder = os.path.dirname(self.path)
            os.makedirs(folder, mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".io-samples.", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({"format": FORMAT, "boot_id": table.boot_id(),
                               "processes": self.procs, "hosts": self.hosts}, fh)
                os.replace(tmp, self.path)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            self.unsaved = exc

    # ----- one look -------------------------------------------------------------------

    def observe(self, ident: ProcessId, now: float, io: Counters | None,
                entries: dict[str, str | None], *, waiting: bool = False,
                age: float | None = None) -> None:
        """Record one look: its counters, the entries it matches (key -> fingerprint when
        matched exactly), and whether it was waiting on its input. `age` (seconds since
        it started, from the kernel) bounds what earlier looks may claim."""
        key = _key(ident)
        rec = self.procs.get(key)
        if rec is not None and not _consistent(rec, now, io, age):
            rec = None  # contradicts the kernel: never trusted, observed again from now
        if rec is None:
            rec = self.procs[key] = {"runs": [], "entries": {}, "settled": None}
        for k, fp in entries.items():
            if fp is not None or k not in rec["entries"]:
                rec["entries"][k] = fp
        if io is None:
            return
        runs = rec["runs"]
        if runs and tuple(runs[-1][2:]) == io:
            runs[-1][1] = max(runs[-1][1], now)
            if rec["settled"] is None:
                rec["settled"] = runs[-1][0]  # quiet across two looks: started up by then
        else:
            runs.append([now, now, *io])
            del runs[:-MAX_RUNS]
        if waiting and rec["settled"] is None:
            rec["settled"] = now  # waiting on its input: its start-up is over

    # ----- what the looks show ----------------------------------------------------------

    def idle_since(self, ident: ProcessId, io: Counters) -> float | None:
        """When its current counters were first seen (None: not sampled)."""
        runs = self.procs.get(_key(ident), {}).get("runs") or []
        return runs[-1][0] if runs and tuple(runs[-1][2:]) == io else None

    def settled(self, ident: ProcessId) -> float | None:
        """When it was first seen settled (waiting on its input, or quiet twice)."""
        got = self.procs.get(_key(ident), {}).get("settled")
        return float(got) if got is not None else None

    def reads_since(self, ident: ProcessId, t0: float) -> int:
        """Between how many pairs of looks, the first taken at or after `t0` and after
        it was first seen settled, did it read (its rchar or syscr grew)? Counters only
        grow: each such pair is a read that surely happened then."""
        rec = self.procs.get(_key(ident), {})
        settled = rec.get("settled")
        if settled is None:
            return 0  # never seen settled: what it read may be its own start-up
        runs = rec.get("runs") or []
        t0 = max(t0, settled)
        return sum(1 for a, b in zip(runs, runs[1:], strict=False) if a[1] >= t0
                   and (a[2], a[4]) != (b[2], b[4]))

    def moved_after(self, ident: ProcessId, t0: float) -> float | None:
        """The first look, between two looks taken at or after `t0`, at which its
        counters had moved (it had traffic then); None if none did."""
        runs = self.procs.get(_key(ident), {}).get("runs") or []
        return next((b[0] for a, b in zip(runs, runs[1:], strict=False) if a[1] >= t0), None)

    def matched_before(self) -> set[tuple[int, float]]:
        """(pid, start) of every process seen matching a config entry in some scan."""
        out: set[tuple[int, float]] = set()
        for key, rec in self.procs.items():
            pid, _, start = key.partition(":")
            if rec.get("entries"):
                with contextlib.suppress(ValueError):
                    out.add((int(pid), float(start)))
        return out

    def entries(self, ident: ProcessId) -> dict[str, str | None]:
        """The config entries it matched in some scan: key -> fingerprint if exactly."""
        return dict(self.procs.get(_key(ident), {}).get("entries") or {})

    # ----- hosts --------------------------------------------------------------------------

    def mark_side_by_side(self, host: ProcessId, server: str, when: float, what: str) -> None:
        """The host used an older copy of `server` after a newer one had settled."""
        seen = self.hosts.setdefault(_key(host), {})
        if server not in seen:
            seen[server] = [when, what]
            while len(seen) > MAX_SIDE_BY_SIDE:
                del seen[min(seen, key=lambda k: seen[k][0])]

    def side_by_side(self, host: ProcessId, servers: set[str]) -> str | None:
        """What was seen of the host using copies of one of `servers` side by side."""
        seen = self.hosts.get(_key(host), {})
        return next((str(seen[s][1]) for s in sorted(servers) if s in seen), None)

    def keep(self, alive: set[ProcessId]) -> None:
        """Forget processes that are gone (and the oldest-seen past MAX_PROCESSES)."""
        keys = {_key(i) for i in alive}
        self.procs = {k: v for k, v in self.procs.items() if k in keys}
        self.hosts = {k: v for k, v in self.hosts.items() if k in keys}
        if len(self.procs) > MAX_PROCESSES:
            order = sorted(self.procs, key=lambda k: (self.procs[k]["runs"] or [[0, 0]])[-1][1])
            for k in order[: len(self.procs) - MAX_PROCESSES]:
                del self.procs[k]


def _consistent(rec: dict[str, Any], now: float, io: Counters | None,
                age: float | None) -> bool:
    """Does one process's record agree with the kernel now? Its looks lie between its
    start (`now - age`: the monotonic clock runs no faster than the boot clock ages are
    read from) and now; its counters never go down and are not above `io`."""
    runs = rec["runs"]
    earliest = now - age - START_SLACK if age is not None else float("-inf")
    stamps = [t for r in runs for t in r[:2]]
    if rec["settled"] is not None:
        stamps.append(rec["settled"])
    if any(t < earliest or t > now + START_SLACK for t in stamps):
        return False
    if any(r[0] > r[1] for r in runs):
        return False
    for a, b in zip(runs, runs[1:], strict=False):
        if a[1] > b[0] or any(x > y for x, y in zip(a[2:], b[2:], strict=True)):
            return False
    return io is None or not runs or all(x <= y for x, y in zip(runs[-1][2:], io, strict=True))


def _clean(v: Any) -> dict[str, Any]:
    """One process's record from the file, numbers and strings only (else ValueError)."""
    runs = [[float(r[0]), float(r[1]), *(int(x) for x in r[2:6])] for r in v.get("runs", ())
            if len(r) == 6]
    settled = v.get("settled")
    entries = v.get("entries") or {}
    return {"runs": runs[-MAX_RUNS:],
            "entries": {str(k): (str(f) if f is not None else None) for k, f in entries.items()},
            "settled": float(settled) if settled is not None else None}


def _clean_host(v: Any) -> dict[str, list[Any]]:
    return {str(k): [float(w[0]), str(w[1])] for k, w in v.items()}
