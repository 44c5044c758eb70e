"""From a scenario's result to why it failed and what to change: pure functions.

    annotate(report["results"], command)   # adds `diagnosis` and `remedy` strings,
                                           # and the remedy as data: `remedy_steps`
                                           # (server side) and `remedy_guard` (command)
    summary(report["results"])             # "holds: exits on SIGTERM; fails: ..."

Everything is derived from what the run recorded (the verdict, the timeline `events`,
each survivor's `evidence`: threads, children, whether it still holds the wire, the exit
status, stderr) and from the server's SDK as `mcp-tether inspect` reads it from the
installed source. Nothing looks at fixture names. Results are the `--json` records
(`record.ScenarioRecord`), so this keeps working whatever the probe's classes become.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterable
from typing import TypedDict

from mcp_tether.inspect.model import Transport
from mcp_tether.probe.describe import kept_alive, short
from mcp_tether.probe.node_causes import PRELOAD, before_tether, kid_fix, out_of_reach
from mcp_tether.probe.record import Left, ScenarioRecord, TetherShutdown, TimelineEvent

__all__ = [
    "GUARANTEES", "annotate", "diagnose", "remedy", "remedy_parts", "summary", "start_failure",
    "guarantee_of", "explain_line", "GUARD_STEP",
]

# The last step of a failed server's remedy: the same words for every server, only its
# command differs (so a report can say it once and give each row its command).
GUARD_STEP = "if you cannot change it, launch it behind the guard: `{command}`"


# The guarantee each scenario tests, in the order the summary lists them.
GUARANTEES = {
    "eof": "exits on stdin EOF",
    "half-close": "exits on half-close",
    "parent-death": "exits when its parent dies",
    "sigterm": "exits on SIGTERM",
    "sigint": "exits on SIGINT",
    "wrapper": "wrapper forwards signals",
    "stdout": "stdout is clean",
    "idle": "answers while idle",
}
_NOT = {
    "eof": "does not exit on stdin EOF",
    "half-close": "does not exit on half-close",
    "parent-death": "does not exit when its parent dies (EOF never comes)",
    "sigterm": "does not exit on SIGTERM",
    "sigint": "does not exit on SIGINT",
}
# What the server process got last before it exited (`_ended_on`), in words, and which
# of those is the scenario's own trigger (not a later rung of the client's ladder).
_HOW_WORDS = {"EOF": "stdin EOF"}
_TRIGGER_IS = {"eof": ("EOF", "its client's exit"), "half-close": ("EOF",),
               "parent-death": ("EOF", "its client's exit"), "sigterm": ("SIGTERM",),
               "sigint": ("SIGINT",)}
_SCENARIO_GUARANTEE = {
    "close": "eof", "exit": "eof", "crash": "eof", "devnull": "eof",
    "half-close": "half-close", "inherited-writer": "parent-death",
    "sigterm": "sigterm", "sigterm-pid": "sigterm", "sigint": "sigint", "idle": "idle",
}
# The signal a signal scenario sends, as its trigger event names it (`trigger_what`).
_SENT = {"sigterm": "sigterm", "sigterm-pid": "sigterm", "sigint": "sigint"}
_FAILED = ("terminated", "killed", "orphaned", "lingered")
_SHELLS = ("sh", "bash", "dash", "zsh", "ash", "busybox")
_LAUNCHERS = ("npx", "npm", "pnpm", "pnpx", "yarn", "bunx", "uvx", "uv", "pipx", "env")
_WRITE_ERROR = ("EPIPE", "SIGPIPE", "BrokenPipeError", "write EPIPE", "ECONNRESET")
PYTHON_REMEDY = (
    "call `mcp_tether.run(mcp)` instead of `mcp.run()` (or wrap the serving code in "
    "`with mcp_tether.tethered():`): it exits on EOF, parent death, SIGTERM and SIGINT "
    "whatever threads or tasks remain"
)
# What the Python fix covers of a server's children, by whether this platform has a
# subreaper (`mcp_tether.tether.children`): asked once, through the platform seam.
PYTHON_CHILDREN = {
    True: "that call also ends the server's own child processes ({kids}) after your "
          "shutdown hooks, with SIGTERM then SIGKILL, grandchildren included (it is their "
          "subreaper)",
    False: "that call also ends the child processes still linked to it ({kids}) after "
           "your shutdown hooks; one that left its tree is not followed on this platform",
}


class _Proc(TypedDict, total=False):
    """A process of a scenario's timeline, as the sentences name it (`_procs`)."""

    cmd: str
    ppid: int | None
    role: str | None  # client | server | helper; None: seen in the tree
    exit_ms: float | None
    status: int | None
    by: str | None


