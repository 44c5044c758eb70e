'use strict';
// The server's own descendants, ended last: what tether() does after server.close() and
// the hooks, and what it does when the process exits by any other path.
//
// Guarantees:
// - The descendants are found by walking the process table from this process down the
//   ppid chain (lib/process/tree.cjs), never by process group: a server started without a session
//   of its own shares its host's group. A child that called setsid is still a child, and
//   is found with its own children.
// - Each is (pid, start time), re-read right before each signal; one that cannot be read
//   is never signalled. The ladder is the host client's (lib/terminate/ladder.cjs) from its SIGTERM
//   rung: SIGTERM, `CHILD_TERM_GRACE_MS`, SIGKILL, `CHILD_KILL_WAIT_MS`, each cut to what
//   is left of the host's window, as the Python helper does (src/mcp_tether/tether/
//   children.py).
// - A descendant whose parent exited before shutdown (a double fork: reparented to init)
//   is not linked to this process any more. Node cannot make itself a subreaper, so it is
//   found only while it still carries this tree's mark in its environment
//   (MCP_TETHER_TREE, set in process.env at arming, inherited by anything spawned after
//   with the default environment), read from /proc/<pid>/environ on Linux, `ps -E` on
//   macOS (this user's processes).
// - What the server detached on purpose for its user is left running and named, one
//   stderr line each (lib/process/leave.cjs: a child kept out with `outsideTether`, a terminal
//   multiplexer's server, a daemon a live process outside the tree uses), with what runs
//   under it; it is decided before the first signal, again for what the mark finds.
// - `onExit()` is the last resort when the process exits by any other path
//   (process.exit in the server's own code, an uncaught exception): the same walk and a
//   SIGTERM, synchronously, with no wait (an `exit` listener cannot wait).
// - Wherever there is a process reader (lib/platform/platform.cjs `PROCS`: /proc on Linux, ps on
//   macOS). Elsewhere (Windows) one stderr line says, once, that descendants are not
//   ended, and nothing is signalled.

const { Tree } = require('../process/tree.cjs');
const { identify, signalIdent, SUPPORTED } = require('../process/identity.cjs');
const { endTree, POLL_FIRST_MS } = require('./ladder.cjs');
const { say } = require('../output/log.cjs');
const { NAME } = require('../platform/platform.cjs');
const { TREE: MARK, addMark } = require('../process/mark.cjs');
const leave = require('../process/leave.cjs');
const { PROCS: procs } = require('../platform/platform.cjs');

// The same numbers as the Python helper (tether/children.py): the host's 2 s window
// (the SDKs' TERM grace) holds the server's close, the hooks and this ladder.
const HOST_WINDOW_MS = 2000;
const CHILD_TERM_GRACE_MS = 500;
const CHILD_KILL_WAIT_MS = 500;
const MIN_RUNG_MS = 50; // even with no window left, SIGTERM gets this long before SIGKILL

let warned = false;
let markValue = null;

function unsupported() {
  if (SUPPORTED || warned) return !SUPPORTED;
  warned = true;
  say('warning', `cannot list this process's descendants on ${NAME}: ` +
    'its child processes are not ended at shutdown (run it behind `mcp-tether run`)');
  return true;
}

/** Mark this process's environment so that descendants spawned from now on (with the
 * default environment) can be told ours after they leave the ppid chain. */
function mark() {
  if (!SUPPORTED || markValue) return;
  const me = identify(process.pid);
  if (!me) return;
  markValue = `${me.pid}:${me.start}`;
  process.env[MARK] = addMark(process.env[MARK], markValue);
}

function tree() {
  return new Tree(identify(process.pid), { pgid: null, mark: markValue ? `${MARK}=${markValue}` : null });
}

/** Leave what the server detached for its user among `t`'s members (this process is the
 * root and the server), and name each newly left one on stderr. */
function leaveUsers(t) {
  if (t.members.size === 0) return;
  const me = procs.stat(process.pid);
  const before = new Set(t.left.keys());
  t.leave(leave.decide([...t.members.values()], { root: process.pid, serverSid: me ? me.sid : null }));
  for (const [pid, v] of t.left) if (!before.has(pid)) say('warning', leave.line(v));
}

/**
 * End every live descendant within what is left of the host's window (`elapsedMs`
 * already spent since the trigger). Resolves `{ found, ended_by, survivors }`.
 */
async function endDescendants(elapsedMs = 0) {
  if (unsupported()) return { found: 0, ended_by: 'unknown', survivors: [] };
  const t = tree();
  // The children by their links first (a few small reads) and their SIGTERM at once;
  // the whole-table look (the tree's mark: what left the chain) runs while they exit.
  t.look();
  leaveUsers(t);
  const sent = new Set([...t.members.values()].map((m) => `${m.pid}:${m.start}`));
  t.signal('SIGTERM', { known: true });
  t.full();
  leaveUsers(t);
  const late = [...t.members.values()].filter((m) => !sent.has(`${m.pid}:${m.start}`));
  for (const m of late) signalIdent(m, 'SIGTERM');
  const total = sent.size + late.length;
  if (total === 0) return { found: 0, ended_by: 'none-found', survivors: [], left: leftOf(t) };
  const left = Math.max(0, HOST_WINDOW_MS - elapsedMs);
  const termGraceMs = Math.min(CHILD_TERM_GRACE_MS, Math.max(MIN_RUNG_MS, left / 2));
  const killWaitMs = Math.min(CHILD_KILL_WAIT_MS, Math.max(MIN_RUNG_MS, left - termGraceMs));
  const { rungs, survivors } = await endTree(t, { fromSigterm: true, termGraceMs, killWaitMs,
    sigtermSent: true, pollMinMs: POLL_FIRST_MS });
  const last = rungs[rungs.length - 1];
  const endedBy = survivors.length ? 'none' : last.action;
  say(survivors.length ? 'warning' : 'info', `${total} descendant process(es): ` +
    (survivors.length ? `${survivors.length} still alive after SIGKILL ${JSON.stringify(survivors)}`
      : `ended on ${last.action === 'sigterm' ? 'SIGTERM' : 'SIGKILL'}`));
  return { found: total, ended_by: endedBy, survivors, left: leftOf(t) };
}

/** What was left, for the shutdown report: `[{pid, start, why}]`. */
function leftOf(t) {
  return [...t.left.values()].map(({ pid, start, why }) => ({ pid, start, why }));
}

/** Synchronous last resort from an `exit` listener: SIGTERM each live descendant. */
function onExit() {
  if (!SUPPORTED) return 0;
  try {
    const t = tree();
    if (t.full().length === 0) return 0;
    leaveUsers(t);
    return t.signal('SIGTERM');
  } catch {
    return 0; // the process is exiting: nothing here may throw
  }
}

module.exports = { endDescendants, onExit, mark, unsupported, HOST_WINDOW_MS };
