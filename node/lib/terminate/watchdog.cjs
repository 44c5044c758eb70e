'use strict';
// The Node watchdog: what stands between a host and its server when `mcp-tether run` (the
// Python guard) is not on PATH. Started by the transport (client.cjs), never by hand:
//
//   node watchdog.cjs GRACE_MS TERM_GRACE_MS [--unset NAME]... -- COMMAND ARGS...
//                                                                    (fd 3: the lifeline)
//
// `--unset NAME` removes a variable the transport added for the watchdog alone (under
// Electron, ELECTRON_RUN_AS_NODE=1 makes process.execPath a Node) before the server starts.
//
// Guarantees:
// - The server inherits fds 0-2 (zero copy: the watchdog never reads or writes a protocol
//   byte) and runs in a session and group of its own (pgid = its pid). fd 3, the
//   lifeline, is a pipe from the host that nobody writes: the host keeps the only write
//   end, so its EOF means "the host closed the transport or died", SIGKILL included.
// - Then the ladder on the whole tree (lib/terminate/ladder.cjs): GRACE_MS for the tree to exit by
//   itself (the server saw stdin EOF at the same moment), SIGTERM to the group and to
//   each recorded member outside it, TERM_GRACE_MS, SIGKILL. SIGTERM, SIGINT or SIGHUP
//   sent to the watchdog start the same ladder at its SIGTERM rung.
// - The tree is recorded by (pid, start time) from the start and every LOOK_MS
//   (lib/process/tree.cjs), so a helper that called setsid and lost its parent is still known.
//   The server's environment carries the tree's mark (MCP_TETHER_TREE, this watchdog's
//   pid and start time): a process that daemonized between two looks (setsid and a
//   double fork at start-up) is found by it when the ladder starts, and one born while
//   the ladder runs (a close() that raced start()) before the tree is called empty
//   (lib/terminate/ladder.cjs). One that also replaced its environment escapes this watchdog (the
//   guard, a subreaper, does not).
// - What the server detached on purpose for its user (lib/process/leave.cjs) is taken out of the
//   tree when the ladder starts: never signalled nor waited for, named on stderr.
// - The watchdog exits only when the tree is empty, with the server's status (128+N after
//   signal N; 127 / 126 when the command cannot start). When the server exits by itself,
//   what is left of its tree gets the ladder from SIGTERM, unless a process of the tree
//   holds the stdio (a launcher handed it over and left): that one is guarded instead
//   until it goes or the lifeline ends.

const { spawn } = require('node:child_process');
const net = require('node:net');
const os = require('node:os');
const { Tree } = require('../process/tree.cjs');
const { identify } = require('../process/identity.cjs');
const { stdioHolders } = require('../process/stdio.cjs');
const { endTree, waitEmpty, Nudge } = require('./ladder.cjs');
const { say } = require('../output/log.cjs');
const { TREE: MARK, addMark } = require('../process/mark.cjs');
const leave = require('../process/leave.cjs');

// 250 ms: a setsid helper is recorded within a quarter second of its birth; each look
// reads only the children files of the tree's own processes.
const LOOK_MS = 250;
const WHO = 'mcp-tether watchdog';

function usage() {
  say('error', 'usage: watchdog.cjs GRACE_MS TERM_GRACE_MS [--unset NAME]... -- COMMAND ARGS...', WHO);
  process.exit(2);
}

/** `{ graceMs, termGraceMs, unset, command, args }` from argv, or the usage line and 2. */
function parse(argv) {
  const sep = argv.indexOf('--');
  if (sep < 2 || argv.length < sep + 2) usage();
  const [graceMs, termGraceMs] = argv.slice(0, 2).map(Number);
  if (![graceMs, termGraceMs].every((n) => Number.isFinite(n) && n >= 0)) usage();
  const opts = argv.slice(2, sep);
  const unset = [];
  for (let i = 0; i < opts.length; i += 2) {
    if (opts[i] !== '--unset' || !opts[i + 1]) usage();
    unset.push(opts[i + 1]);
  }
  const [command, ...args] = argv.slice(sep + 1);
  return { graceMs, termGraceMs, unset, command, args };
}

/** Start the server in a session of its own, its environment marked; its tree recorded
 * from now on. Returns `{ child, tree }`, or null when spawn failed at once (its 'error'
 * event follows and exits 127 / 126). */