def guarantee_of(scenario: str) -> str | None:
    return _SCENARIO_GUARANTEE.get(scenario)


def _failed(r: ScenarioRecord) -> bool:
    return not r.get("passed", False) and r.get("verdict") in _FAILED


def _noise(r: ScenarioRecord) -> list[str]:
    return [w for w in r.get("warnings", []) if str(w).startswith("stdout-noise")]


# The line that names an error: `Error: Cannot find module '/x.js'`, `TypeError [ERR_X]:
# ...` (Node), `ModuleNotFoundError: ...` (Python's last traceback line).
_ERROR_LINE = re.compile(r"^(?:[A-Z]\w*)?(?:Error|Exception)(?: \[[\w-]+\])?: \S")
# What Node prints after an uncaught error's stack: its version banner, a closing brace and
# the error's properties (`code: 'MODULE_NOT_FOUND',`), none of which says why.
_NODE_BANNER = re.compile(r"^Node\.js v\d+\.\d+\.\d+$")


def start_failure(r: ScenarioRecord) -> str | None:
    """Why a server did not start or answer, from its stderr: the last line that names an
    error (a crash's message, not Node's version banner after it), else the last line."""
    if r.get("verdict") not in ("error", "early-exit"):
        return None
    lines = [ln.strip() for ln in str(r.get("stderr_tail") or "").splitlines() if ln.strip()]
    named = [ln for ln in lines if _ERROR_LINE.match(ln)]
    if named:
        return named[-1][:200]
    lines = [ln for ln in lines if not _NODE_BANNER.match(ln)]
    return lines[-1][:200] if lines else None


def _base(word: str) -> str:
    return os.path.basename(word)


def _guarded(command: list[str]) -> list[str] | None:
    from mcp_tether.inspect import guarded_command

    return guarded_command(command)


def _events(r: ScenarioRecord) -> list[TimelineEvent]:
    return list(r.get("events") or [])


def _procs(r: ScenarioRecord) -> dict[int, _Proc]:
    """pid -> {cmd, ppid, role, exit_ms, status, by} from the timeline."""
    out: dict[int, _Proc] = {}
    for e in _events(r):
        pid = e.get("pid")
        if pid is None:
            continue
        p = out.setdefault(pid, {})
        if e["what"] in ("spawn", "seen"):
            p.setdefault("cmd", e.get("cmd", ""))
            p.setdefault("ppid", e.get("ppid"))
            p.setdefault("role", e.get("role"))
        elif e["what"] == "exit":
            p["exit_ms"], p["status"], p["by"] = e["t_ms"], e.get("status"), e.get("by")
    # One name per process in every sentence: the command it ran last (after its exec),
    # as the survivors' lines name it, not the one read when it was first seen (a shell
    # or launcher just forked, before it exec'd the server).
    for s in _left(r):
        cmd = s.get("cmdline") or " ".join(_argv(s))
        if s.get("pid") in out and cmd:
            out[s["pid"]]["cmd"] = cmd
    return out


def _proc(procs: dict[int, _Proc], pid: int | None) -> _Proc:
    """The timeline's process `pid` ({} when it has none)."""
    return (procs.get(pid) if pid is not None else None) or {}


def _left(r: ScenarioRecord) -> list[Left]:
    """Every process the scenario left: alive after the window, then those the probe
    SIGKILLed at its end."""
    return [*r.get("survivors", []), *(r.get("killed_at_window") or [])]


def _argv(s: Left) -> list[str]:
    """A process's command as its evidence read it ([]: no evidence, a container)."""
    ev = s.get("evidence")
    return list(ev.get("cmdline") or []) if ev else []


def _server_pid(r: ScenarioRecord) -> int | None:
    for e in _events(r):
        pid = e.get("pid")
        if e["what"] == "spawn" and e.get("role") == "server" and pid is not None:
            return int(pid)
    return None


