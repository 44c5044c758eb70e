"""Why a Node server's descendants outlived it: the cause, from what the run saw.

    cause, why = out_of_reach(survivor, record)  # "started before tether() armed", "it ..."
    sig = before_tether(result, loaded)          # "SIGTERM": the signal came before tether()
    fix = kid_fix(causes)                        # the remedy step that fits those causes

What is read: the shutdown record the Node package wrote when its tether() ran
(`probe/shutdowns.py`: its pid and start, the descendants it ended, `armed`: by the
preload or the line, and when), each survivor's evidence (`started_at` on the same clock,
`tether_marks`: the tethers whose tree it was started in, from its environment), and how
the server process ended (its status, `signaled`: a death by the signal itself).

Guarantees:
- Pure functions over result records (`record.ScenarioRecord`): nothing here reads a
  process.
- A cause is named only from that evidence: a survivor the record's SIGKILL did not end;
  one started before the tether armed (its start earlier than `armed.at` by more than
  the clock's resolution; it carries no mark, so once it left the tree no shutdown could
  find it); one started later with an environment of its own (no mark); a signal that
  killed the server before any tether() was armed (no record, a death by that very
  signal). Where the evidence cannot tell (no times, an environment not ours to read),
  the words say what is possible, never one guess.
"""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from mcp_tether.probe.shutdowns import mark_of

if TYPE_CHECKING:
    from mcp_tether.probe.record import Left, ScenarioRecord, TetherShutdown

__all__ = ["out_of_reach", "before_tether", "kid_fix", "BEFORE_ARMED", "COPIED_ENV", "OWN_ENV",
           "PRELOAD"]

# Two ticks of the clocks compared (USER_HZ start times, /proc/uptime): within it, one
# cannot tell which came first.
CLOCK_SLACK = 0.02
BEFORE_ARMED = "started before tether() armed"
OWN_ENV = "started with an environment of its own"
COPIED_ENV = "started with an environment copied before tether() armed"
OUTLIVED_KILL = "outlived SIGKILL"
# The fix for anything the line cannot reach in time: arm before any of the server's code.
PRELOAD = ("arm it before any server code with the preload "
           "`NODE_OPTIONS=--import=mcp-tether/register` (or `node --import "
           "mcp-tether/register server.js`; CommonJS: `--require`; a `tether(server)` line "
           "stays and joins it)")


def out_of_reach(s: Left, rec: TetherShutdown) -> tuple[str, str]:
    """Why the tether that wrote `rec` did not end survivor `s` (a descendant of its
    server): (the cause in a few words, what shows it)."""
    kids = rec.get("children")
    if kids and any(k.get("pid") == s.get("pid") for k in kids.get("survivors") or []):
        return OUTLIVED_KILL, "the shutdown's SIGKILL did not end it"
    if kids and kids.get("ended_by") == "unknown":
        return ("not listed", "this platform cannot list a Node process's descendants")
    ev = s.get("evidence")
    marks = ev.get("tether_marks") if ev else None
    mark = mark_of(rec)
    if marks is not None and mark is not None and mark in marks:
        return ("not found", "it carries the tether's mark, yet was not found when it "
                "looked (started during the shutdown?)")
    unmarked = marks is not None  # and without this tether's mark (another's may be there)
    started = ev.get("started_at") if ev else None
    armed = a.get("at") if (a := rec.get("armed")) else None
    # Seconds from the arming to its start (negative: before), where both were read.
    since = float(started) - float(armed) if isinstance(started, (int, float)) and \
        isinstance(armed, (int, float)) else None
    after = since is not None and since > CLOCK_SLACK
    server_env = ev.get("server_env") if ev else None
    if unmarked and server_env and not after:
        # The server's own environment, without the mark the tether adds to it when it
        # arms: the server started it before that instant.
        return BEFORE_ARMED, ("it carries the server's environment but not the mark, and "
                              "it left the server's tree")
    if since is not None and since < -CLOCK_SLACK:
        return BEFORE_ARMED, "it started earlier than the tether armed, and left its tree"
    if unmarked and server_env is False:
        return OWN_ENV, "it carries neither the server's environment nor the mark, and it " \
            "left the server's tree"
    if unmarked and after:
        return (COPIED_ENV, "it carries the server's environment as it was before the "
                "tether armed, and it left the server's tree")
    if unmarked:
        return ("no mark", "it carries no mark (started before tether() armed, or with an "
                "environment of its own) and left the server's tree")
    return "left its tree", "it left the server's tree before the shutdown looked"


def before_tether(r: ScenarioRecord, loaded: str | None) -> str | None:
    """The signal (`SIGTERM`) that killed a server that loads mcp-tether before its
    tether() armed: no shutdown record, and the server process died of the last signal
    the probe sent it (a death by the signal itself, or its 128+N status where the kind
    of death was not seen). None otherwise."""
    if loaded is None or r.get("tether") or r.get("signaled") is False:
        return None
    status = r.get("exit_status")
    server = next((e.get("pid") for e in r.get("events") or []
                   if e.get("what") == "spawn" and e.get("role") == "server"), None)
    sent = [str(e["what"]) for e in r.get("events") or []
            if e.get("pid") == server and e.get("what") in ("sigterm", "sigint")]
    if not sent or status is None:
        return None
    name = sent[-1].upper()
    return name if status == 128 + int(getattr(signal, name)) else None


def kid_fix(causes: list[str]) -> str:
    """The remedy step for descendants out of the reach of a tether() that ran (`causes`:
    the first of each `out_of_reach`)."""
    if any(c in (BEFORE_ARMED, COPIED_ENV) for c in causes):
        return (f"a child was {BEFORE_ARMED}, so it carries no mark and, once it left the "
                f"server's tree, no shutdown could find it: {PRELOAD}, so that every process "
                "the server starts carries the mark; or start that child after "
                "`tether(server)`")
    if OWN_ENV in causes:
        return ("a child was started with an environment of its own (without the "
                "MCP_TETHER_TREE mark) and left the server's tree: start it with the "
                "server's environment (`env: { ...process.env, ... }`), or launch the server "
                "behind the guard, which follows it")
    if causes and all(c == OUTLIVED_KILL for c in causes):
        return ("the line is in effect; a descendant outlived SIGKILL (stuck in the "
                "kernel: a device, a mount): find what it waits on")
    return ("the line is in effect and ran; its descendants that left its tree are out of "
            "its reach (Node cannot be a subreaper): launch the server behind the guard, "
            "which follows them")
