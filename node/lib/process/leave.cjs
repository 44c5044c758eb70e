'use strict';
// What a tree kill leaves: the processes a server detached on purpose for its user. One
// definition for tether(), the preload, the watchdog and the transport; the same as the
// Python package's (src/mcp_tether/proc/leave.py), read through the platform's process and
// endpoint readers (lib/platform/platform.cjs `PROCS`, `ENDPOINTS`).
//
// Guarantees:
// - A member is left, and named, for one of three reasons (`why`):
//   1. 'opted-out': its environment's MCP_TETHER_OUTSIDE names this tree (the token of
//      the root or of a member: the process that started it with `outsideTether(env)`).
//   2. 'terminal': it is detached (a session of its own that is neither the server's nor
//      the root's, and no controlling terminal), its parent is not a member (reparented
//      away), it holds pseudo-terminal masters and listens on a unix socket where a user
//      attaches (tmux, screen, dtach, abduco).
//   3. 'in-use': it is detached, and the far end of one of its pipes, or of a connection
//      it accepted (unix socket, TCP on this machine), is held by a live process that is
//      not a member, not the root and not one of the root's ancestors (the host, its
//      launchers), or by a member left for another reason. A channel any end of which the
//      root or an ancestor holds is never evidence (inherited stdio, the protocol channel).
//   And 'under': what runs under a left member, or in its detached session, goes with it.
// - A member holding the protocol channel (the root's stdin or stdout, or `protocol`) is
//   the server: never left as 'terminal' or 'in-use'.
// - Not detached means not left but by the opt-out: a `nohup`ed child, a shell on a
//   pseudo-terminal the server holds (node-pty, `script`), a setsid helper or a daemonized
//   grandchild with no user of its own all end with the tree.
// - Unknown is never an exemption: a member whose environment, terminal or fds cannot be
//   read ends (its membership was read; unreadable is not "detached for a user").

const { ENDPOINTS, PROCS: procs } = require('../platform/platform.cjs');
const mark = require('./mark.cjs');
const { shown } = require('../output/log.cjs');

const WHAT = { pipe: 'a pipe', unix: 'a unix socket', tcp: 'a TCP connection' };

function entry(st, why, detail = '') {
  const p = procs.readProcess(st.pid);
  return { pid: st.pid, start: st.start, pgid: st.pgid, sid: st.sid, why, detail,
    command: p && p.argv.join(' ') };
}

/** The root and its ancestors now, up to init: the host and its launchers. */
function ancestors(root) {
  const out = new Set();
  for (let pid = root; pid && !out.has(pid);) {
    out.add(pid);
    const st = procs.stat(pid);
    pid = st ? st.ppid : 0;
  }
  return out;
}

function terminalServer(st, ends, members) {
  if (members.has(st.ppid) || !ends.some((e) => e.kind === 'pty')) return null;
  const listen = ends.find((e) => e.kind === 'unix' && e.role === 'listen');
  return listen ? `pseudo-terminal masters; listening at ${listen.name || listen.near}` : null;
}