def _language(r: ScenarioRecord, command: list[str], sdks: list[Transport]) -> str | None:
    """node / python, from what actually ran (survivors' exe), else the command, else SDKs."""
    words: list[str] = []
    for s in r.get("survivors", []):
        ev = s.get("evidence")
        if _guarded(_argv(s)) is not None:
            continue  # the guard is Python whatever it guards: not the server's language
        words += [(ev.get("exe") if ev else None) or "", *_argv(s)[:1]]
    procs = _procs(r)
    parents = {p.get("ppid") for p in procs.values()}
    # Leaves first: behind a wrapper or the guard, the process with no child is the server.
    for _pid, p in sorted(procs.items(), key=lambda kv: kv[0] in parents):
        if p.get("role") != "client" and _guarded((p.get("cmd") or "").split()) is None:
            words += (p.get("cmd") or "").split()[:1]
    inner = _guarded(command)
    words += (inner or command)[:1]
    if command and _base(command[0]) in _SHELLS and "-c" in command:
        i = command.index("-c")
        words += shlex.split(command[i + 1])[:1] if i + 1 < len(command) else []
    for w in words:
        b = _base(w)
        if b.startswith("node") or b in ("bun", "deno", "tsx", "npx"):
            return "node"
        if b.startswith("python") or b in ("uvx", "uv", "pipx"):
            return "python"
    langs = {s.language for s in sdks}
    return langs.pop() if len(langs) == 1 else None


def _signal_target(r: ScenarioRecord, what: str) -> int | None:
    return next((e.get("pid") for e in _events(r) if e["what"] == what), None)


def _descends(pid: int, root: int, procs: dict[int, _Proc]) -> bool:
    """Is `pid` of the server's tree below `root`? The keeper watches only the client and
    the server's tree and adopts what that tree leaves, so a process first seen already
    adopted (its parent exited before the keeper looked: a loaded machine) is still of
    the tree, and so is every process below it."""
    seen: set[int] = set()
    cur: int | None = pid
    while cur is not None and cur in procs and cur not in seen:
        if procs[cur].get("role") in ("client", "server"):
            return False  # reached the client or the server itself without passing root
        seen.add(cur)
        parent = procs[cur].get("ppid")
        if parent == root:
            return True
        if parent is not None and parent not in procs and procs[cur].get("role") is None:
            return root in procs and procs[root].get("role") == "server"  # adopted
        cur = parent
    return False


def _ended_on(r: ScenarioRecord) -> str | None:
    """What the process the client started last got before it exited (`EOF`, `SIGTERM`,
    ...; "its client's exit" when nothing was sent to it), None while it lived on."""
    sp = _server_pid(r)
    procs = _procs(r)
    if sp is None or sp not in procs:
        return None
    end = next((e["t_ms"] for e in _events(r) if e["what"] == "window-end"), None)
    exited = procs[sp].get("exit_ms", end)
    if exited is None:
        return None
    until = exited if end is None else min(exited, end)
    sent = [e["what"] for e in _events(r)
            if e.get("pid") == sp and e["what"] in ("eof", "sigterm", "sigint", "sigkill")
            and e["t_ms"] <= until]
    return sent[-1].upper() if sent else "its client's exit"


def _is_wrapper(command: list[str]) -> bool:
    """A shell, a launcher or the guard: the process it starts is the server."""
    head = _base(command[0]) if command else ""
    return head in _SHELLS or head in _LAUNCHERS or _guarded(command) is not None


def _spawned_wrapper(r: ScenarioRecord) -> bool:
    """Is the process the client started a wrapper, by its command (`sh -c`, `npx`, npx
    run by node: `node /usr/bin/npx`, or the guard)?"""
    cmd = str(_proc(_procs(r), _server_pid(r)).get("cmd") or "")
    heads = {_base(w) for w in cmd.split(" ")[:2]}
    return bool(heads & {*_SHELLS, *_LAUNCHERS}) or _guarded(cmd.split()) is not None


