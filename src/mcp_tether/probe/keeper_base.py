"""The keeper's plumbing: one poll step over every fd it watches, and reaping.

Signal handlers only record (the core's `SignalInbox`; its fd wakes the poll); the loop
in `_step` drains the client's events, its stderr and the runner's messages, and reaps
(`proc.reap`: the 128+N status in one place). The tree scan
(`_members`) lives here too. `keeper.py` runs the scenario on top of this.
"""

from __future__ import annotations

import json
import os
import signal
import time
from typing import TYPE_CHECKING

from mcp_tether.proc import ProcessId, cmdline, descendants, read_info, snapshot
from mcp_tether.proc.inbox import SignalInbox
from mcp_tether.proc.reap import exit_status, reap_children

if TYPE_CHECKING:
    from typing import Any

    from mcp_tether.probe.spec import Spec
    from mcp_tether.probe.verdict import Facts
    from mcp_tether.proc import ExitWaiter

STDERR_TAIL = 2000
SCAN_TICK = 0.25  # seconds between tree rescans while nothing happens


class Interrupted(Exception):
    pass


class KeeperBase:
    """State and plumbing shared by the keeper's phases (see keeper.py)."""

    spec: Spec
    me: int
    waiter: ExitWaiter
    facts: Facts
    server: ProcessId | None
    client_side: set[int]
    wire_keys: set[tuple[int, int]]  # the server's stdio ends as spawned (st_dev, st_ino)
    seen: set[ProcessId]
    status: int | None
    reaped: dict[int, int]
    stderr_tail: bytes
    in_r: int | None
    in_buf: bytes
    ctrl_r: int | None
    err_r: int | None
    ctrl_buf: bytes
    stop: bool
    stop_why: str
    cleanup_at: float
    _scan_at: float
    _scan_exits: int
    _scan_live: list[ProcessId]
    inbox: SignalInbox
    events: list[tuple[float, str, int | None, dict[str, Any]]]  # the result's timeline

    def _on_event(self, ev: dict[str, Any]) -> None:
        raise NotImplementedError

    def _ev(self, t: float, what: str, pid: int | None, **extra: Any) -> None:
        """Note one event of the timeline (monotonic instant, what, which process)."""
        self.events.append((t, what, pid, extra))

    # -- plumbing ---------------------------------------------------------------------
    def _setup_signals(self) -> None:
        # Handlers only record (the core's SignalInbox); `_step` acts on what it drained.
        self.inbox = SignalInbox((signal.SIGTERM, signal.SIGINT, signal.SIGCHLD))

    def _on_reap(self, pid: int, raw: int) -> None:
        self.reaped[pid] = exit_status(raw)
        if (
            self.server
            and pid == self.server.pid
            and self.status is None
            and time.monotonic() < self.cleanup_at
        ):
            self.status = self.reaped[pid]

    def _reap(self) -> None:
        for pid, raw in reap_children():
            self._on_reap(pid, raw)

    def _members(self, *, force: bool = True) -> list[ProcessId]:
        """Live processes of the server's tree: our descendants minus the client side.

        A full scan reads every /proc/<pid>/stat: its cost grows with the whole machine's
        process table, nine keepers at a time. Between triggers (force=False) the scan
        is done at most every SCAN_TICK, or at once after an exit (an exited member's
        children have just reparented to us), and walks only our own tree
        (`own_tree`) where the kernel lists children. A forced scan (confirming that
        the tree is gone, listing the survivors at a deadline) always reads all of /proc.
        """
        now = time.monotonic()
        exits = len(self.waiter.exited)
        if not force and exits == self._scan_exits and now - self._scan_at < SCAN_TICK:
            return self._scan_live
        self._scan_at, self._scan_exits = now, exits
        out = []
        tree = None if force else own_tree(self.me)
        for info in tree if tree is not None else descendants(self.me, snapshot()):
            if info.pid in self.client_side:
                continue
            ident = info.ident
            if ident not in self.seen:
                self.seen.add(ident)
                self.waiter.add(ident)
                self._ev(now, "seen", ident.pid, ppid=info.ppid,
                         cmd=" ".join(cmdline(ident.pid)))
            if ident not in self.waiter.exited:
                out.append(ident)
        # Without a subreaper, a member whose parent died is no descendant of ours any
        # more: still a member, by identity, until the waiter sees it exit.
        out += [i for i in self.seen if i not in self.waiter.exited and i not in out]
        self._scan_live = out
        return out

    def _stdio_holders(self, *, force: bool = True) -> list[ProcessId]:
        """Live members of the tree that hold the server's stdio ends as spawned (the
        core's open-file check, `proc.fds.holds`); only a sure "holds" counts."""
        if not self.wire_keys:
            return []
        from mcp_tether.proc.fds import holds

        return [p for p in self._members(force=force) if holds(p.pid, self.wire_keys)]

    def _step(self, timeout: float) -> None:
        """Wait for anything (exit, event, stderr, signal) for up to `timeout`; handle it."""
        if self.stop:
            raise Interrupted
        fds = [self.inbox.fileno()] + [
            fd for fd in (self.ctrl_r, self.err_r, self.in_r) if fd is not None
        ]
        self.waiter.wait(max(0.0, timeout), extra_fds=fds)
        if any(sig != signal.SIGCHLD for sig in self.inbox.drain()):
            self.stop = True
        self._drain_stderr()
        self._drain_ctrl()
        self._drain_runner()
        self._reap()
        if self.stop:
            raise Interrupted

    def _drain_stderr(self) -> None:
        if self.err_r is None:
            return
        try:
            while True:
                chunk = os.read(self.err_r, 65536)
                if not chunk:
                    os.close(self.err_r)
                    self.err_r = None
                    return
                self.stderr_tail = (self.stderr_tail + chunk)[-STDERR_TAIL:]
        except BlockingIOError:
            return

    def _drain_ctrl(self) -> None:
        while self.ctrl_r is not None:
            try:
                chunk = os.read(self.ctrl_r, 65536)
            except BlockingIOError:
                return
            if not chunk:  # the client is gone; a readable EOF would spin the poll
                os.close(self.ctrl_r)
                self.ctrl_r = None
                return
            self.ctrl_buf += chunk
            while b"\n" in self.ctrl_buf:
                line, self.ctrl_buf = self.ctrl_buf.split(b"\n", 1)
                try:
                    self._on_event(json.loads(line))
                except ValueError:
                    continue

    def _drain_runner(self) -> None:
        """Messages from the runner; EOF means it died (a SIGKILLed probe): stop."""
        while self.in_r is not None:
            try:
                chunk = os.read(self.in_r, 65536)
            except BlockingIOError:
                return
            if not chunk:
                os.close(self.in_r)
                self.in_r = None
                self.stop, self.stop_why = True, "the probe that ran this scenario died"
                return
            self.in_buf += chunk
            while b"\n" in self.in_buf:
                line, self.in_buf = self.in_buf.split(b"\n", 1)
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if msg.get("startup") is not None and self.spec.startup is None:
                    self.spec.startup = float(msg["startup"])




_CHILDREN: list[bool] = []  # cached: does this kernel have /proc/<pid>/task/<tid>/children?


def own_tree(root: int) -> list[Any] | None:
    """Live descendants of `root` (ProcInfo, parents first), read from each member's
    /proc/<pid>/task/*/children: the cost follows the tree, not the process table.

    None when the kernel has no such files (CONFIG_PROC_CHILDREN); the caller then
    scans /proc. The kernel's list is exact only for a frozen task: a child being born
    during the read may appear on the next read only. Callers therefore confirm "gone"
    and the final list of survivors with a full scan.
    """
    if not _CHILDREN:
        _CHILDREN.append(os.path.exists(f"/proc/{root}/task/{root}/children"))
    if not _CHILDREN[0]:
        return None
    out = []
    stack, seen = [root], {root}
    while stack:
        pid = stack.pop()
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue  # gone meanwhile
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                    kids = [int(k) for k in fh.read().split()]
            except (OSError, ValueError):
                continue  # the thread ended meanwhile
            for kid in kids:
                if kid in seen:
                    continue
                seen.add(kid)
                info = read_info(kid)
                if info is None or info.exited:
                    continue
                out.append(info)
                stack.append(kid)
    return out