function startServer(command, args) {
  // The tree's mark: a process that daemonized (setsid and a double fork, its parent gone
  // before any look saw it) still carries it in its environment, and is found by it.
  const me = identify(process.pid);
  const mark = me ? `${me.pid}:${me.start}` : null;
  const env = mark ? { ...process.env, [MARK]: addMark(process.env[MARK], mark) } : process.env;
  const child = spawn(command, args, { stdio: 'inherit', detached: true, env });
  child.on('error', (err) => {
    say('error', `cannot start ${command}: ${err.message}`, WHO);
    process.exit(err.code === 'EACCES' ? 126 : 127);
  });
  if (child.pid === undefined) return null; // the 'error' event follows
  // Our unreaped child: the pid is still its own, a zombie included (a launcher such as
  // `sh -c 'server & exit 0'` may have exited before this line runs).
  const leader = identify(child.pid, { dead: true });
  const tree = new Tree(me, { pgid: child.pid, leader: leader || null,
    mark: mark && `${MARK}=${mark}` });
  tree.look();
  return { child, tree };
}

/** `end(reason, fromSigterm)` when the lifeline on fd 3 ends: the host closed or died. */
function watchLifeline(end) {
  let lifeline;
  try {
    lifeline = new net.Socket({ fd: 3, readable: true, writable: false });
  } catch (err) {
    say('warning', `no lifeline on fd 3 (${err.code || err.message}): the host's death ` +
      'will not be seen', WHO);
    return;
  }
  lifeline.on('data', () => {}); // nobody writes; reading is how EOF is seen
  lifeline.on('end', () => end('lifeline EOF (host closed or died)', false));
  lifeline.on('close', () => end('lifeline closed (host closed or died)', false));
  lifeline.on('error', (err) => end(`lifeline error ${err.code}`, false));
}

/** Guard the tree until it is empty, then exit with the server's status. */
function supervise({ child, tree }, { graceMs, termGraceMs }) {
  let status = null; // the server's exit status, once reaped
  let ending = null;
  const nudge = new Nudge(); // the server's exit cuts a ladder's poll short

  function finish() {
    say('debug', `tree gone; exit ${status ?? 0}`, WHO);
    process.exit(status ?? 0);
  }

  function end(reason, fromSigterm) {
    if (ending) return;
    ending = (async () => {
      say('debug', `${reason}: ending the tree of ${child.pid}`, WHO);
      tree.full(); // a whole-table look, the mark included: record what left the chain
      tree.leave(leave.decide([...tree.members.values()], { root: process.pid,
        serverSid: child.pid, known: [tree.leader] }));
      for (const v of tree.left.values()) say('warning', leave.line(v), WHO);
      const { rungs, survivors } = await endTree(tree, {
        graceMs, termGraceMs, fromSigterm, busy: () => status === null, nudge,
      });
      const last = rungs[rungs.length - 1];
      say(survivors.length ? 'warning' : 'debug', `${reason}: ${last.action} ${last.outcome} ` +
        `at ${last.ms} ms${survivors.length ? `; survivors ${JSON.stringify(survivors)}` : ''}`, WHO);
      finish();
    })();
  }

  child.on('exit', (code, signal) => {
    status = code ?? 128 + (os.constants.signals[signal] || 0);
    nudge.poke();
    if (ending) return;
    // A launcher that handed the stdio to the real server and left: guard whoever holds
    // it until it goes or the lifeline ends. Else the server is gone: end what is left
    // of its tree from SIGTERM, as the guard does.
    const holders = stdioHolders(tree);
    if (holders.length === 0) {
      end(`server exited (${status})`, true);
      return;
    }
    say('debug', `server exited (${status}); guarding ${holders.length} process(es) on its stdio`, WHO);
    // No hurry here (the lifeline still works): one look per LOOK_MS, not per 50 ms.
    waitEmpty(tree, Infinity, () => false, nudge, LOOK_MS).then(() => { if (!ending) finish(); });
  });

  const look = setInterval(() => tree.look(), LOOK_MS);
  look.unref(); // the child, the lifeline or the ladder keep the loop alive, not this

  watchLifeline(end);
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => end(`got ${sig}`, true));
}

function main(argv) {
  const opts = parse(argv);
  for (const name of opts.unset) delete process.env[name];
  const started = startServer(opts.command, opts.args);
  if (started) supervise(started, opts);
}

main(process.argv.slice(2));
