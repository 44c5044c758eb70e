'use strict';
// A server's process tree, recorded by identity (lib/process/identity.cjs), and the
// signals sent to it.
//
// Guarantees:
// - A recorded member whose pid now has another start time is gone, never signalled; one
//   that cannot be read is kept as `unknown` and never signalled either.
// - The record only grows while the tree lives: a member seen once stays known after its
//   parent exits, so a helper that left the group (setsid) and was reparented to init is
//   still found, and its own children with it. A process that forks and loses its parent
//   between two looks (a double-fork inside one poll) is not seen: without a subreaper
//   (Node cannot be one) that gap is the limit of this walk.
// - A look reads `/proc/<pid>/task/<tid>/children` of the known members (a few small
//   reads, whatever else runs on the machine); where there are no children lists (a
//   kernel without them; macOS's ps) it reads the whole table once (one ps run).
//   `full()` always reads every process, so group members whose parent is gone are
//   found too (and those that carry the tree's mark: lib/process/marked.cjs), and prunes
//   the members from that same reading.
// - The group is signalled with kill(-pgid) only while a process of that group is a
//   recorded member, and its members are recorded only while that holds or its leader (the
//   server, pid = pgid) is gone or still itself: a pgid whose leader pid is now another
//   process is never taken (the number could be a new group's). Each member outside the
//   group is re-read right before its signal.
// - `leave(left)` takes processes out of the tree for good (lib/process/leave.cjs: what
//   the server detached for its user): from then on they are never recorded nor signalled,
//   nor is what they fork, nor the group while one of them is in it (its members are
//   then signalled one by one).
// - Without a process reader (Windows) only the group is signalled.

const { PROCS: procs } = require('../platform/platform.cjs');
const { groupEmpty, signalGroup, signalIdent, SUPPORTED } = require('./identity.cjs');
const { markedNewcomers } = require('./marked.cjs');

class Tree {
  /** `root`: `{pid, start}` of the process whose descendants are the tree (not itself a
   * member unless `includeRoot`); `pgid`: the server's group. */
  constructor(root, { pgid = null, includeRoot = false, leader = null, mark = null } = {}) {
    this.root = root;
    this.pgid = pgid;
    // `NAME=token`: a process started after the root whose environment carries this token
    // in NAME (a comma-separated list) descends from the tree, even if its parent is gone.
    this.mark = mark;
    this.leader = leader; // {pid, start} of the group's leader (pid === pgid), if known
    this.members = new Map(); // pid -> {pid, start, pgid, sid}
    this.left = new Map(); // pid -> what lib/process/leave.cjs decided: out of the tree for good
    if (includeRoot && root) this.members.set(root.pid, { ...root });
  }

  /** Take `left` (Map pid -> {pid, start, pgid, why, ...}) out of the tree for good. */
  leave(left) {
    for (const [pid, v] of left) {
      this.left.set(pid, v);
      const m = this.members.get(pid);
      if (m && m.start === v.start) this.members.delete(pid);
    }
  }

  /** `st` was left, or a left process forked it since (it goes with its parent). */
  _isLeft(st) {
    if (this.left.size === 0) return false;
    const v = this.left.get(st.pid);
    if (v && v.start === st.start) return true;
    const parent = this.left.get(st.ppid);
    if (!parent) return false;
    const now = procs.stat(parent.pid);
    if (!now || now.start !== parent.start) return false; // reparented: its parent is gone
    this.left.set(st.pid, { pid: st.pid, start: st.start, pgid: st.pgid, sid: st.sid, why: 'under',
      detail: `${parent.pid} (its parent)`, command: null });
    return true;
  }

  /** Whether a left process is in the server's group: then no kill(-pgid) is sent. */
  _groupShared() {
    return [...this.left.values()].some((v) => v.pgid === this.pgid);
  }

  _add(st) {
    if (this._isLeft(st)) return false;
    const known = this.members.get(st.pid);
    if (known && known.start === st.start) {
      known.pgid = st.pgid;
      return false;
    }
    this.members.set(st.pid, { pid: st.pid, start: st.start, pgid: st.pgid, sid: st.sid });
    return true;
  }

