"""Who got what: one record per recorder process of a scenario (a pure function of its row).

    for p in processes(row): print(p["role"], p["signals"], p["stdin_closed_first"], p["group"])

For the wrapper (when one stands before the server), the server and the grandchild: the
signals it received in order, whether its stdin was closed before the first of them,
its process group and session beside the host's, and how it ended. That is what tells a
host that signals its direct child (only the wrapper gets it) from one that signals the
group (everyone does) or closes stdin first (the spec's first rung).

`saw_line(row, role)` says what one recorder process saw, in order, with its times: the
"server saw" of every rendering, and of the survey's servers x hosts join, which reads
a host check's JSON.

Guarantees:
- `signals` are what was sent to the process (SIGPIPE, raised by its own write, is not).
- Only what was observed: the recorder's own events (its `start` carries its ppid,
  pgid and sid), exit statuses the keeper or a recorder parent reaped, and the host's
  group and session read before the trigger. What none of them shows is `unknown`.
- A SIGKILL cannot be recorded by the one receiving it; it is named only where it is
  the one way left: a status 137 reaped, or a recorder that exits no other way (it
  stays at EOF, records every catchable signal, and did not die of a fatal one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_tether.guard.result import signame

if TYPE_CHECKING:
    from mcp_tether.hostcheck.record import HostCheckRow, ProcessRow, RecordedEvent, SignalSeen

__all__ = ["SIGNS", "processes", "relation", "saw_line", "ms_text"]

# Events that show the host ending a recorder process (or being gone): before the
# trigger, they mean the host's own shutdown had begun.
SIGNS = ("stdin-eof", "stdin-hangup", "stdin-error", "stdout-closed", "signal",
         "parent-changed")
STDIN_END = ("stdin-eof", "stdin-hangup", "stdin-error")
FATAL = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")  # the recorder's --signals die set
ROLE_ORDER = {"wrapper": 0, "server": 1, "grandchild": 2}


def relation(value: int | None, own_pid: int, host_value: int | None,
             roles: dict[int, str] | None = None) -> str:
    """A pgid or sid beside the host's: "the host's", "its own", "the server's" (another
    recorder process leads it), "another (N)", "unknown"."""
    if value is None:
        return "unknown"
    if host_value is not None and value == host_value:
        return "the host's"
    if value == own_pid:
        return "its own"
    if roles and value in roles:
        return f"the {roles[value]}'s"
    return f"another ({value})" if host_value is not None else f"not its own ({value})"


def _signal_name(status: int | None) -> str | None:
    if status is None or status <= 128:
        return None
    return signame(status - 128)


def _ended(row: HostCheckRow, pid: int, evs: list[RecordedEvent],
           statuses: dict[int, int]) -> tuple[str, float | None]:
    if pid in {x.get("pid") for x in row.get("left") or []}:
        return "left running", None
    exits = [e for e in row.get("events") or [] if e.get("what") == "exit" and e.get("pid") == pid]
    t = exits[-1].get("t_ms") if exits else None
    if exits and exits[-1].get("by"):
        return "ended by the check's clean-up", t
    status = statuses.get(pid)
    if status is None and exits:
        status = exits[-1].get("status")
    by = _signal_name(status)
    if by is not None:
        return f"died of {by} (status {status})", t
    own_exit = [e for e in evs if e.get("what") == "exit"]
    if own_exit:
        return f"exited by itself (status {own_exit[-1].get('status')})", t
    if status is not None:
        return f"exited (status {status})", t
    if not exits:
        return "unknown", None
    sigs = [e.get("signal") for e in evs if e.get("what") == "signal"]
    if row.get("recorder_signals", "die") == "die":
        fatal = [s for s in sigs if s in FATAL]
        if fatal:
            return f"died of {fatal[0]} (its default action)", t
    return "killed (SIGKILL: it exits no other way)", t


def processes(row: HostCheckRow) -> list[ProcessRow]:
    """One record per recorder process of `row` (a keeper's result), wrapper first."""
    recorded = row.get("recorded") or []
    host_pid, host_pgid, host_sid = row.get("host_pid"), row.get("host_pgid"), row.get("host_sid")
    statuses = {int(child): int(status) for e in recorded
                if e.get("what") == "child-exit" and (child := e.get("child")) is not None
                and (status := e.get("status")) is not None}
    starts = [e for e in recorded if e.get("what") == "start"]
    roles = {int(e["pid"]): str(e.get("role", "server")) for e in starts}
    out: list[ProcessRow] = []
    for st in sorted(starts, key=lambda e: (ROLE_ORDER.get(e.get("role", ""), 3),
                                            e.get("t_ms") or 0.0)):
        pid = int(st["pid"])
        evs = [e for e in recorded if e.get("pid") == pid]
        # SIGPIPE is the kernel's answer to its own write on a closed stdout (a held
        # answer sent after the host died), not a signal anyone sent: the `saw` line has it.
        signals: list[SignalSeen] = [{"signal": e.get("signal"), "t_ms": e.get("t_ms")}
                   for e in evs if e.get("what") == "signal" and e.get("signal") != "SIGPIPE"]
        closed = [e.get("t_ms") for e in evs if e.get("what") in STDIN_END]
        closed_ms = closed[0] if closed else None
        if signals:
            first_sig = signals[0]["t_ms"] or 0.0
            closed_first: bool | None = closed_ms is not None and closed_ms <= first_sig
        else:
            closed_first = True if closed_ms is not None else None
        ended, ended_ms = _ended(row, pid, evs, statuses)
        ppid = st.get("ppid")
        out.append({
            "pid": pid,
            "role": st.get("role", "server"),
            "ppid": ppid,
            "direct_child": None if host_pid is None or ppid is None else ppid == host_pid,
            "signals": signals,
            "stdin_closed_ms": closed_ms,
            "stdin_closed_first": closed_first,
            "pgid": st.get("pgid"),
            "sid": st.get("sid"),
            "group": relation(st.get("pgid"), pid, host_pgid, roles),
            "session": relation(st.get("sid"), pid, host_sid, roles),
            "ended": ended,
            "ended_ms": ended_ms,
        })
    return out


# What a recorder event says in a row's words (None: not said).
_SAID: dict[str, str | None] = {
         "start": None, "grandchild": None, "request": None, "initialize": None,
         "initialized": "initialized", "stdin-eof": "EOF on stdin",
         "stdin-hangup": "stdin hung up", "stdin-error": "stdin read error",
         "stdout-closed": "stdout closed (EPIPE)", "parent-changed": "its parent changed",
         "second-copy": "a second copy started", "child-exit": "its child exited",
         "discover": "server/discover asked", "hold": None, "release": None, "exit": None,
         "server": None, "call": None}


def ms_text(v: float | None) -> str:
    """A time in ms since the host was spawned, as a row shows it (`?`: not known)."""
    return "?" if v is None else f"{float(v):.0f} ms"


def saw_line(r: HostCheckRow, role: str, pid: int | None = None) -> str:
    """What one recorder process (or every one of `role`) saw, in order, with times."""
    items = []
    for e in r.get("recorded") or []:
        if e.get("role") != role or (pid is not None and e.get("pid") != pid):
            continue
        what = e.get("what")
        text = e.get("signal") if what == "signal" else \
            _SAID.get(what, what) if what is not None else None
        if text is None or text == "initialized":
            continue
        if what == "child-exit":
            text += f" (status {e.get('status')})"
        items.append(f"{text} at {ms_text(e.get('t_ms'))}")
    return ", ".join(dict.fromkeys(items)) or "nothing"