def _wrapper_failure(r: ScenarioRecord) -> str | None:
    """The process the client started was gone at the window's end while a descendant
    of it lived on: a wrapper that did not pass the ending on.

    "Gone at the window's end" is read from the survivor lists (the live set the keeper
    scanned), not from the exit event's instant: a loaded keeper may notice an exit late.
    """
    sp = _server_pid(r)
    procs = _procs(r)
    if sp is None or sp not in procs:
        return None
    alive_at_end = {s.get("pid") for s in r.get("survivors", [])}
    if sp in alive_at_end or sp in {s.get("pid") for s in r.get("killed_at_window") or []}:
        return None  # alive at the window's end: not a wrapper that quit early
    # Everything the keeper watches is the server's tree (it adopts what the server's
    # processes leave), so a survivor whose ancestry the timeline missed (a loaded keeper
    # can see a fork only after its parent died) still descends from the server.
    orphans = [pid for pid in alive_at_end
               if pid != sp and _proc(procs, pid).get("role") != "client"
               and (_descends(pid, sp, procs) or _proc(procs, pid).get("ppid") is None)]
    if not orphans and r.get("verdict") != "lingered":
        return None
    how = _ended_on(r)
    if how is None:
        return None
    wrapper = short(procs[sp].get("cmd") or "", 24)
    named = {s.get("pid"): s.get("cmdline") or " ".join(_argv(s))
             for s in r.get("survivors", [])}
    kids = ", ".join(
        f"{pid} ({short(_proc(procs, pid).get('cmd') or named.get(pid) or '', 30)})"
        for pid in sorted(orphans))
    if _spawned_wrapper(r):
        return (f"the wrapper pid {sp} ({wrapper}) exited on {how} but did not pass it on: "
                f"its descendant {kids or 'process'} outlived it")
    return (f"pid {sp} ({wrapper}) exited on {how} and left its descendant "
            f"{kids or 'process'} running")


def _sdk_text(sdks: list[Transport], language: str | None) -> str | None:
    """The SDK the server loads (`inspect.uses`: resolved from its entry point), what its
    transport does at EOF, and how that was found; or that it loads none / cannot be told."""
    mine = [s for s in sdks if language is None or s.language in (language, None)]
    if not mine:
        return None
    s = mine[0]
    # How it was found, up to where: the first clause ("X imports Y"); `inspect
    # --command` prints the whole of it.
    how = f" (found: {s.how.split('; ')[0]})" if s.how else ""
    if s.state == "none":
        return f"it loads no MCP SDK{how}: what it does at EOF is its own code's doing"
    if s.state == "unknown" and s.package:
        return (f"it loads {s.package} {s.version or ''}".rstrip() + ", an MCP SDK "
                f"mcp-tether does not know: what its transport does at EOF is unknown{how}")
    if s.state == "unknown":
        return f"which MCP SDK it loads could not be told{how}"
    ev = ", ".join(s.stdin_events) or "none"
    what = {True: "ends its session on EOF", False: "does not react to EOF",
            None: "cannot be read"}[s.exits_on_eof]
    label = s.label or (f"{s.package} {s.version}"
                        + (f" via {s.delegates_to}" if s.delegates_to else ""))
    return f"it loads {label}, whose stdio transport {what} (stdin listeners: {ev}){how}"


def _tether_loaded(sdks: list[Transport], language: str | None) -> str | None:
    """How a Node server loads the package mcp-tether (`inspect.uses`), or None."""
    if language != "node":
        return None
    return next((s.tether for s in sdks if s.tether and s.language in ("node", None)), None)


def _tether_ran(r: ScenarioRecord) -> TetherShutdown | None:
    """The record of a shutdown that ran through a Node server's tether() in this scenario
    (`probe.shutdowns`, written by the package itself), or None: data, never a message."""
    records = r.get("tether") or []
    return records[0] if records else None


def _left_kids(r: ScenarioRecord, command: list[str]) -> list[Left]:
    """The survivors below a server process that itself exited within the window (its
    child processes, whatever they became), one per pid; [] when the server process is
    among them, or the command is a wrapper (its descendant is the server itself)."""
    sp = _server_pid(r)
    if sp is None or _is_wrapper(command) or r.get("verdict") not in ("orphaned", "lingered"):
        return []
    left = _left(r)
    if any(s.get("pid") == sp for s in left):
        return []
    procs = _procs(r)
    out: dict[int, Left] = {}
    for s in left:
        pid = s.get("pid")
        if pid is not None and pid not in out and _descends(pid, sp, procs):
            out[pid] = s
    return list(out.values())


