"""How a host runs its copies of a server: one shared by its clients, or one per client.

`superseded` calls an older copy forgotten when its host uses a newer copy of the same
server and not this one. That holds only for a host with one client for that server: a
host that runs one copy per client (an agent per subagent, a gateway per connection)
uses a newer copy while another client of its own sits idle with the older one, and
that client's next call would fail if its copy were ended. So every judgement names the
host's habit and the evidence for it.

Guarantees:
- `per-client` (then `superseded` answers `unknown`, never ending anything) on any of:
  a measured habit (`MEASURED`: each row says what was measured, on which version,
  when); a gateway (the host holds a listening socket: clients connect from elsewhere;
  a socket the measurement saw a measured host hold for itself, `own_sockets`, is not
  one);
  observed (this host was seen using an older copy of a server after a newer copy of it
  had settled: it uses copies side by side). A per-client sign overrides a measured
  `shared` habit: the measurement never saw it.
- `shared`: a measured habit, with no per-client sign seen.
- `unknown` habit (a host nobody measured) with no per-client sign seen: judged as
  `shared`, and says so in words. Where the host's sockets cannot be read, the habit is
  `unreadable` and `superseded` answers `unknown`.
- A measured host is identified by its executable's path (`/proc/PID/exe`, or the
  script a `node` runs) in its package's install layout AND the package's manifest
  beside it naming the package, never by a bare name. Identification only selects a
  measured habit (a per-client one protects; a shared one changes the words, not the
  evidence needed): it never signals by itself.
- Reads only (a link, a small JSON file, the host's socket tables).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_tether.proc.table import ProcRecord

__all__ = ["Measured", "MEASURED", "Habit", "identify", "judge", "KINDS"]

KINDS = ("per-client", "shared", "unknown", "unreadable")


@dataclass(frozen=True)
class Measured:
    """One measured host: what it does with copies of a server, and how it is known."""

    host: str  # the host's name in `ps` (`match.HOST_NAMES`' values)
    label: str  # how people call it
    package: str  # the package whose manifest names it
    kind: str  # per-client | shared
    version: str  # the version measured
    date: str  # when
    habit: str  # what it does, in a few words
    seen: str  # what was measured, in one line
    exe: re.Pattern[str]  # its executable's path; group `root`: the package folder
    # The listening sockets the measurement saw the host hold for itself (`table.listening`'s
    # words): not a gateway's, so not a per-client sign. Any other one still is.
    own_sockets: re.Pattern[str] | None = None


MEASURED = (
    Measured(
        "codex", "Codex", "@openai/codex", "per-client", "0.171.0", "December 2026",
        "runs one copy per agent and one for the session, all alike",
        "one copy per agent (spawn_agent) and one for the session, the same argv, cwd "
        "and environment, all children of the one codex process; it ends an agent's copy "
        "when the agent closes, the others at the session's end (issue 52: two subagents "
        "in parallel, 3 of 3 runs)",
        # npm's layout since 0.133: @openai/codex-<os>-<cpu>/vendor/<triple>/bin/codex
        # (nested under @openai/codex/node_modules by a global install); before it,
        # vendor/<triple>/codex/codex in either package.
        re.compile(r"(?P<root>.*/node_modules/@openai/codex(?:-[a-z0-9]+)*)"
                   r"/vendor/[^/]+/(?:bin|codex)/codex(?:\.exe)?$")),
    Measured(
        "claude-code", "Claude Code", "@anthropic-ai/claude-code", "shared", "2.1.332",
        "December 2026", "shares one copy among the session and its subagents",
        "one copy shared by the session and its subagents; after an edit and /mcp "
        "Reconnect the old copy gets nothing, and ending it leaves the host healthy "
        "(issue 52: 3 of 3 runs, the host calling tools through a model API stand-in)",
        # the native binary the postinstall copies over bin/claude.exe, the platform
        # package's own, or the older cli.js a node runs
        re.compile(r"(?P<root>.*/node_modules/@anthropic-ai/claude-code(?:-[a-z0-9]+)*)"
                   r"/(?:bin/claude\.exe|claude|cli\.js)$"),
        # An interactive session listens on a unix socket of its own, `cc-socks/<its
        # pid>.sock` under the temporary folder (/proc/net/unix, 2.1.332, the same runs):
        # the measured habit was measured with it there.
        own_sockets=re.compile(r"unix .*/cc-socks/(?P<pid>[0-9]+)\.sock")),
)


@dataclass(frozen=True)
class Habit:
    """A host's habit and the evidence for it (one line, for `ps`)."""

    kind: str  # one of KINDS
    source: str  # measured | gateway | observed | none | unreadable
    evidence: str
    host: str | None = None  # a measured host's name
    version: str | None = None  # its version, as its manifest says
    measured: str | None = None  # what was measured of it (`Measured.seen`)

    @property
    def per_client(self) -> bool:
        return self.kind == "per-client"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "source": self.source, "host": self.host,
                "version": self.version, "evidence": self.evidence,
                "measured": self.measured}


