'use strict';
// The shutdown ladder on a whole tree, as the spec and both SDKs define it for stdio:
// close the server's stdin, wait, SIGTERM, wait, SIGKILL (MCP spec "Lifecycle:
// Shutdown, stdio"; the TypeScript SDK's StdioClientTransport.close() and the Python
// SDK's stdio_client both wait 2 s at each step). The same numbers as the Python side
// (src/mcp_tether/ladder.py).
//
// Guarantees:
// - Each rung signals the whole tree (lib/process/tree.cjs: the group, and each recorded member
//   outside it, by identity), not one pid; the caller has already closed stdin.
// - A rung ends early the moment the tree is empty (a tree with a mark: none carries it,
//   in two whole-table looks in a row); `endTree` resolves only when it is
//   empty, or when even SIGKILL was not seen to work within `killWaitMs` (a process in
//   D state): then `survivors` names them.
// - Every rung is returned: action, ms since the start, outcome.

const GRACE_MS = 2000; // to exit by itself once stdin is closed
const TERM_GRACE_MS = 2000; // between SIGTERM and SIGKILL
const KILL_WAIT_MS = 5000; // to *see* SIGKILLed processes go
const POLL_MIN_MS = 5;
// A server's own children after its shutdown: a SIGTERMed child is usually gone within a
// millisecond or two, and the host waits on this; the first look comes that soon.
const POLL_FIRST_MS = 1;
const POLL_MAX_MS = 50;

/** A sleep that a known event (the direct child's exit) can cut short. */
class Nudge {
  constructor() {
    this._wakers = new Set();
  }

  sleep(ms) {
    return new Promise((resolve) => {
      const wake = () => { clearTimeout(timer); this._wakers.delete(wake); resolve(); };
      const timer = setTimeout(wake, ms);
      this._wakers.add(wake);
    });
  }

  poke() {
    for (const wake of [...this._wakers]) wake();
  }
}

/** No live member in two whole-table looks in a row, the tree's mark read in each. A
 * process that daemonized while the ladder ran (setsid and a double fork: in a group of
 * its own, its parent gone before any look saw it) is neither a child of a member nor in
 * the group, and only its mark finds it. One look is not enough: the table is listed,
 * then each process read, so a middle process that forks the daemon and exits between
 * the two is read as gone while its child is not listed; the second listing has it. */
function markedEmpty(tree) {
  return tree.full().length === 0 && tree.full().length === 0;
}

/**
 * Poll `tree.look()` until nothing lives or `ms` pass; true if the tree is empty. An
 * empty look also needs an empty group (one syscall), or else a whole-table look that
 * finds no live member in it (group members orphaned between two looks are recorded by
 * it); a tree with a mark needs `markedEmpty` whatever the group says. `busy()` is what
 * the tree cannot see (the direct child not yet reaped).
 */
async function waitEmpty(tree, ms, busy = () => false, nudge = new Nudge(), maxDelay = POLL_MAX_MS,
  minDelay = POLL_MIN_MS) {
  const end = Date.now() + ms;
  for (let delay = minDelay; ; delay = Math.min(delay * 2, maxDelay)) {
    // kill(-pgid, 0) also counts zombies not yet reaped by init: a whole-table look
    // decides then (it records live members the looks missed, and skips zombies).
    if (tree.look().length === 0 && !busy() &&
        (tree.mark ? markedEmpty(tree) : tree.groupEmpty() || tree.full().length === 0)) {
      return true;
    }
    const left = end - Date.now();
    if (left <= 0) return false;
    await nudge.sleep(Math.min(delay, left));
  }
}

/**
 * Climb the ladder on `tree` (stdin already closed). `busy()` answers whether something
 * the tree does not cover is still running (the direct child not yet reaped); `direct(sig)`
 * signals that child by its handle at each rung (where the tree cannot see processes).
 */
async function endTree(tree, {
  graceMs = GRACE_MS, termGraceMs = TERM_GRACE_MS, killWaitMs = KILL_WAIT_MS,
  fromSigterm = false, busy = () => false, nudge = new Nudge(), direct = () => {},
  sigtermSent = false, pollMinMs = POLL_MIN_MS,
} = {}) {
  const t0 = Date.now();
  const rungs = [];
  const rung = async (action, wait, sig) => {
    // `sigtermSent`: the caller sent the SIGTERM itself (to what it had just recorded).
    if (sig && !(sig === 'SIGTERM' && sigtermSent)) {
      tree.signal(sig);
      direct(sig);
    }
    const empty = await waitEmpty(tree, wait, busy, nudge, POLL_MAX_MS, pollMinMs);
    rungs.push({ action, ms: Date.now() - t0, outcome: empty ? 'exited' : 'timeout' });
    return empty;
  };
  if (!fromSigterm && await rung('close-stdin', graceMs)) return { rungs, survivors: [] };
  if (await rung('sigterm', termGraceMs, 'SIGTERM')) return { rungs, survivors: [] };
  if (await rung('sigkill', killWaitMs, 'SIGKILL')) return { rungs, survivors: [] };
  return { rungs, survivors: tree.full().map(({ pid, start }) => ({ pid, start })) };
}

module.exports = { endTree, waitEmpty, Nudge, GRACE_MS, TERM_GRACE_MS, KILL_WAIT_MS, POLL_FIRST_MS };