  /** Drop members that are gone; return the live ones (unknowns count as live). `snap`:
   * a whole-table reading (Map pid -> record) to judge them by, instead of one read each. */
  _prune(snap = null) {
    const live = [];
    for (const [pid, m] of this.members) {
      const st = snap ? (snap.get(pid) || null) : procs.stat(pid);
      if (st === null || (st && st.start !== m.start)) {
        this.members.delete(pid);
      } else {
        if (st) m.pgid = st.pgid;
        live.push(m);
      }
    }
    return live;
  }

  /** Where a walk starts: the root if it is still itself, and every live member (a pid
   * reused by a stranger is pruned first, so a stranger's children are never taken). */
  _starts(snap = null) {
    const live = this._prune(snap);
    const starts = live.map((m) => m.pid);
    const root = this.root && (snap ? snap.get(this.root.pid) : procs.stat(this.root.pid));
    if (root && root.start === this.root.start) starts.push(this.root.pid);
    return { live, starts };
  }

  /** A cheap look: the children of the root and of every known member. */
  look() {
    if (!SUPPORTED) return [];
    if (procs.childrenFilesMissing()) return this.full();
    const queue = this._starts().starts;
    const seen = new Set();
    while (queue.length) {
      const pid = queue.shift();
      if (seen.has(pid)) continue;
      seen.add(pid);
      for (const child of procs.children(pid)) {
        const st = procs.stat(child);
        if (st && st.ppid === pid && !this._isLeft(st)) {
          this._add(st);
          queue.push(child);
        }
      }
    }
    if (procs.childrenFilesMissing()) return this.full();
    return this._prune();
  }

  /** A whole-table look: descendants by ppid from the root and the live members, and
   * every process of the server's group while a member still holds that group. */
  full() {
    if (!SUPPORTED) return [];
    const all = procs.table();
    const snap = new Map(all.map((st) => [st.pid, st]));
    const { live, starts } = this._starts(snap);
    const groupHeld = this.pgid !== null && (live.some((m) => m.pgid === this.pgid) ||
      this._leaderKept(snap));
    const kids = new Map();
    for (const st of all) {
      if (!kids.has(st.ppid)) kids.set(st.ppid, []);
      kids.get(st.ppid).push(st);
      if (groupHeld && st.pgid === this.pgid) this._add(st);
    }
    if (this.mark && this.root) {
      for (const st of markedNewcomers(this.mark, this.root, all, snap, this.members)) this._add(st);
    }
    const queue = [...starts, ...[...this.members.keys()].filter((p) => !starts.includes(p))];
    const seen = new Set();
    while (queue.length) {
      const pid = queue.shift();
      if (seen.has(pid)) continue;
      seen.add(pid);
      for (const st of kids.get(pid) || []) {
        if (this._isLeft(st)) continue;
        this._add(st);
        queue.push(st.pid);
      }
    }
    return this._prune(snap);
  }

  /** The group's number is still ours: its leader lives as itself or is gone, not
   * replaced (a new group of that number needs a new process of that pid). */
  _leaderKept(snap) {
    if (!this.leader) return false;
    const st = snap.get(this.leader.pid) || null;
    return st === null || st.start === this.leader.start;
  }

  /** True when no process holds the server's group (one kill(-pgid, 0)): what a look of
   * the known members cannot see, a group member orphaned between two looks. */
  groupEmpty() {
    return groupEmpty(this.pgid);
  }

  /** SIGTERM/SIGKILL the group (while a member holds it) and each member outside it.
   * `known`: only the members already recorded (each re-read first), without a new
   * whole-table look: for a caller that made one an instant ago. Returns how many
   * signals were sent. */
  signal(sig, { known = false } = {}) {
    const live = !SUPPORTED ? [] : known ? this._prune() : this.full();
    let sent = 0;
    const groupHeld = !SUPPORTED || live.some((m) => m.pgid === this.pgid);
    const shared = this._groupShared(); // a left process in it: members one by one
    if (this.pgid !== null && groupHeld && !shared && signalGroup(this.pgid, sig)) sent += 1;
    for (const m of live) {
      if ((m.pgid !== this.pgid || shared) && signalIdent(m, sig)) sent += 1;
    }
    return sent;
  }
}

module.exports = { Tree };
