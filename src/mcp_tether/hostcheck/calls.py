"""The tool-calling scenarios: what the stand-in model (`modelapi.py`) makes the host do,
and what that measured (a pure function of the events).

    script = SCRIPTS["subagents"](30.0)                      # the stand-in's script
    facts = measure(model_events, recorder_events, marks)      # copies, calls, closes

Each scenario drives the host through real `tools/call`s of the recorder, whose `call`
events say which copy answered which call (the text names the agent, its step and the
call), and the stand-in's `model-result` events whether the host got the echo back:

- `idle`: a call, a pause longer than `--min-age` (the model thinking: the host waits,
  the server gets nothing), a call, one more: does the host keep its copy across the
  gap, or start another?
- `subagents`: the main agent calls, spawns agents A and B in one turn (parallel), A
  calls every 2 s, B thinks longer than `--min-age` between its calls; the main agent
  waits for A and closes it, waits for B; then the **oldest copy** still running beside
  a newer one is ended (SIGTERM, as `reap` would end a superseded copy) and the main
  agent calls again; then it closes B. Measures copies per agent (one shared, or one
  per agent), what closing an agent does to its copy (EOF, SIGTERM, nothing), and what
  ending the old copy does to the host (its next call answered, by which copy, or
  failed).
- `calls-reconnect` (`--host` only: a config entry to edit): two calls, then the entry
  is edited (and `--after-edit` keys typed) while the model holds its next turn, two
  calls, then the old copy is ended and one more call: which copy answers before and
  after the reconnect, what the reconnect leaves, what ending the old copy does.

Guarantees:
- Nothing here starts, waits for or signals a process: the keeper (`callkeeper.py`)
  acts at the scripts' gates (`reconnect`, `end-old`), and hands the events here.
- Only what was observed: a call no copy recorded and whose result the host never
  reported is `unanswered`, not guessed; the habit is `unknown` with fewer than two
  agents whose calls were answered.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from mcp_tether.hostcheck.record import RecordedEvent

__all__ = ["SCRIPTS", "IDLE_MARGIN", "measure", "summary", "habit_of", "in_ms", "short",
           "CallFacts", "Call"]

IDLE_MARGIN = 5.0  # an idle pause is --min-age plus this: longer than --min-age
STEADY = 2.0  # agent A's pause between calls (a model using its server steadily)
CLOSE_SETTLE = 2.0  # the model's pause after closing an agent (see `_subagents`)


def _idle(min_age: float) -> dict[str, Any]:
    gap = min_age + IDLE_MARGIN
    return {"agents": {"main": [{"call": 1}, {"call": 1, "pause": gap}, {"call": 1, "pause": 1},
                                {"say": "done"}]}}


def _subagents(min_age: float) -> dict[str, Any]:
    # After a close the model thinks CLOSE_SETTLE s: what the host does to the agent's
    # copy lands before the next turn, not among its own end's signals.
    return {"agents": {
        "main": [{"call": 1}, {"spawn": ["A", "B"]}, {"wait": ["A"]}, {"close": ["A"]},
                 {"wait": ["B"], "pause": CLOSE_SETTLE}, {"gate": "end-old", "call": 1},
                 {"close": ["B"]}, {"say": "done", "pause": CLOSE_SETTLE}],
        "A": [{"call": 1}, {"call": 1, "pause": STEADY}, {"call": 1, "pause": STEADY},
              {"say": "A done"}],
        "B": [{"call": 1}, {"call": 1, "pause": min_age + IDLE_MARGIN}, {"say": "B done"}]}}


def _reconnect(min_age: float) -> dict[str, Any]:
    return {"agents": {"main": [
        {"call": 1}, {"call": 1, "pause": 1}, {"gate": "reconnect", "call": 1},
        {"call": 1, "pause": 1}, {"gate": "end-old", "call": 1}, {"say": "done"}]}}


# The stand-in's script of each tool-calling scenario, given `--min-age` (its titles and
# spec words are `scenarios.SCENARIOS`'s, the gates' actions the keeper's).
SCRIPTS: dict[str, Callable[[float], dict[str, Any]]] = {
    "idle": _idle, "subagents": _subagents, "calls-reconnect": _reconnect}


def short(result: str) -> str:
    """A host's tool result in a few words: no timing preamble (Codex's "Wall time: ...
    Output:"), no stack trace, white space runs as one space."""
    text = result.split("Stack backtrace")[0]
    text = re.sub(r"^Wall time:[^\n]*\nOutput:\n", "", text)
    return re.sub(r"\s+", " ", text).strip()[:160]


