'use strict';
// The shutdown of tether(): one run, in order, within one deadline, then the exit.
//
// Guarantees:
// - Run once: a second trigger (or `handle.shutdown()`) gets the same promise. It first
//   undoes the watches that poll (the host watch's timer).
// - One deadline (`timeoutMs`, DEFAULT_TIMEOUT_MS by default): each server's close() first
//   (the SDK closes its transport, `onclose` runs), then each onShutdown hook in order;
//   every step gets an equal share of the time left. A step that throws or outlives its
//   share is reported in one stderr line and the next step still runs. Servers and hooks
//   are read as the run goes: a tether(server) that joins after it started still runs.
// - Then the process's descendants (lib/terminate/descendants.cjs), within what is left of the
//   host's 2 s window; then the report line (lib/output/report.cjs, MCP_TETHER_SHUTDOWN_REPORT);
//   then `exit(code)`: 0 for EOF, a dead pipe or the host's death, 128+N for signal N.

const descendants = require('../terminate/descendants.cjs');
const report = require('../output/report.cjs');
const { say, oneLine } = require('../output/log.cjs');

const DEFAULT_TIMEOUT_MS = 1000;
const TIMED_OUT = Symbol('timed out');

/** Run fn; resolve null, {threw, error}, or TIMED_OUT after ms (never rejects). */
function bounded(fn, ms) {
  return new Promise((resolve) => {
    // A ref'd timer: a hook that awaits forever on nothing must still be cut off, not
    // let the event loop drain and the process end with whatever status it had.
    const timer = setTimeout(() => resolve(TIMED_OUT), ms);
    Promise.resolve()
      .then(fn)
      .then(() => resolve(null), (error) => resolve({ threw: true, error }))
      .finally(() => clearTimeout(timer));
  });
}

/** The servers' close(), then the hooks, each within its share of what is left. */
async function closeAndHooks(state, reason, deadline, timeoutMs) {
  let closed = 0;
  let hooked = 0;
  for (;;) {
    const left = state.servers.length - closed + state.hooks.length - hooked;
    if (left === 0) break;
    let step;
    if (closed < state.servers.length) {
      const s = state.servers[closed++];
      step = { name: 'server.close()', fn: () => s.close() };
    } else {
      const h = state.hooks[hooked++];
      step = { name: `onShutdown hook ${hooked}${h.name ? ` (${h.name})` : ''}`, fn: () => h(reason) };
    }
    const share = Math.max(0, (deadline - Date.now()) / left);
    const out = await bounded(step.fn, share);
    if (out === TIMED_OUT) {
      say('warning', `${step.name} did not finish within its ${Math.round(share)} ms ` +
        `of the ${timeoutMs} ms shutdown deadline (${reason}): cut off`);
    } else if (out && out.threw) {
      say('warning', `${step.name} threw during shutdown (${reason}): ${oneLine(out.error)}`);
    }
  }
}

async function run(state, reason, code) {
  const t0 = Date.now();
  const timeoutMs = state.timeoutMs;
  say('info', `shutting down (${reason}); exit status ${code}`);
  await closeAndHooks(state, reason, t0 + timeoutMs, timeoutMs);
  // Last, the server's own children: the hooks may still have needed them.
  const children = await descendants.endDescendants(Date.now() - t0);
  state.ended = true;
  report.write({ reason, status: code, children,
    armed: { by: state.preloaded ? 'preload' : 'tether()', at: state.armedAt } });
  state.exit(code);
}

/** The run-once `shutdown(reason = 'manual', code = 0)` of `state`. */
function shutdownOnce(state) {
  return function shutdown(reason = 'manual', code = 0) {
    if (state.running) return state.running;
    for (const undo of state.cleanups.splice(0)) undo(); // the host watch's timer
    state.running = run(state, reason, code);
    return state.running;
  };
}

module.exports = { shutdownOnce, DEFAULT_TIMEOUT_MS };
