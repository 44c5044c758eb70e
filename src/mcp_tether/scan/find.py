"""The scan: every stdio server tree on this machine, found by evidence, and what it is.

Guarantees:
- Evidence only: nothing here sends a signal or writes to a process. `reap` acts on a
  `ScanResult`, re-checking identity itself.
- Found by evidence, whatever the name: a process adopted by init or a subreaper whose
  protocol channel lost its client side (`evidence.read_channels`) is listed as a leaked
  stdio process. Live servers are found as before: a config entry's command (`config`),
  a package-runner child of a running host (`host`), an MCP-looking argv (`guess`).
- "parent gone" never comes from `ppid == 1` alone: the adopter must not be a host and
  must not hold the other side of the channel (in a container pid 1 is often the host).
- A process that holds the client side of a child's channel is a client (a host), and so
  is one that started a server child on a channel of its own (not its own stdin passed
  through, as a wrapper passes it), even once it closed its ends: a host is never
  reported as a server, nor folded into its servers' trees.
- A process an earlier scan saw match a config entry (`Samples.matched_before`: this
  very process, pid and start time) is still a server after the entry was edited
  (`remembered`).
- A wrapper (npx, uvx, sh -c, the guard, ...) and the server it runs are one `Server`,
  rooted at the outermost wrapper; identification looks at every member.
- Unreadable processes are skipped and counted; a process that vanishes mid-scan is not
  there. Never an error.
"""

from __future__ import annotations

import gc
import os
import time
from typing import TYPE_CHECKING

from mcp_tether.proc import table
from mcp_tether.proc.table import CHANNEL_KINDS, End, ProcRecord
from mcp_tether.scan import abandoned, evidence, rules, superseded
from mcp_tether.scan.identify import Identifier, identify, split_title
from mcp_tether.scan.match import (
    HOST_NAMES,
    INTERPRETERS_RE,
    RUNNERS,
    SHELLS,
    Matcher,
    base,
    classify_host,
    guarded_argv,
    is_guard,
    load_config,
    looks_like_mcp,
    runner_of,
    tokens,
)
from mcp_tether.scan.model import (
    HOST_GONE,
    Channel,
    Member,
    ScanResult,
    Server,
)

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from mcp_tether.scan.record import Parent

__all__ = ["scan", "MAX_PRIVATE_FDS"]

# A process with more descriptors than this is not searched for private channel copies
# (an SDK server has a handful; a desktop application has hundreds).
MAX_PRIVATE_FDS = 256

_ARGV_NAMES = (RUNNERS | SHELLS | {"node", "nodejs", "ruby", "java", "fastmcp", "electron",
                                   "claude-desktop"}
               | {k.split(" ")[0] for k in HOST_NAMES})


def scan(*, home: str | None = None, cwd: str | None = None, config: str | None = None,
         servers: Iterable[Any] | None = None, users: set[int] | None = None,
         tracker: abandoned.Tracker | None = None,
         samples: superseded.Samples | None = None) -> ScanResult:
    """Find stdio server trees, their evidence and what they are. Sends nothing.

    `servers` replaces config discovery with the given entries (tests, `--config`
    callers that already read them); `users` limits the result to those uids;
    `tracker` carries abandonment seen by earlier scans (`abandoned.Tracker`);
    `samples` the read/write counters seen by earlier scans (`superseded.Samples`;
    default: the user's samples file, read and written back).
    """
    t0 = time.monotonic()
    # Thousands of short-lived records per scan, all freed by reference counting: the
    # cyclic collector, triggered by allocation counts, would only walk them in vain.
    collecting = gc.isenabled()
    gc.disable()
    try:
        matchers, config_errors = load_config(home, cwd, config, servers)
        want = table.name_filter(_ARGV_NAMES | {m.cmd for m in matchers},
                                 prefixes=("python", "pypy"), contains=("mcp",))
        procs = table.table(want)
        procs.pop(os.getpid(), None)
        kept = samples if samples is not None else superseded.Samples.open()
        peers = evidence.Peers()
        try:
            s = _Scan(procs, matchers, peers, kept.matched_before())
            s.find()
            s.group()
            out = s.servers(users)
            abandoned.assess(out, peers, lambda pid: _cwd(procs, pid), tracker=tracker)
            superseded.assess(out, kept, lambda pid: _cwd(procs, pid),
                              {m.key: m.fingerprint for m in matchers})
            kept.keep({rec.ident for rec in procs.values()})
            kept.save()
        finally:
            peers.close()
        return ScanResult(out, len(procs), procs.unreadable, s.running_hosts, config_errors,
                          time.monotonic() - t0)
    finally:
        if collecting:
            gc.enable()