def _kid_name(s: Left) -> str:
    return short(s.get("cmdline") or " ".join(_argv(s)) or "?", 30)


def _kids_headline(r: ScenarioRecord, kids: list[Left], key: str,
                   ran: TetherShutdown | None, early: str | None) -> str:
    """What survived, said first: how the server process ended, then each child left
    (with why it was out of reach, where a tether() ran); "does not exit on X" only when
    the server process did not exit on the trigger itself but on a later rung."""
    how = _ended_on(r) or "its client's exit"
    named = [f"`{_kid_name(s)}`" + (f" ({out_of_reach(s, ran)[0]})" if ran else "")
             for s in kids[:3]]
    more = f" and {len(kids) - 3} more" if len(kids) > 3 else ""
    what = (f"its child {named[0]}" if len(kids) == 1 else
            f"its children {', '.join(named)}{more}")
    fate = "survived" if r.get("verdict") == "orphaned" else \
        "outlived the window (it ended by itself later)"
    if how in _TRIGGER_IS.get(key, ()):
        said = "the server process exited on " + _HOW_WORDS.get(how, how) + ", but"
        if early:
            said = f"the {early} killed the server process before its tether() ran, and"
        return f"{said[:1].upper()}{said[1:]} {what} {fate}"
    said = f"the server process exited on the {how} that followed"
    if early:
        said = f"the {how} that followed killed the server process before its tether() ran"
    return f"{_NOT.get(key, f'does not pass {key}')}: {said}, and {what} {fate}"


def _ran_text(ran: TetherShutdown, kids: list[Left]) -> str:
    got = ran.get("children") or {}
    armed = (ran.get("armed") or {}).get("by")
    n = int(got.get("found") or 0)
    found = ("this platform cannot list a Node process's descendants"
             if got.get("ended_by") == "unknown" else
             "it found no descendant to end" if n == 0 else
             f"it found {n} descendant(s) and SIGKILL left {len(got.get('survivors') or [])}"
             if got.get("ended_by") == "none" else f"it ended the {n} descendant(s) it found")
    text = (f"its tether() ran (armed by {'the preload' if armed == 'preload' else armed}, "
            if armed else "its tether() ran (")
    text += (f"shutdown on {ran.get('reason')}, exit status {ran.get('status')}) and the "
             f"server process exited; {found}")
    whys = [f"`{_kid_name(s)}`, {': '.join(out_of_reach(s, ran))}" for s in kids[:3]]
    return text + ("; out of its reach: " + "; ".join(whys) if whys else "")


def _children(r: ScenarioRecord, command: list[str]) -> str:
    """The server's descendants that outlived the window (or were killed at its end),
    named by command; "" when there were none, or when the command is a wrapper (a shell,
    a launcher, the guard: its child is the server, not a child of it). Never by pid: the
    remedy is read after the probe ended every tree, and a pid offered to act on would be
    gone (or, reused, someone else's)."""
    sp = _server_pid(r)
    procs = _procs(r)
    head = _base(command[0]) if command else ""
    # Behind a shell, a launcher or the guard, the descendants are the server itself, not
    # children of it; a server process that exited and left its own children is named here.
    if sp is None or head in _SHELLS or head in _LAUNCHERS or _guarded(command) is not None:
        return ""
    left = _left(r)
    kids: list[str] = []
    seen: set[int] = set()
    for s in left:
        pid = s.get("pid")
        if pid is None or pid == sp or pid in seen or not _descends(pid, sp, procs):
            continue
        seen.add(pid)
        what = short(procs[pid].get("cmd") or "", 30) or "?"
        if what not in kids:
            kids.append(what)
    return ", ".join(kids[:3]) + (f" and {len(kids) - 3} more" if len(kids) > 3 else "")


def _write_error(r: ScenarioRecord) -> str | None:
    cause = str(r.get("cause") or r.get("lingered_cause") or "")
    tail = str(r.get("stderr_tail") or "")
    hit = next((w for w in _WRITE_ERROR if w in cause or w in tail), None)
    if hit is None and r.get("exit_status") != 141:  # 128 + SIGPIPE
        return None
    when = r.get("lingered_ms")
    at = f" {when:.0f} ms after the trigger" if isinstance(when, (int, float)) else " later"
    return (f"it died{at} of a write error ({hit or 'SIGPIPE'}) on its next write to a "
            f"closed stdout, not because it noticed the client go")