class Call(TypedDict):
    """One tool call the stand-in model asked for, and who answered it."""

    agent: str
    step: int | None  # the agent's step in its script
    text: str  # the call's text: "mcp-tether call AGENT/STEP/N"
    t: float  # when the model's turn asked for it
    copy: int | None  # the copy (pid) that recorded it (None: none did)
    pause: float  # the model's pause before that turn, seconds
    ok: bool | None  # the host got the echo back (None: no result seen)
    result: str | None  # the host's tool result, in a few words


class Got(TypedDict):
    what: str  # stdin-eof, stdin-hangup, stdout-closed, parent-changed, or a signal's name
    t: float


class Close(TypedDict):
    """What closing (or finishing) an agent did to a copy it had used."""

    agent: str
    how: str  # closed | finished
    t: float
    copy: int
    shared_with: list[str]  # other agents that used the copy too
    got: list[Got]  # what the host did to the copy from then on


class EndOld(TypedDict):
    """The oldest copy ended by the check (as `reap` would end a superseded one)."""

    t: float
    copy: int | None  # None: nothing to end (one copy running)
    outcome: str | None  # what the signal did: sent, gone ...
    note: str
    agents: list[str]  # the agents whose calls it had answered
    next: Call | None  # the first call after it


class Gap(TypedDict):
    """A call after a scripted idle pause: the same copy, another, or none."""

    agent: str
    gap: float  # seconds since the agent's call before
    before: int  # the copy that answered the call before
    after: int | None
    ok: bool | None


class CopyStart(TypedDict):
    pid: int
    t: float
    agents: list[str]  # the agents whose calls it answered


class OldClose(TypedDict):
    """What the host did to a copy it had before a reconnect's edit."""

    copy: int
    t: float
    got: list[Got]


class _FactsCore(TypedDict):
    calls: list[Call]
    per_agent: dict[str, list[int]]  # agent -> the copies that answered its calls
    habit: str  # shared | per-agent | mixed | unknown (`habit_of`)
    copies: list[CopyStart]
    closes: list[Close]
    end_old: EndOld | None
    gaps: list[Gap]
    reconnect: dict[str, Any] | None  # the keeper's `reconnect` mark: new, old, from_edit
    closes_old: list[OldClose]
    failed: list[Call]  # calls whose result came back an error
    unanswered: list[Call]  # calls no copy recorded, whose result never came
    agents_done: list[str]  # agents whose script ran past its end


class CallFacts(_FactsCore, total=False):
    """What one tool-calling run measured (`measure`); a row carries it as `calls`, each
    instant `t` made `t_ms` (`in_ms`)."""

    model_events: list[dict[str, Any]]  # what the stand-in saw and did (the keeper's)


@dataclass
class _Agent:
    last: float  # its last turn
    closed_at: float | None = None  # when the main agent closed it
    past_end: bool = False  # it asked for a turn past its script's end


def _copy_of(recorded: list[RecordedEvent]) -> dict[str, int]:
    """Call text -> the pid of the copy that answered it (the first that did)."""
    out: dict[str, int] = {}
    for e in recorded:
        if e.get("what") == "call" and e.get("role") == "server":
            out.setdefault(str(e.get("text", "")), int(e.get("pid", 0)))
    return out


def habit_of(per_agent: dict[str, list[int]]) -> str:
    """`shared` (every agent's calls went to one copy), `per-agent` (no copy answered two
    agents, each agent one copy), `mixed`, or `unknown` (fewer than two agents answered)."""
    answered = {a: set(p) for a, p in per_agent.items() if p}
    if len(answered) < 2:
        return "unknown"
    every = set().union(*answered.values())
    if len(every) == 1:
        return "shared"
    owners: dict[int, set[str]] = {}
    for agent, pids in answered.items():
        for pid in pids:
            owners.setdefault(pid, set()).add(agent)
    if all(len(a) == 1 for a in owners.values()) and all(len(p) == 1 for p in answered.values()):
        return "per-agent"
    return "mixed"


def _what_got(recorded: list[RecordedEvent], pid: int, since: float,
              until: float) -> list[Got]:
    """What the host did to copy `pid` in [since, until): EOF, signals, its parent gone."""
    out: list[Got] = []
    for e in recorded:
        t = float(e.get("t", 0.0))
        if e.get("pid") != pid or not since <= t < until:
            continue
        what = e.get("what")
        if what in ("stdin-eof", "stdin-hangup", "stdout-closed", "parent-changed"):
            out.append({"what": str(what), "t": t})
        elif what == "signal":
            out.append({"what": str(e.get("signal")), "t": t})
    return out


