'use strict';
// Arming: the triggers of tether() set once per process, by the first tether() call or
// by the preload (register.cjs), whichever comes first; a later call joins.
//
// Guarantees:
// - One tether per process, whichever copy of the package armed it (a preload resolved
//   from one folder, the server's import from another): the state hangs on a global
//   symbol, and every copy finds it there.
// - The order of arming: the process's environment is marked for its descendants and the
//   last resort is set (any other exit SIGTERMs them on the way out); then the stdio
//   watch, the signals, the host watch; then what already happened before the call (the
//   streams' state, a host that died first) starts the shutdown on the next tick, so a
//   tether(server) on the line after this call still joins in time to be closed first.

const descendants = require('../terminate/descendants.cjs');
const { say } = require('../output/log.cjs');
const { processClock } = require('../platform/platform.cjs');
const { shutdownOnce, DEFAULT_TIMEOUT_MS } = require('./shutdown.cjs');
const { watchStdio, pastTrigger } = require('./stdio.cjs');
const { watchSignals } = require('./signals.cjs');
const { watchHost } = require('./host-watch.cjs');

const CURRENT = Symbol.for('mcp-tether.current');

/** This process's tether state, or undefined before it is armed. */
function armed() {
  return globalThis[CURRENT];
}

/** Descendants marked now, and ended on any exit the shutdown does not run. */
function lastResort(state) {
  descendants.mark();
  descendants.unsupported();
  // The last resort when the process ends by another path (the server's own
  // process.exit, an uncaught exception): its descendants get SIGTERM on the way out.
  process.on('exit', () => { if (!state.ended) descendants.onExit(); });
}

/** What tether() returns: `shutdown`, the watched `host` (a copy), `hostWhy`, `preloaded`. */
function handleOf(shutdown, preloaded, watch) {
  const { host, hostWhy } = watch;
  return {
    shutdown,
    preloaded,
    get host() { return host && { pid: host.pid, start: host.start, argv: host.argv.slice() }; },
    hostWhy,
  };
}

/** A listener added after its event waits forever: a client that closed stdin during an
 * `await` before this call (or a host that started us with stdin at EOF) has come and
 * gone. The streams keep their state, so it is read once, here. */
function catchUp(stdin, adopted, shutdown) {
  const past = pastTrigger(stdin) || (adopted ? 'host-gone' : null);
  if (!past) return;
  say('info', `${past} came before tether() was called` + (adopted && past === 'host-gone'
    ? ' (the group the host left this process in has lost its leader, and the parent ' +
      'now is outside it: adopted)' : ''));
  process.nextTick(() => shutdown(past, 0));
}

/** Arm the triggers once for this process (tether()'s first call, or the preload). */
function arm(options, { preloaded = false } = {}) {
  const state = {
    servers: [],
    hooks: [],
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    exit: options.exit || ((code) => process.exit(code)),
    running: null,
    handle: null,
    cleanups: [],
    preloaded,
    joined: false,
    armedAt: null,
  };
  globalThis[CURRENT] = state;
  lastResort(state);
  // From now on every process it starts with the default environment carries the mark:
  // the instant says which of its descendants came before (the shutdown record's
  // `armed`, so that a reader can name why one of them was out of reach).
  state.armedAt = processClock();
  const shutdown = shutdownOnce(state);
  const stdin = options.stdin || process.stdin;
  watchStdio(stdin, shutdown);
  watchSignals(options.signals, state, shutdown);
  const watch = watchHost(options, shutdown, state.cleanups);
  state.handle = handleOf(shutdown, preloaded, watch);
  catchUp(stdin, watch.adopted, shutdown);
  return state;
}

/** A tether() call joins the armed state: its server is closed and its hooks run at the
 * shutdown (in the order of the calls). */
function join(state, { server, hooks, timeoutMs, options }) {
  if (state.preloaded && !state.joined) {
    // The first tether() after the preload (mcp-tether/register) brings what only the
    // server's code knows: its deadline and, in tests, its exit.
    state.joined = true;
    state.timeoutMs = timeoutMs;
    if (options.exit) state.exit = options.exit;
  }
  if (server != null) state.servers.push(server);
  state.hooks.push(...hooks);
}

/** The preload's entry (register.cjs): arm before any of the server's code runs. */
function preload() {
  return armed() || arm({}, { preloaded: true });
}

module.exports = { arm, armed, join, preload, DEFAULT_TIMEOUT_MS };