def diagnose(
    r: ScenarioRecord, command: list[str], sdks: list[Transport] | None = None
) -> str | None:
    """One paragraph on why this scenario failed; None when it did not."""
    sdks = sdks or []
    noise = _noise(r)
    start = _start_text(r)
    if start:
        return start
    if not _failed(r) and not noise:
        return None
    sentences = _why_failed(r, command, sdks) if _failed(r) else []
    if noise:
        sentences.append(f"stdout is not clean: {len(noise)} non-protocol line(s), e.g. "
                         f"{noise[0].split(':', 1)[1].strip()[:60]}")
    return " ".join(_sentence(x) for x in sentences)


def _start_text(r: ScenarioRecord) -> str | None:
    """The paragraph for a server that did not get through start-up (None: it did)."""
    start = start_failure(r)
    if start and r.get("verdict") == "early-exit":
        status = r.get("exit_status")
        st = f" (status {status})" if status is not None else ""
        return _sentence(f"exited during start-up{st}: {start}")
    if start:
        why = str(r.get("detail") or "it did not get through start-up").rstrip(".")
        return _sentence(f"{why}; its stderr last said: {start}")
    return None


def _why_failed(r: ScenarioRecord, command: list[str], sdks: list[Transport]) -> list[str]:
    """A failed scenario's sentences: the guarantee it broke, a wrapper in the way, what
    its SDK does at EOF, what its tether() did, and what kept each survivor alive."""
    sc = r["scenario"]
    key = guarantee_of(sc) or sc
    lang = _language(r, command, sdks)
    loaded = _tether_loaded(sdks, lang)
    ran = _tether_ran(r)
    kids = _left_kids(r, command)
    # A signal before tether() matters where it left children: a server it killed
    # alone did exit (a `close` it ended is judged on the EOF before it).
    early = before_tether(r, loaded) if kids else None
    # the server process exited: say what survived, not "does not exit"
    sentences = [_kids_headline(r, kids, key, ran, early) if kids else _headline(r, key)]
    wrap = None if kids else _wrapper_failure(r)
    if wrap:
        sentences.append(wrap)
    sdk = _sdk_sentence(r, sdks, lang) if key in ("eof", "half-close") else None
    if sdk:
        sentences.append(sdk)
    tether = _tether_sentence(r, ran, kids, early, loaded)
    if tether:
        sentences.append(tether)
    return sentences + _survivor_sentences(r)


def _headline(r: ScenarioRecord, key: str) -> str:
    """The guarantee broken, by how the server's own process ended."""
    sc, verdict = r["scenario"], r["verdict"]
    g = _NOT.get(key, f"does not pass {sc}")
    if sc == "close" and verdict == "terminated":
        return f"{g}: it needed SIGTERM, {r.get('exit_ms')} ms after EOF"
    if sc == "close" and verdict == "killed":
        return f"{g}, nor on SIGTERM: only SIGKILL ended it"
    if verdict == "killed":
        return f"{g}: it was still alive at the window's end and was SIGKILLed"
    if verdict == "lingered":
        return f"{g} promptly: it outlived the window"
    return f"{g}: its tree outlived the window"


def _sdk_sentence(r: ScenarioRecord, sdks: list[Transport], lang: str | None) -> str | None:
    """What the server's SDK does at EOF; when it ends there, the blame on the server."""
    sdk = _sdk_text(sdks, lang)
    if not sdk:
        return sdk
    alive = [s for s in r.get("survivors", [])
             if (ev := s.get("evidence")) is None or ev.get("alive", True)]
    ends = any(x.exits_on_eof for x in sdks if x.language == lang
               and x.state in (None, "sdk"))
    if ends and alive:
        sdk += ": so something in the server's own code keeps it alive"
    return sdk


