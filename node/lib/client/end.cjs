'use strict';
// How the transport (client.cjs) ends what it started: close() and the 2.x Client's
// `_dispose()` both come here.
//
// Guarantees:
// - stdin is closed first; writes the server never read do not hold it open (it is
//   destroyed, not ended): the ladder starts at once. The watchdog's lifeline is closed
//   with it.
// - With no supervisor, the spec's ladder runs here on the whole tree (lib/terminate/ladder.cjs:
//   the group, members outside it by identity, and the child by its handle).
// - Behind a supervisor, the supervisor runs the ladder and exits once the tree is gone;
//   one still there after its own worst case plus SAFETY_MARGIN_MS is SIGKILLed with the
//   tree it leads, each process identity-checked right before the signal.
// - What the server detached on purpose for its user (lib/process/leave.cjs) is left and named,
//   here as behind a supervisor (which decides it itself), also when a stuck supervisor's
//   tree is SIGKILLed.
// - `endChild` resolves once the tree is gone and the child's stdio is closed: a piped
//   stderr nobody reads is destroyed after STREAM_DRAIN_MS instead of holding 'close'.

const { Tree } = require('../process/tree.cjs');
const { stdioTargets } = require('../process/stdio.cjs');
const { endTree, waitEmpty, Nudge, KILL_WAIT_MS } = require('../terminate/ladder.cjs');
const { say } = require('../output/log.cjs');
const leave = require('../process/leave.cjs');

// Beyond the supervisor's own worst case before it is no longer trusted.
const SAFETY_MARGIN_MS = 1000;
// The 2.x SDK's _dispose(): SIGTERM first, 1 s, then SIGKILL.
const DISPOSE_TERM_MS = 1000;
// Once the tree is gone, how long its stdout and stderr get to deliver what is left.
const STREAM_DRAIN_MS = 500;

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref());
// A ref'd timer: close() is being awaited, so the loop must stay alive until it settles
// (an unref'd one lets Node end with "unsettled top-level await", status 13).
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function exited(p) {
  return p.exitCode !== null || p.signalCode !== null;
}

/** Resolve true once `p` has exited, false after `ms`. */
function waitExit(p, ms) {
  if (exited(p)) return Promise.resolve(true);
  return Promise.race([new Promise((resolve) => p.once('exit', () => resolve(true))),
    delay(ms).then(() => exited(p))]);
}

function closeStdin(child) {
  const stdin = child.stdin;
  try {
    // A server that does not read its stdin leaves our writes queued: end() would wait
    // for them to flush before closing the pipe, and the server (or the guard, which
    // watches for the hang-up) would never see EOF. What it never read is dropped.
    if (stdin && stdin.writableLength > 0) stdin.destroy();
    else stdin?.end();
  } catch { /* ignore, as the SDK does */ }
  try { child.stdio[3]?.destroy(); } catch { /* the watchdog sees EOF either way */ }
}

/** Take out of `tree` what its server (`server`, whose session is its pid) detached for
 * its user, named on stderr; this process is the root (a supervisor is never left). */
function leaveUsers(tree, server) {
  tree.full();
  const members = [...tree.members.values()].filter((m) => m.pid === server.pid ||
    m.pid !== tree.root.pid);
  tree.leave(leave.decide(members, { root: process.pid, serverSid: server.pid,
    known: [server], protocol: stdioTargets(server.pid) }));
  for (const v of tree.left.values()) say('warning', leave.line(v));
}

/** No supervisor: the ladder on the server's tree, from here. */
async function ladderHere(child, { ident, graceMs, termMs, signalFirst }) {
  const tree = new Tree(ident, { pgid: child.pid, includeRoot: true, leader: ident });
  if (ident) leaveUsers(tree, ident);
  const nudge = new Nudge();
  child.once('exit', () => nudge.poke());
  await endTree(tree, { graceMs, termGraceMs: termMs,
    fromSigterm: signalFirst, busy: () => !exited(child), nudge,
    // Our unreaped child: its pid is still its own (and the only handle off Linux).
    direct: (sig) => { if (!exited(child)) child.kill(sig); } });
}

/** Behind a supervisor: wait for it (it runs the ladder); SIGKILL it and its tree if stuck. */
async function awaitSupervisor(child, { kind, ident, graceMs, termMs, signalFirst }) {
  if (signalFirst && !exited(child)) child.kill('SIGTERM'); // our unreaped child
  const budget = (signalFirst ? 0 : graceMs) + termMs + KILL_WAIT_MS + SAFETY_MARGIN_MS;
  if (await waitExit(child, budget)) return;
  // The supervisor is stuck (stopped, traced, a bug): SIGKILL it and its tree, but for
  // what its server detached for its user. The server is the oldest session leader under
  // the supervisor (started in a session of its own; the guard's own processes are not).
  const tree = new Tree(ident, { includeRoot: true });
  tree.full();
  const server = [...tree.members.values()].filter((m) => m.pid !== ident.pid && m.sid === m.pid)
    .sort((a, b) => Number(a.start) - Number(b.start) || a.pid - b.pid)[0];
  if (server) leaveUsers(tree, server);
  const stuck = [...tree.members.values()].map(({ pid, start }) => ({ pid, start }));
  tree.signal('SIGKILL');
  if (!exited(child)) child.kill('SIGKILL');
  const gone = await waitEmpty(tree, KILL_WAIT_MS, () => !exited(child));
  say('warning', `the ${kind} supervisor ${child.pid} did not exit in time; SIGKILLed ` +
    `${JSON.stringify(stuck)}${gone ? '' : ' and some survived'}`);
}

/**
 * End `child` (started as `kind`, identified as `ident`) and its whole tree: stdin first,
 * or SIGTERM first when `signalFirst` (the 2.x Client's dispose: DISPOSE_TERM_MS before
 * SIGKILL). Resolves when the tree is gone and the child's stdio closed.
 */
async function endChild(child, { kind, ident, graceMs, termGraceMs, signalFirst }) {
  const closed = new Promise((resolve) => child.once('close', resolve));
  closeStdin(child);
  const how = { kind, ident, graceMs, termMs: signalFirst ? DISPOSE_TERM_MS : termGraceMs,
    signalFirst };
  if (kind === 'none') await ladderHere(child, how);
  else await awaitSupervisor(child, how);
  // The tree is gone. 'close' (and onclose) waits for every stdio stream to end: stdout
  // is read to its EOF here, but a stderr the host asked to pipe and never reads holds
  // its data in the pipe forever. Past a short drain, the streams of a dead tree are
  // destroyed (what the host already has in `stderr` stays readable there).
  if (!(await Promise.race([closed.then(() => true), sleep(STREAM_DRAIN_MS).then(() => false)]))) {
    for (const s of [child.stdout, child.stderr, child.stdio[3]]) s?.destroy();
    await Promise.race([closed, sleep(KILL_WAIT_MS)]);
  }
}

module.exports = { endChild, exited };