def measure(model: list[dict[str, Any]], recorded: list[RecordedEvent],
            marks: list[dict[str, Any]], *, end: float) -> CallFacts:
    """The facts of one tool-calling run. `model`: the stand-in's events; `recorded`: the
    recorders'; `marks`: the keeper's gate actions (`end-old`, `reconnect`: `t`, `pid`,
    ...); `end`: the instant the run stopped being watched. Times are monotonic seconds."""
    calls, agents = _calls(model, _copy_of(recorded))
    per_agent: dict[str, list[int]] = {}
    for c in calls:
        pids = per_agent.setdefault(c["agent"], [])
        if c["copy"] is not None and c["copy"] not in pids:
            pids.append(c["copy"])
    starts = {int(e["pid"]): float(e["t"]) for e in recorded
              if e.get("what") == "start" and e.get("role") == "server"}
    ended = [m for m in marks if m.get("what") == "end-old"]
    return {
        "calls": calls, "per_agent": per_agent, "habit": habit_of(per_agent),
        "copies": [{"pid": p, "t": t, "agents": sorted(a for a, ps in per_agent.items()
                                                        if p in ps)}
                   for p, t in sorted(starts.items(), key=lambda x: x[1])],
        "closes": _closes(agents, per_agent, recorded, end),
        "end_old": _end_old(ended[0], calls, per_agent) if ended else None,
        "gaps": _gaps(calls),
        "reconnect": next((m for m in marks if m.get("what") == "reconnect"), None),
        # what the host did to the copies it had before the edit: from the edit until
        # the check ended one itself (`end-old`), or the end
        "closes_old": _closes_old(marks, recorded, float(ended[0]["t"]) if ended else end),
        "failed": [c for c in calls if c["ok"] is False],
        "unanswered": [c for c in calls if c["ok"] is None and c["copy"] is None],
        "agents_done": sorted(a for a, i in agents.items() if i.past_end),
    }


def _calls(model: list[dict[str, Any]],
           copy_of: dict[str, int]) -> tuple[list[Call], dict[str, _Agent]]:
    """Every call the model's turns asked for, with the copy that answered it and the
    result the host got; and each agent's turns (the last, when it was closed)."""
    turns = [e for e in model if e.get("what") == "model-turn"]
    paused = {(str(e.get("agent")), e.get("step")): float(e.get("seconds", 0.0))
              for e in model if e.get("what") == "model-pause"}
    results = {str(e.get("id")): e for e in model if e.get("what") == "model-result"}
    calls: list[Call] = []
    agents: dict[str, _Agent] = {}
    for turn in turns:
        agent, t = str(turn.get("agent")), float(turn["t"])
        info = agents.setdefault(agent, _Agent(t))
        info.last = t
        info.past_end = info.past_end or bool(turn.get("past_end"))
        for c in turn.get("calls") or []:
            res = results.get(str(c.get("id")))
            if c.get("kind") == "close":
                agents.setdefault(str(c.get("agent")), _Agent(t)).closed_at = t
            if c.get("kind") != "call":
                continue
            text = str(c.get("text", ""))
            calls.append({"agent": agent, "step": turn.get("step"), "text": text, "t": t,
                          "copy": copy_of.get(text),
                          "pause": paused.get((agent, turn.get("step")), 0.0),
                          "ok": None if res is None else bool(res.get("ok")),
                          "result": None if res is None else short(str(res.get("result", "")))})
    return calls, agents


def _closes(agents: dict[str, _Agent], per_agent: dict[str, list[int]],
            recorded: list[RecordedEvent], end: float) -> list[Close]:
    """Each agent but the main one, closed or finished: what the host then did to each
    copy it had used (until `end`)."""
    out: list[Close] = []
    for agent, info in agents.items():
        if agent == "main":
            continue
        at = info.closed_at if info.closed_at is not None else info.last
        how = "closed" if info.closed_at is not None else "finished"
        for pid in per_agent.get(agent, []):
            later = [o for o, pids in per_agent.items() if o != agent and pid in pids]
            out.append({"agent": agent, "how": how, "t": at, "copy": pid,
                        "shared_with": later, "got": _what_got(recorded, pid, at, end)})
    return out


def _end_old(mark: dict[str, Any], calls: list[Call],
             per_agent: dict[str, list[int]]) -> EndOld:
    """The check's ending of the oldest copy (its `end-old` mark), whose agents, and the
    first call after it."""
    t = float(mark["t"])
    after = [c for c in calls if c["t"] > t]
    return {"t": t, "copy": mark.get("pid"), "outcome": mark.get("outcome"),
            "note": mark.get("note", ""),
            "agents": sorted(a for a, p in per_agent.items() if mark.get("pid") in p),
            "next": after[0] if after else None}