def _tether_sentence(r: ScenarioRecord, ran: TetherShutdown | None, kids: list[Left],
                     early: str | None, loaded: str | None) -> str | None:
    """What the server's tether() did: a shutdown through it, or why none ran."""
    if ran:
        return _ran_text(ran, kids)
    if early:
        return (f"it loads mcp-tether (found: {loaded}), but no shutdown ran "
                f"through its tether(): the {early} came before tether() was "
                "called, and Node's default action ended the process at once "
                "(no `server.close()`, no hooks, no descendant ended)")
    if loaded and kids:
        status = r.get("exit_status")
        return (f"it loads mcp-tether (found: {loaded}), but the server process "
                f"ended (status {status}) without a shutdown through its "
                "tether(): by another path before the line took hold (its own "
                "exit, a crash), so nothing ended its children")
    if loaded:
        return (f"it loads mcp-tether (found: {loaded}), yet its tether() was "
                "not in effect when the trigger came: it runs too late (after "
                "an `await` that outlasted the client) or not on this path")
    return None


def _survivor_sentences(r: ScenarioRecord) -> list[str]:
    """What kept each survivor alive, once per pid; survivors already exiting; a death
    by a write error rather than by noticing the client go."""
    sc = r["scenario"]
    sig = _SENT[sc].upper() if sc in _SENT else None
    out, seen = [], set()
    for s in _left(r):
        if s.get("pid") not in seen:
            seen.add(s.get("pid"))
            out.append(kept_alive(s, sig, _signal_target(r, _SENT.get(sc, sc))))
    evs = [s.get("evidence") for s in r.get("survivors", [])]
    if evs and all(ev and ev.get("alive") is False for ev in evs):
        out.append("every survivor was already exiting at the window's end: slow, "
                   "not stuck (a loaded machine?); a longer --window may pass")
    died = _write_error(r)
    if died:
        out.append(died)
    return out


def _sentence(text: str) -> str:
    text = text.strip()
    return (text[:1].upper() + text[1:]).rstrip(".") + "."


def _signal_stopped_in_between(r: ScenarioRecord, command: list[str]) -> bool:
    """A host's signal went to a launcher or shell that is still alive and kept it: a
    process below it never received it. No line in the server can fix that."""
    sc = r.get("scenario")
    head = _base(command[0]) if command else ""
    if sc not in _SENT or (head not in _SHELLS and head not in _LAUNCHERS):
        return False
    target = _signal_target(r, _SENT[sc])
    left = {x.get("pid") for x in _left(r)}
    return target in left and any(pid != target for pid in left)


def remedy(
    r: ScenarioRecord, command: list[str], sdks: list[Transport] | None = None
) -> str | None:
    """What to change, fitting the server's language and launcher; None when nothing."""
    return _sentence_of(*remedy_parts(r, command, sdks))


def _sentence_of(steps: list[str], guard: str | None) -> str | None:
    if guard:
        steps = [*steps, GUARD_STEP.format(command=guard)]
    text = "; ".join(steps)
    return (text[:1].upper() + text[1:]) or None