/** Rules 2 and 3 on the detached members. */
function detachedRules(detached, members, left, root, protocol) {
  const read = ENDPOINTS.reader();
  const rootLinks = new Map(procs.fds(root) || []);
  const proto = new Set(protocol || [rootLinks.get(0), rootLinks.get(1)].filter(Boolean));
  const ends = new Map();
  for (const st of detached) {
    const got = read.endpoints(st.pid);
    if (got && !got.some((e) => proto.has(e.near))) ends.set(st.pid, got);
  }
  for (const st of detached) {
    const at = ends.has(st.pid) && terminalServer(st, ends.get(st.pid), members);
    if (at) left.set(st.pid, entry(st, 'terminal', at));
  }
  const held = new Set(rootLinks.values());
  const channels = detached.filter((st) => !left.has(st.pid)).flatMap((st) => (ends.get(st.pid) || [])
    .filter((e) => e.far && (e.kind === 'pipe' || e.role === 'accepted') && !held.has(e.near) &&
      !held.has(e.far)).map((e) => [st, e]));
  if (!channels.length) return;
  const holders = read.holders(new Set(channels.flatMap(([, e]) => [e.near, e.far])));
  const boundary = ancestors(root);
  for (let grew = true; grew;) { // a process used by one left for another reason is the user's too
    grew = false;
    for (const [st, e] of channels) {
      if (left.has(st.pid)) continue;
      const near = holders.get(e.near) || new Map();
      const far = holders.get(e.far) || new Map();
      if ([...near.keys(), ...far.keys()].some((p) => boundary.has(p))) continue;
      const other = e.role === 'r' ? 'w' : 'r';
      const users = [...far].filter(([p, how]) => p !== st.pid && (!members.has(p) || left.has(p)) &&
        (e.kind !== 'pipe' || how.includes(other))).map(([p]) => p).sort((a, b) => a - b);
      if (users.length) {
        const u = procs.readProcess(users[0]);
        const name = u && u.argv.length ? u.argv[0].split('/').pop() : '?';
        left.set(st.pid, entry(st, 'in-use', `${users[0]} (${name}) over ${WHAT[e.kind]}`));
        grew = true;
      }
    }
  }
}

/** Members under a left one, or in a detached session a left one is in, go with it. */
function spread(live, left, inside) {
  const sessions = new Map([...left.values()].filter((v) => !inside.includes(v.sid))
    .map((v) => [v.sid, v.pid]));
  for (let grew = true; grew;) {
    grew = false;
    for (const st of live) {
      if (left.has(st.pid)) continue;
      if (left.has(st.ppid)) left.set(st.pid, entry(st, 'under', `${st.ppid} (its parent)`));
      else if (sessions.has(st.sid)) left.set(st.pid, entry(st, 'under', `${sessions.get(st.sid)} (its session)`));
      else continue;
      grew = true;
      if (!inside.includes(st.sid) && !sessions.has(st.sid)) sessions.set(st.sid, st.pid);
    }
  }
}

/**
 * The members (`[{pid, start}]`) to leave, as a Map pid -> {pid, start, pgid, sid, why,
 * detail, command}. `root`: the pid of the process ending the tree; `serverSid`: the
 * server's session; `known`: identities met before (a server gone since) whose token may
 * name the tree; `protocol`: the server's stdio links, where the root's are not it.
 */
function decide(members, { root, serverSid, known = [], protocol = null }) {
  const left = new Map();
  if (!procs) return left;
  const live = members.map((m) => [m, procs.stat(m.pid)])
    .filter(([m, st]) => st && st.start === m.start).map(([, st]) => st);
  if (!live.length) return left;
  const me = procs.stat(root);
  const rootSid = me ? me.sid : null;
  const ours = new Set([...known.filter(Boolean), ...live, ...(me ? [me] : [])].map(mark.token));
  for (const st of live) {
    const env = procs.environ(st.pid);
    if (env !== null && mark.tokens(procs.envValue(env, mark.OUTSIDE)).some((t) => ours.has(t))) {
      left.set(st.pid, entry(st, 'opted-out'));
    }
  }
  const detached = live.filter((st) => !left.has(st.pid) && st.sid !== serverSid &&
    st.sid !== rootSid && st.tty === 0);
  if (detached.length && ENDPOINTS) {
    detachedRules(detached, new Map(live.map((st) => [st.pid, st])), left, root, protocol);
  }
  spread(live, left, [serverSid, rootSid]);
  return left;
}

/** Why `v` was left, in words (the detail is the server's text). */
function reason(v) {
  if (v.why === 'opted-out') return 'kept out of the tether on purpose (MCP_TETHER_OUTSIDE)';
  if (v.why === 'terminal') return `a terminal session a user can attach to (${v.detail})`;
  if (v.why === 'in-use') return `in use by ${v.detail}`;
  return `goes with ${v.detail}`;
}

/** One stderr line for `v`: pid, command, why (shown, not obeyed, on a terminal). */
function line(v) {
  return `left ${v.pid} (${shown(v.command || '?')}): ${shown(reason(v))}`;
}

module.exports = { decide, line, reason };