def _program_key(argv: list[str]) -> tuple[str, str]:
    """What program a command runs: its executable's name and its first operand (the
    script or module of an interpreter, the package of a runner)."""
    if not argv:
        return ("", "")
    return (os.path.basename(argv[0]), next((a for a in argv[1:] if not a.startswith("-")), ""))


def _cwd(procs: table.Table, pid: int) -> str | None:
    rec = procs.get(pid)
    return rec.cwd if rec is not None else None


class _Scan:
    """One scan of one process table: what each process is to the others (host, client,
    adopter, wrapper), found by `find`, grouped into trees by `group`, made into
    `Server`s by `servers`. Descriptor links and channels are read once per pid."""

    def __init__(self, procs: table.Table, matchers: list[Matcher], peers: evidence.Peers,
                 remembered: set[tuple[int, float]] | None = None) -> None:
        self.procs = procs
        self.matchers = matchers
        self.peers = peers
        self.remembered = remembered or set()  # (pid, start) seen matching an entry
        self.ident = Identifier()
        self.pid1_init = rules.pid1_is_init(procs.get(1))
        self.kids: dict[int, list[int]] = {}
        self.hosts: dict[int, str] = {}  # a host by name -> which
        for p in procs.values():
            self.kids.setdefault(p.ppid, []).append(p.pid)
            h = classify_host(p.argv, p.comm) if p.argv_read else None
            if h is not None:
                self.hosts[p.pid] = h
        self.running_hosts = sorted(set(self.hosts.values()))
        self.clients: dict[int, list[int]] = {}  # a host by evidence -> the children it serves
        self.found: dict[int, list[str]] = {}  # candidate -> how it was found
        self.matched: dict[int, list[Matcher]] = {}  # candidate -> config entries it matches
        self.roots: set[int] = set()
        self._links: dict[int, dict[int, End] | None] = {}
        self._full: dict[int, dict[int, End] | None] = {}
        self._chans: dict[int, tuple[str, list[Channel], bool]] = {}
        self._details: dict[int, list[str]] = {}  # root -> its channels' own details

    # ----- one process, read once -----------------------------------------------------

    def adopter(self, p: ProcRecord | None, ppid: int) -> bool:
        return rules.adopter(p, ppid, self.pid1_init)

    def fds(self, pid: int) -> dict[int, End] | None:
        """fd 0 and fd 1 only: all that wrapper and client checks need."""
        if pid not in self._links:
            self._links[pid] = table.fd_ends(pid, only=(0, 1))
        return self._links[pid]

    def all_fds(self, pid: int) -> dict[int, End] | None:
        """Every fd of a would-be client or adopter (read once per scan: init is asked
        about every leak, and may hold thousands)."""
        if pid not in self._full:
            self._full[pid] = table.fd_ends(pid, limit=evidence.HOLDER_FD_LIMIT)
        return self._full[pid]

    def channels(self, pid: int) -> tuple[str, list[Channel], bool]:
        """`evidence.read_channels` of `pid`: what fd 0 is, the channel, private copies?"""
        if pid not in self._chans:
            head = self.fds(pid)
            kind0 = evidence.stdin_kind(head.get(0)) if head is not None else "unknown"
            if head is None:
                self._chans[pid] = ("unknown", [], False)
            elif kind0 in CHANNEL_KINDS:
                self._chans[pid] = evidence.read_channels(pid, self.peers, head)
            elif kind0 != "null":  # only the SDK's diversion leaves copies
                self._chans[pid] = (kind0, [], False)
            else:  # private copies past fd 0 (mcp 2.x): the whole table, if not huge
                full = table.fd_ends(pid, limit=MAX_PRIVATE_FDS, known=head)
                rec = self.procs.get(pid)
                self._chans[pid] = (
                    evidence.read_channels(pid, self.peers, full,
                                           rec.exe if rec is not None else None)
                    if full is not None else (kind0, [], False))
        return self._chans[pid]

    def is_client(self, pid: int) -> bool:
        """Holds the client side of a child's channel (fd 0/1, or the SDK's private
        copies): a host, whatever its name; those children are its servers."""
        if pid in self.clients:
            return bool(self.clients[pid])
        served = []
        for k in self.kids.get(pid, ()):
            kinds = {fd: e.kind for fd, e in (self.fds(k) or {}).items()}
            if not any(kinds.get(fd) in CHANNEL_KINDS for fd in (0, 1)) \
                    and kinds.get(0) != "null":
                continue  # cheap: a child without a stdio channel needs no closer look
            if evidence.holds_peer(pid, self.channels(k)[1], self.peers,
                                   self.all_fds(pid) or {}):
                served.append(k)
        self.clients[pid] = served
        return bool(served)

    def own_channel(self, parent: int, child: int) -> bool:
        """Was `child` started on a channel of its own: a pipe or socket at its fd 0/1
        (or the SDK's private copies of one) that is not `parent`'s own stdin passed
        through, as a wrapper passes it? False where the child's channel is unknown."""
        chans = self.channels(child)[1]
        mine = (self.fds(parent) or {}).get(0)
        return bool(chans) and all(mine is None or not mine.holds(c.end) for c in chans)

    def launched(self, pid: int) -> list[int]:
        """Its children found as servers that it started on channels of their own: it
        launched them, so it is their host, even once it no longer holds their far ends
        (it closed them, or an SDK's channel copies are not recognised)."""
        return [k for k in self.kids.get(pid, ()) if k in self.found
                and self.found[k] != ["host"] and self.own_channel(pid, k)]

    def loads_sdk(self, p: ProcRecord) -> bool:
        """A node/python process on a stdio channel whose own script loads an MCP SDK
        (`inspect.uses`, through `identify`): a server whatever its command says."""
        if not p.argv or not INTERPRETERS_RE.match(os.path.basename(split_title(p.argv)[0])):
            return False
        head = self.fds(p.pid)
        if head is None:
            # Its fds cannot be seen (the portable backend; a process we may not read):
            # an adopted one whose script loads an SDK is still listed, and the rules
            # call it `unknown` (its far end unseen), never leaked (docs/platforms.md).
            if not self.adopter(self.procs.get(p.ppid), p.ppid):
                return False
        elif evidence.stdin_kind(head.get(0)) not in CHANNEL_KINDS:
            return False
        return identify([(p.argv, p.cwd, p.exe, p.pid)], self.ident).mcp

    # ----- 1. candidates and how they were found --------------------------------------

    def find(self) -> None:
        procs, found, matchers = self.procs, self.found, self.matchers
        cmd_names = {m.cmd for m in matchers} | (
            {"npm"} if any(m.cmd == "npx" for m in matchers) else set())
        for p in procs.values():
            if not p.argv_read or not p.argv or p.pid in self.hosts:
                continue
            how: list[str] = []
            if matchers:
                toks = tokens(p.argv)
                bases = {base(t) for t in toks[:8]}
                if bases & cmd_names or os.path.basename(toks[0]) in SHELLS:
                    bases |= {base(t) for t in toks}
                    hits = [m for m in matchers if m.matches(toks, bases)]
                    if hits:
                        self.matched[p.pid] = hits
                        how.append("config")
            if p.ppid in self.hosts and (runner_of(p.argv) or is_guard(p.argv)):
                how.append("host")
            if looks_like_mcp(p.argv):
                how.append("guess")
            elif not how and self.loads_sdk(p):
                how.append("sdk")  # no MCP word in its command: what its script imports says
            if how:
                found[p.pid] = how
        # By evidence: adopted processes whose channel lost its client side. Never init
        # itself, and never one of our own ancestors (the shell that runs us, adopted).
        ours, cur = set(), procs.get(os.getppid())
        while cur is not None and cur.pid not in ours:
            ours.add(cur.pid)
            cur = procs.get(cur.ppid)
        for p in procs.values():
            if p.pid in self.hosts or p.pid <= 1 or p.pid in ours \
                    or not self.adopter(procs.get(p.ppid), p.ppid):
                continue
            _, ch, _ = self.channels(p.pid)
            if evidence.client_side_gone(ch) and not self.is_client(p.pid):
                found.setdefault(p.pid, []).insert(0, "evidence")
        for pid, start in self.remembered:  # an edited entry's old copy is still its
            rec = procs.get(pid)
            if rec is not None and rec.start == start and pid not in self.hosts \
                    and pid not in ours and pid not in found:
                found[pid] = ["remembered"]
        for pid in [pid for pid in found if pid in ours or (self.kids.get(pid) and (
                self.is_client(pid) or self.launched(pid)))]:
            del found[pid]  # a client of its own children is a host, never a server
            served = self.clients.get(pid, [])
            self.clients[pid] = served + [k for k in self.launched(pid) if k not in served]
            for k in self.clients[pid]:
                if k not in found and k not in self.hosts:
                    found[k] = ["host"]  # ...and the children it serves are its servers
        self.find_copies()

    def find_copies(self) -> None:
        """Another copy of a found server under the same host, started with other
        arguments (its config entry was edited: the old copy no longer matches it), is
        a server too (`host`): the host holds its channel's client side, and it runs
        the same program (`_program_key`)."""
        asked: dict[int, list[int]] = {}
        for pid in list(self.found):
            rec = self.procs.get(pid)
            if rec is None or rec.ppid <= 1 or rec.ppid in self.found \
                    or self.adopter(self.procs.get(rec.ppid), rec.ppid):
                continue
            if rec.ppid not in asked:
                known = rec.ppid in self.clients
                self.is_client(rec.ppid)
                # asked here only: a launcher's role is not changed by the question
                asked[rec.ppid] = (self.clients.get if known else self.clients.pop)(
                    rec.ppid, [])
            key = _program_key(rec.argv)
            for k in asked[rec.ppid]:
                krec = self.procs.get(k)
                if k not in self.found and k not in self.hosts and krec is not None \
                        and _program_key(krec.argv) == key:
                    self.found[k] = ["host"]

    # ----- 2. each candidate with the wrappers above it; the outermost is the root ----

    def group(self) -> None:
        for pid in self.found:
            cur = self.procs[pid]
            for _ in range(64):
                par = self.procs.get(cur.ppid)
                if par is None or not self.is_wrapper(par, cur):
                    break
                cur = par
            self.roots.add(cur.pid)

    def is_wrapper(self, parent: ProcRecord, child: ProcRecord) -> bool:
        if parent.pid <= 1 or parent.pid in self.hosts or self.clients.get(parent.pid) \
                or self.adopter(parent, parent.pid):
            return False  # pid 1, an init or a host is never part of a server's tree
        if parent.pid in self.found:  # one server's wrapper, unless it launched this
            return not self.own_channel(parent.pid, child.pid)  # one on its own channel
        pargv = parent.argv
        b = os.path.basename(pargv[0]) if pargv else ""
        if not (b in RUNNERS or is_guard(pargv) or INTERPRETERS_RE.match(b)
                or (b in SHELLS and "-c" in pargv[1:3]) or runner_of(pargv)):
            return False
        # A wrapper passes its own stdin through; a client (an inspector, a test
        # harness) gives the server a fresh pipe. Same fd 0 = same conversation, when
        # fd 0 is one: a host on /dev/null and its `mcp` SDK server (fd 0 diverted to
        # /dev/null) share no conversation.
        mine = (self.fds(parent.pid) or {}).get(0)
        theirs = (self.fds(child.pid) or {}).get(0)
        return bool(mine and theirs and mine.kind in CHANNEL_KINDS
                    and mine.channel == theirs.channel)

    def tree(self, root: int) -> list[int]:
        """root and its descendants, not descending into another server's root."""
        out, stack = [root], [root]
        while stack:
            for c in self.kids.get(stack.pop(), ()):
                if c in self.roots:
                    continue
                out.append(c)
                stack.append(c)
        return out

    # ----- 3. one Server per root -------------------------------------------------------

    def servers(self, users: set[int] | None) -> list[Server]:
        out: list[Server] = []
        for r in self.roots:
            uid = table.owner(r)
            if users is not None and uid not in users:
                continue
            s = self.server(self.procs[r], self.tree(r))
            s.uid, s.user = uid, table.username(uid)
            out.append(s)
        rules.settle(out, self.judge)
        out.sort(key=lambda s: (not s.leaked, -s.rss_bytes, s.pid))
        return out

    def comm_of(self, pid: int) -> str | None:
        rec = self.procs.get(pid)
        return rec.comm if rec is not None else None

    def judge(self, s: Server, leaked: frozenset[int]) -> None:
        """`rules.judge` for one tree, given the members of the trees judged leaked:
        its evidence, the far ends' holders, and what they add to each channel."""
        skip = {m.ident.pid for m in s.members}
        base = self._details.setdefault(s.pid, [c.detail for c in s.channels])
        v = rules.judge(s.parent.get("role") == "adopter", s.channels,
                        lambda c: self.peers.far_holders(c, skip), self.comm_of,
                        sees_far_ends=table.CHANNEL_DETAIL, leaked_elsewhere=leaked - skip)
        s.writers, s.readers = [], []
        for c, detail in zip(s.channels, base, strict=True):
            note = v.notes.get(c.fd)
            c.detail = f"{detail}; {note}" if detail and note else note or detail
            for w in v.far.get(c.fd, ()):
                (s.writers if c.side == "in" else s.readers).append(
                    {"pid": w, "name": self.comm_of(w), "fd": c.fd})
        s.evidence = list(v.evidence)
        cfg_hosts = {c["host"] for c in s.config if c["host"]}
        if s.leaked and s.host is None and cfg_hosts \
                and not (cfg_hosts & set(self.running_hosts)):
            s.evidence.append(HOST_GONE)

    def server(self, root: ProcRecord, member_pids: list[int]) -> Server:
        procs, hosts, peers = self.procs, self.hosts, self.peers
        members = [procs[m] for m in member_pids if m in procs]
        ticks = table.clock_ticks()
        how = sorted({h for m in member_pids for h in self.found.get(m, ())},
                     key=("evidence", "config", "host", "remembered", "sdk", "guess").index)
        what = identify([(m.argv, m.cwd, m.exe, m.pid) for m in members
                         if not is_guard(m.argv)], self.ident)
        cfg = {(x.host, x.name, x.path): x for m in member_pids
               for x in self.matched.get(m, ())}
        for x in self.matchers:
            if x.matches_package(what):
                cfg.setdefault((x.host, x.name, x.path), x)
        if cfg and "config" not in how:
            how.append("config")
        if cfg and "remembered" in how:
            how.remove("remembered")  # it matches an entry now: no memory needed
        if what.mcp and "sdk" not in how:
            how.append("sdk")
        elif what.package:
            how.append("package")
        # Which live host is it under (any ancestor)?
        host = None
        a = procs.get(root.ppid)
        for _ in range(64):
            if a is None:
                break
            if a.pid in hosts:
                host = hosts[a.pid]
                break
            a = procs.get(a.ppid)
        stdin_kind, chans, private = self.channels(root.pid)
        par = procs.get(root.ppid)
        role = "launcher"
        if root.ppid in hosts or self.clients.get(root.ppid):
            role = "host"
        elif self.adopter(par, root.ppid):
            if par is not None and classify_host(par.argv, par.comm):
                role = "host"  # in a container, pid 1 may be the host itself
            elif chans and evidence.holds_peer(root.ppid, chans, peers,
                                               self.all_fds(root.ppid) or {}):
                role = "launcher"
            else:
                role = "adopter"
        parent: Parent = {"pid": root.ppid, "name": par.comm if par else None, "role": role,
                          "host": hosts.get(root.ppid)}
        argv = root.argv
        shown = split_title(argv)  # `npm exec X` padded with spaces by a rewritten title
        for m in members:
            inner = guarded_argv(m.argv)
            if inner:
                shown = inner
                break
        return Server(
            ident=root.ident, uid=None, user="?",
            age_seconds=table.age_seconds(root, procs.now),
            command=argv, shown=shown, found_by=how,
            config=[{"host": h, "name": n, "path": pth} for (h, n, pth) in cfg],
            host=host, parent=parent, channels=chans, private_channels=private,
            stdin_kind=stdin_kind, evidence=[],  # `judge` fills it in
            members=[Member(m, m.cpu_ticks / ticks) for m in members],
            what=what, exact=self.exact(root, members),
        )

    def exact(self, root: ProcRecord, members: list[ProcRecord]) -> dict[str, str]:
        """The config entries the tree runs exactly as written: key -> fingerprint."""
        argvs = [m.argv for m in members]
        env: list[dict[str, str] | None] = []  # the root's, read once if an entry sets any

        def environ() -> dict[str, str] | None:
            if not env:
                env.append(table.environ(root.pid))
            return env[0]

        return {m.key: m.fingerprint for m in self.matchers
                if m.exactly(argvs, root.cwd, environ() if m.env else None)}
