"""The machine view of containers: which `-i` containers lost their client, and ending one.

`leaked_containers()` looks at every running container whose stdin was opened (`-i`)
and judges it by evidence it can check, strongest first:
1. our owner label (`io.mcp-tether.owner=<pid>:<start>:<pidns>`, set by the guard or
   the probe's keeper): in the same pid namespace, that process is gone or its pid now
   belongs to another process -> "leaked"; it is alive -> "live". From another pid
   namespace the label cannot be checked and we go on to 2.
2. the container's init, when visible here (its /proc entry names the container id in
   its cgroup, so a pid from another namespace is never mistaken for it): its stdin is
   a pipe and no process holds that pipe's write end -> "leaked" (the engine's shim
   drops the write end when the attached client goes); someone does -> "live".
3. otherwise "unknown": listed, never ended by default.
Each entry carries image, name, age, memory and the evidence in words.
`end_container(c)` re-checks that the container is the one listed (same id, same start)
and still running, then climbs the ladder through the engine (SIGTERM, `grace`, SIGKILL)
and removes it if it carries our labels or was started with `--rm`. It never touches a
container that is not running any more or not the one listed.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass

from mcp_tether import platform
from mcp_tether.container import api
from mcp_tether.container.engine import Engine, EngineError, engine_for
from mcp_tether.container.follow import Box
from mcp_tether.container.labels import LABEL_OWNER, LABEL_RUN
from mcp_tether.proc import read_info, table

__all__ = ["LeakedContainer", "leaked_containers", "end_container", "remove_owned",
           "container_support",
           "LEAKED", "LIVE", "UNKNOWN"]

LEAKED, LIVE, UNKNOWN = "leaked", "live", "unknown"


@dataclass(repr=False)
class LeakedContainer:
    """One running `-i` container and what we know of its client."""

    engine: Engine
    id: str
    name: str = ""
    image: str = ""
    cmdline: str = ""
    started: str = ""  # the engine's StartedAt, as is
    age: float | None = None  # seconds
    memory: int | None = None  # bytes
    state: str = UNKNOWN  # LEAKED | LIVE | UNKNOWN
    evidence: str = ""
    ours: bool = False  # carries our labels
    auto_remove: bool = False
    init_pid: int | None = None

    @property
    def short_id(self) -> str:
        return self.id[:12]

    def __repr__(self) -> str:
        return f"LeakedContainer({self.short_id} {self.image!r} {self.state}: {self.evidence})"

    def as_dict(self) -> dict[str, object]:
        return {"container": self.short_id, "id": self.id, "name": self.name,
                "image": self.image, "cmdline": self.cmdline, "age": self.age,
                "memory": self.memory, "state": self.state, "evidence": self.evidence,
                "ours": self.ours, "engine": self.engine.name}


def container_support(name: str = "docker") -> str | None:
    """None when the engine answers, else the one line "container support is off: ..."."""
    return engine_for(name).off


def _age(started: str) -> float | None:
    try:
        head, _, frac = started.rstrip("Z").partition(".")
        when = datetime.datetime.fromisoformat(head).replace(tzinfo=datetime.timezone.utc)
        secs = when.timestamp() + (float("0." + frac[:6]) if frac.isdigit() else 0.0)
    except ValueError:
        return None
    return max(0.0, time.time() - secs)


def _pidns() -> str:
    ns = platform.backend.pid_namespace(os.getpid())
    return "?" if ns is None else str(ns)


def _owner_evidence(label: str) -> tuple[str, str] | None:
    pid_s, _, rest = label.partition(":")
    start_s, _, ns = rest.partition(":")
    if not pid_s.isdigit() or ns != _pidns() or ns == "?":
        return None
    info = read_info(int(pid_s))
    if info is None or info.exited:
        return LEAKED, f"its owner (pid {pid_s}) is gone"
    if repr(info.start) != start_s:
        return LEAKED, f"its owner (pid {pid_s}) is gone (pid reused)"
    return LIVE, f"its owner (pid {pid_s}) is alive"


def _visible(pid: int, cid: str) -> bool:
    return cid in (platform.backend.cgroup(pid) or "")


def _stdin_evidence(pid: int) -> tuple[str, str] | None:
    end = (table.fd_ends(pid, (0,)) or {}).get(0)
    if end is None or end.kind != "pipe":
        return None
    look = table.far_ends()
    try:
        far = look.far(pid, 0, end, "in")
        writers = look.holders(far.id, set()) if far.id is not None else []
    finally:
        look.close()
    if writers:
        return LIVE, f"its stdin has a writer (pid {writers[0]})"
    if far.state == table.UNKNOWN and far.id is None:
        return None
    return LEAKED, "its stdin has no writer (client gone)"


def _memory(pid: int | None) -> int | None:
    return None if pid is None else platform.backend.cgroup_memory(pid)


_UNITS = {"b": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3, "kb": 1000, "mb": 1000**2,
          "gb": 1000**3}


def _stats_memory(engine: Engine, ids: list[str]) -> dict[str, int]:
    if not ids:
        return {}
    try:
        code, out, _e = engine.call(["stats", "--no-stream", "--format",
                                     "{{.ID}} {{.MemUsage}}", *ids], timeout=30)
    except EngineError:
        return {}
    found: dict[str, int] = {}
    for line in out.splitlines() if code == 0 else []:
        parts = line.split()
        if len(parts) < 2:
            continue
        m = re.match(r"([0-9.]+)([A-Za-z]*)$", parts[1])
        if m is None:
            continue
        try:
            found[parts[0][:12]] = int(float(m.group(1)) * _UNITS.get(m.group(2).lower(), 1))
        except ValueError:
            continue
    return found


def _judge(engine: Engine, c: dict[str, object]) -> LeakedContainer | None:
    config = c.get("Config") or {}
    state = c.get("State") or {}
    host = c.get("HostConfig") or {}
    assert isinstance(config, dict) and isinstance(state, dict) and isinstance(host, dict)
    if not state.get("Running") or not config.get("OpenStdin"):
        return None
    cid = str(c.get("Id", ""))
    labels = config.get("Labels") or {}
    owner = labels.get(LABEL_OWNER) if isinstance(labels, dict) else None
    pid = state.get("Pid")
    init = pid if isinstance(pid, int) and pid > 0 and _visible(pid, cid) else None
    verdict = _owner_evidence(owner) if owner else None
    if verdict is None and init is not None:
        verdict = _stdin_evidence(init)
    if verdict is None:
        verdict = (UNKNOWN, "cannot see its client from here (other pid namespace)")
    path = str(c.get("Path", ""))
    args = c.get("Args") or []
    return LeakedContainer(
        engine=engine, id=cid, name=str(c.get("Name", "")).lstrip("/"),
        image=str(config.get("Image", "")),
        cmdline=" ".join([path, *(str(a) for a in args)] if isinstance(args, list) else [path]),
        started=str(state.get("StartedAt", "")), age=_age(str(state.get("StartedAt", ""))),
        memory=_memory(init), state=verdict[0], evidence=verdict[1],
        ours=bool(isinstance(labels, dict) and LABEL_RUN in labels),
        auto_remove=bool(host.get("AutoRemove")), init_pid=init)


def stdio_containers(name: str = "docker") -> list[LeakedContainer]:
    """Every running `-i` container of engine `name`, judged; [] when support is off."""
    engine = engine_for(name)
    if engine.off is not None:
        return []
    found = [j for j in (_judge(engine, c) for c in _running(engine)) if j]
    missing = _stats_memory(engine, [c.id for c in found if c.memory is None])
    for c in found:
        if c.memory is None:
            c.memory = missing.get(c.short_id)
    return found


# The daemon's container list is a snapshot it updates after the container's process
# has started: a container can already answer its client while the list still shows it
# `created` (measured with dockerd 20.10: 2 of 15 runs right after the first answer),
# so a list of running containers alone misses it. List both; the inspect, which reads
# the container's live state, decides (`_judge` keeps only State.Running ones).
_STATUSES = ("created", "running")
_LIST_PATH = ("/containers/json?all=1&filters="
              "%7B%22status%22%3A%5B%22created%22%2C%22running%22%5D%7D")  # URL-encoded JSON


def _running(engine: Engine) -> list[dict[str, object]]:
    """Every running container of `engine`, inspected (what `docker inspect` prints): through
    the Engine API socket when the engine has one, else (or if that fails) the CLI. Also
    the ones the daemon still lists as `created` (see `_STATUSES`): callers check
    State.Running on the inspect."""
    raw = _inspect_api(engine.socket) if engine.socket else None
    if raw is None:
        raw = _inspect_cli(engine)
    return [c for c in raw if isinstance(c, dict)]


def _inspect_api(sock: str) -> list[object] | None:
    """Every running container, inspected, through the Engine API; None: use the CLI."""
    try:
        listed = api.get(sock, _LIST_PATH)
        if not isinstance(listed, list):
            return None
        out = []
        for c in listed:
            cid = c.get("Id") if isinstance(c, dict) else None
            if not isinstance(cid, str) or not cid.isalnum():
                return None
            try:
                out.append(api.get(sock, f"/containers/{cid}/json"))
            except api.ApiError:
                continue  # gone between the list and its inspect
        return out
    except api.ApiError:
        return None


def _inspect_cli(engine: Engine) -> list[object]:
    try:
        code, out, _err = engine.call(["ps", "-q", "--no-trunc", *(
            w for status in _STATUSES for w in ("--filter", f"status={status}"))])
        ids = out.split() if code == 0 else []
        if not ids:
            return []
        code, out, _err = engine.call(["inspect", *ids], timeout=30)
        # A container that went away between ps and inspect fails the call: retry one by one.
        raw = json.loads(out) if code == 0 else [
            d for i in ids for d in _inspect_one(engine, i)]
    except (EngineError, ValueError):
        return []
    return raw if isinstance(raw, list) else []


def _inspect_one(engine: Engine, cid: str) -> list[dict[str, object]]:
    code, out, _err = engine.call(["inspect", cid])
    try:
        return list(json.loads(out)) if code == 0 else []
    except ValueError:
        return []


def leaked_containers(name: str = "docker", *, include_unknown: bool = False
                      ) -> list[LeakedContainer]:
    """Running `-i` containers whose client is gone (and, if asked, the unknown ones)."""
    keep = (LEAKED, UNKNOWN) if include_unknown else (LEAKED,)
    return [c for c in stdio_containers(name) if c.state in keep]


def end_container(c: LeakedContainer, *, grace: float = 2.0, kill_wait: float = 5.0) -> str:
    """End one listed container: "sigterm"/"sigkill" (the rung that ended it), "gone"
    (not running any more, or not the one listed: left alone), "denied" or "survived"."""
    try:
        code, out, _err = c.engine.call(
            ["inspect", "--format", "{{.State.Running}} {{.State.StartedAt}}", c.id])
    except EngineError:
        return "denied"
    running, _, started = out.strip().partition(" ")
    if code != 0 or running != "true" or started != c.started:
        return "gone"
    box = Box(c.engine, c.id, remove=c.ours or c.auto_remove)
    try:
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, kill_wait)):
            sent = box.signal(sig)
            if sent == "denied":
                return "denied"
            if box.wait_gone(wait) is not None:
                return "sigterm" if sig == signal.SIGTERM and sent == "sent" else (
                    "sigkill" if sent == "sent" else "gone")
        return "survived"
    finally:
        box.end()


def remove_owned(name: str, owners: Iterable[tuple[int, float]]) -> list[str]:
    """Remove (`rm -f`) the running containers whose owner label names one of `owners`, (pid,
    start) pairs of this pid namespace; the full ids removed ([] when the engine is off
    or refuses; never raises).

    For the probe's keeper: a guard in the server's tree (`mcp-tether run -- docker run
    ...`) labels its container with its own identity, and the keeper's clean-up SIGKILLs
    that guard, which then cannot end its container (docs/containers.md, Limits). The
    identities come from the keeper's own record of its tree, so no other container is
    touched, even one whose owner pid was since reused.
    """
    ns = _pidns()
    wanted = {f"{pid}:{start!r}:{ns}" for pid, start in owners}
    engine = engine_for(name)
    if engine.off is not None or not wanted or ns == "?":
        return []
    mine = []
    for c in _running(engine):
        config = c.get("Config")
        labels = config.get("Labels") if isinstance(config, dict) else None
        if isinstance(labels, dict) and labels.get(LABEL_OWNER) in wanted:
            mine.append(str(c.get("Id", "")))
    removed = []
    try:
        for cid in mine:
            if engine.call(["rm", "-f", cid])[0] == 0:
                removed.append(cid)
    except EngineError:
        pass
    return removed