def remedy_parts(
    r: ScenarioRecord, command: list[str], sdks: list[Transport] | None = None
) -> tuple[list[str], str | None]:
    """The remedy as data: the steps in the server or its launcher (in order, each a
    clause), and the command that puts it behind the guard (None: already guarded, or
    nothing failed). `remedy()` joins them into one sentence."""
    sdks = sdks or []
    noise = _noise(r)
    if not _failed(r) and not noise:
        return [], None
    steps: list[str] = []
    if _failed(r):
        wrapper = _wrapper_failure(r) or _signal_stopped_in_between(r, command)
        lang = _language(r, command, sdks)
        head = _base(command[0]) if command else ""
        if wrapper and head in _SHELLS:
            steps.append("make the shell exec the server so signals and EOF reach it: "
                         f"`{head} -c '... exec <server command>'`")
        elif wrapper and head in _LAUNCHERS:
            steps.append(f"`{head}` stays in between and does not forward signals: run the "
                         "installed server's own command instead")
        loaded = _tether_loaded(sdks, lang)
        ran = _tether_ran(r)
        left = _left_kids(r, command)
        early = before_tether(r, loaded) if left else None
        if ran:
            steps.append(kid_fix([out_of_reach(s, ran)[0] for s in left]))
        elif early:
            from mcp_tether.inspect.node import NODE_PLACEMENT

            steps.append(f"the {early} came before tether(): {PRELOAD}; or move the line "
                         f"earlier: {NODE_PLACEMENT}")
        elif loaded and left:
            steps.append(f"the server process ended by another path before its tether() "
                         f"took hold: {PRELOAD}, so that every ending runs its shutdown")
        elif loaded:
            from mcp_tether.inspect.node import NODE_PLACEMENT

            steps.append(f"the Node server already loads mcp-tether ({loaded}): the line "
                         "is there but did not take hold in time (it runs after an `await` "
                         f"that outlasted the client, or on a path not taken); {NODE_PLACEMENT}")
        elif lang == "node":
            from mcp_tether.inspect.node import NODE_REMEDY

            steps.append(f"in the Node server {NODE_REMEDY}")
        elif lang == "python":
            kids = _children(r, command)
            steps.append(f"in the Python server {PYTHON_REMEDY}")
            if kids:  # a step of its own: the fix above is said once for every server
                from mcp_tether import platform

                exact = platform.backend.HAS_SUBREAPER
                steps.append(PYTHON_CHILDREN[exact].format(kids=kids))
                if not exact:
                    steps.append("its children can escape that fix here: launch it behind "
                                 "the guard, which ends the whole tree")
        if lang == "node" and _children(r, command) and not ran and not loaded:
            steps.append(f"that line ends its child processes ({_children(r, command)}) "
                         "too while they are below the server; one that leaves its tree "
                         "(a daemon) is reached only if it was started after the line: "
                         f"where one starts earlier, {PRELOAD}")
    if noise:
        steps.append("write logs to stderr (console.error / logging to sys.stderr): stdout "
                     "carries JSON-RPC only")
    guard = None
    if _failed(r) and command and _guarded(command) is None:
        guard = f"mcp-tether run -- {shlex.join(command)}"
    return steps, guard


def annotate(
    results: list[ScenarioRecord],
    command: list[str],
    *,
    locate: Callable[[list[str]], list[Transport]] | None = None,
    cwd: str | None = None,
) -> list[ScenarioRecord]:
    """Add `diagnosis` and `remedy` to each result that failed (in place; returned).

    The server's SDKs are located from the command (run in `cwd`, the probe's working
    directory) only when something failed.
    """
    sdks: list[Transport] | None = None
    for r in results:
        if not (_failed(r) or _noise(r) or start_failure(r)):
            continue
        if sdks is None:
            if locate is None:
                from mcp_tether.inspect import sdks_for_command

                def locate(argv: list[str]) -> list[Transport]:
                    return sdks_for_command(argv, cwd)
            sdks = locate(list(command))
        r["diagnosis"] = diagnose(r, command, sdks)
        steps, guard = remedy_parts(r, command, sdks)
        r["remedy"] = _sentence_of(steps, guard)
        r["remedy_steps"] = [s[:1].upper() + s[1:] for s in steps]
        r["remedy_guard"] = guard
    return results


def summary(results: Iterable[ScenarioRecord]) -> str:
    """One line: the guarantees that hold and those that fail, over the scenarios run."""
    state: dict[str, bool] = {}
    for r in results:
        sc, verdict = r.get("scenario", ""), r.get("verdict")
        if verdict in ("error", "early-exit", "skipped"):
            continue
        key = guarantee_of(sc)
        if key is None:
            continue
        ok = bool(r.get("passed"))
        state[key] = state.get(key, True) and ok
        if sc == "close" and verdict == "terminated":
            state["sigterm"] = state.get("sigterm", True)  # SIGTERM did end it
        if _wrapper_failure(r) and _spawned_wrapper(r):  # a server's own exit is no wrapper's
            state["wrapper"] = False
        state["stdout"] = state.get("stdout", True) and not _noise(r)
    holds = [GUARANTEES[k] for k in GUARANTEES if state.get(k) is True]
    fails = [GUARANTEES[k] for k in GUARANTEES if state.get(k) is False]
    return (f"holds: {', '.join(holds) or 'nothing tested'}"
            + (f"; fails: {', '.join(fails)}" if fails else ""))


def explain_line(r: ScenarioRecord, limit: int = 110) -> str:
    """The short line the table prints under a row: why it failed / did not start."""
    text = r.get("diagnosis") or ""
    if not text:
        return ""
    first = text.split(". ")[0].rstrip(".")
    return first if len(first) <= limit else first[: limit - 1] + "…"