def _gaps(calls: list[Call]) -> list[Gap]:
    """Each call after a scripted idle pause (longer than a steady one), per agent."""
    by_agent: dict[str, list[Call]] = {}
    for c in calls:
        by_agent.setdefault(c["agent"], []).append(c)
    out: list[Gap] = []
    for agent, seq in by_agent.items():
        for a, b in zip(seq, seq[1:], strict=False):
            if a["copy"] is not None and b["pause"] > STEADY:
                out.append({"agent": agent, "gap": b["t"] - a["t"], "before": a["copy"],
                            "after": b["copy"], "ok": b["ok"]})
    return out


def _closes_old(marks: list[dict[str, Any]], recorded: list[RecordedEvent],
                until: float) -> list[OldClose]:
    """After a reconnect: what the host did, from the edit until `until`, to each copy
    it had before it."""
    reconnect = next((m for m in marks if m.get("what") == "reconnect"), None)
    edit = next((m for m in marks if m.get("what") == "config-edit"), None)
    if reconnect is None or edit is None:
        return []
    t = float(edit["t"])
    return [{"copy": pid, "t": t, "got": _what_got(recorded, pid, t, until)}
            for pid in reconnect.get("old") or []]


def _got(got: list[Got], since: float) -> str:
    if not got:
        return "nothing (no EOF, no signal)"
    return ", ".join(f"{g['what']} +{(g['t'] - since) * 1000:.0f} ms" for g in got)


def summary(facts: CallFacts, scenario: str) -> str:
    """The facts in one line (the row's detail)."""
    words = []
    copies = len(facts["copies"])
    per = facts["per_agent"]
    habit = facts["habit"]
    if scenario == "subagents" or habit != "unknown":
        words.append({"shared": "one copy shared by every agent",
                      "per-agent": "one copy per agent",
                      "mixed": "copies shared by some agents",
                      "unknown": "copies per agent unknown"}[habit]
                     + f" ({copies} {'copy' if copies == 1 else 'copies'} started for "
                     f"{len(per)} agents: "
                     + ", ".join(f"{a} pid {'/'.join(map(str, p)) or '-'}"
                                 for a, p in sorted(per.items())) + ")")
    for gap in facts["gaps"]:
        same = ("the same copy" if gap["after"] == gap["before"] else
                f"copy pid {gap['after']}" if gap["after"] else "no copy (failed)")
        words.append(f"{gap['agent']}'s call after {gap['gap']:.0f} s idle: {same}")
    for c in facts["closes"]:
        shared = f", still used by {', '.join(c['shared_with'])}" if c["shared_with"] else ""
        words.append(f"agent {c['agent']} {c['how']}: its copy pid {c['copy']} got "
                     f"{_got(c['got'], c['t'])}{shared}")
    r = facts["reconnect"]
    if r is not None:
        from_edit = r.get("from_edit")
        src = {True: " (from the edited entry)", False: " (from the entry as it was before "
               "the edit)"}.get(from_edit, "") if isinstance(from_edit, bool) else ""
        old = facts.get("closes_old") or []
        words.append(f"reconnect: new copy pid {r.get('new')}{src}" if r.get("new") else
                     "reconnect: no new copy started")
        for oc in old:
            words.append(f"the old copy pid {oc['copy']} got {_got(oc['got'], oc['t'])}")
    eo = facts["end_old"]
    if eo is not None:
        if eo["copy"] is None:
            words.append(f"ending the old copy: {eo['note']}")
        else:
            nxt = eo["next"]
            then = ("no call after it" if nxt is None else
                    f"{nxt['agent']}'s next call answered by copy pid {nxt['copy']}"
                    if nxt["ok"] else f"{nxt['agent']}'s next call failed"
                    + (f" ({nxt['result']!r})" if nxt.get("result") else ""))
            words.append(f"ending the old copy pid {eo['copy']} ("
                         f"{', '.join(eo['agents']) or 'no agent'}'s): {then}")
    n = len(facts["calls"])
    words.append(f"{n} calls, {n - len(facts['failed']) - len(facts['unanswered'])} answered"
                 + (f", {len(facts['failed'])} failed" if facts["failed"] else "")
                 + (f", {len(facts['unanswered'])} unanswered" if facts["unanswered"] else ""))
    return "; ".join(words)


def in_ms(facts: Any, t0: float) -> Any:
    """The facts with every monotonic instant `t` made `t_ms` since `t0` (the host's start)."""
    if isinstance(facts, dict):
        return {("t_ms" if k == "t" else k): (round((v - t0) * 1000, 1) if k == "t"
                                              and isinstance(v, float) else in_ms(v, t0))
                for k, v in facts.items()}
    if isinstance(facts, list):
        return [in_ms(v, t0) for v in facts]
    return facts