def _manifest(root: str, package: str) -> str | None:
    """The version in the package manifest at `root` if it names `package` (a platform
    package's manifest names the main package, or itself with an `-os-cpu` suffix);
    None if there is none or it names another package."""
    try:
        with open(os.path.join(root, "package.json"), "rb") as fh:
            doc = json.loads(fh.read(1 << 16))
    except (OSError, ValueError):
        return None
    named = str(doc.get("name") or "") if isinstance(doc, dict) else ""
    if named != package and not named.startswith(package + "-"):
        return None
    return re.sub(r"-[a-z]+-[a-z0-9]+$", "", str(doc.get("version") or "")) or "?"


def identify(rec: ProcRecord) -> tuple[Measured, str] | None:
    """The measured host `rec` is, and its version, by its executable's path in the
    package's layout and the manifest beside it; None for any other process."""
    paths = [rec.exe.removesuffix(" (deleted)")]
    argv = rec.argv
    if len(argv) > 1 and os.path.basename(paths[0]).startswith("node"):
        paths.append(os.path.realpath(os.path.join(rec.cwd or "/", argv[1])))
    for row in MEASURED:
        for p in paths:
            m = row.exe.match(p) if p else None
            if m is None:
                continue
            version = _manifest(m.group("root"), row.package)
            if version is not None:
                return row, version
    return None


def judge(rec: ProcRecord | None, listening: list[str] | None,
          side_by_side: str | None) -> Habit:
    """The habit of the host `rec`: `listening` its listening sockets (None: unreadable),
    `side_by_side` what was seen of it using copies side by side (None: never)."""
    found = identify(rec) if rec is not None else None
    row, version = found if found is not None else (None, None)
    known = {"host": row.host, "version": version, "measured": row.seen} \
        if row is not None else {}
    if side_by_side is not None:
        return Habit("per-client", "observed", f"observed: {side_by_side}", **known)
    if row is not None and row.kind == "per-client":
        return Habit("per-client", "measured", _measured(row, version), **known)
    if listening is None:
        return Habit("unreadable", "unreadable", "unreadable: whether it accepts clients "
                     "from elsewhere (a listening socket) cannot be read from here", **known)
    own = _own_sockets(row, rec, listening)
    others = [x for x in listening if x not in own]
    if others:
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more"
                                         if len(others) > 3 else "")
        return Habit("per-client", "gateway", f"gateway: it listens on {shown}", **known)
    signs = ("no listening socket but its own measured one" if own else "no listening socket"
             ) + ", never seen using two copies side by side"
    if row is not None:
        return Habit("shared", "measured", f"{_measured(row, version)}; no sign of more "
                     f"than one client: {signs}", **known)
    return Habit("unknown", "none", f"not measured; no sign of more than one client: {signs}")


def _own_sockets(row: Measured | None, rec: ProcRecord | None, listening: list[str]
                 ) -> list[str]:
    """The listening sockets of `listening` that the measured host `row` holds for itself
    (`Measured.own_sockets`, naming this very process where the pattern has a pid)."""
    if row is None or row.own_sockets is None or rec is None:
        return []
    out = []
    for x in listening:
        m = row.own_sockets.fullmatch(x)
        if m is not None and m.groupdict().get("pid") in (None, str(rec.pid)):
            out.append(x)
    return out


def _measured(row: Measured, version: str | None) -> str:
    return (f"measured: {row.label} {version} {row.habit} (measured on {row.version}, "
            f"{row.date})")
