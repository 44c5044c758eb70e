'use strict';
// mcp-tether for Node: one call that makes an MCP stdio server exit with its client.
//
//   await server.connect(new StdioServerTransport());
//   tether(server, { onShutdown: async (reason) => { await db.close(); } });
//
// Guarantees:
// - Triggers: stdin `end`, `close` and `error` (a socket half-close ends as `end`); an
//   error on stdout (any: it is the wire) or EPIPE/EIO/ECONNRESET on stderr, so a write
//   to a vanished client shuts down instead of becoming an uncaught exception that a
//   handler logs to a dead stderr, forever; SIGTERM, SIGINT, SIGHUP; the host's death,
//   watched on the first ancestor that is not a launcher (npx / npm exec, sh -c, pnpm dlx,
//   bunx, uvx, cmd /c), identified by pid and start time (lib/process/host.cjs); and the death of
//   any launcher in between (the host saw its child exit: it will not talk to us again).
// - One shutdown, run once, bounded by one deadline (`timeoutMs`, 1000 by default): the
//   server's own close() first (the SDK closes its transport, `onclose` runs), then each
//   hook in order; every step gets an equal share of the time left. A step that throws
//   or outlives its share is reported in one stderr line and the next step still runs.
// - Then the process's descendants (lib/terminate/descendants.cjs: found down the ppid chain, never
//   by group, each identity-checked before SIGTERM and SIGKILL, within what is left of
//   the host's 2 s window), but for what the server detached for its user (lib/process/leave.cjs:
//   `outsideTether(env)` children, a tmux session, a daemon another live process uses),
//   left running and named on stderr; then process.exit: 0 for EOF, a dead pipe or the host's
//   death; 128+N for signal N. A second signal during the shutdown exits at once with
//   128+N. Any other exit of the process SIGTERMs its descendants on the way out.
// - Armed once per process, whichever copy of the package arms it: the preload
//   (register.cjs, before any of the server's code) or the first call; a later call joins.
// - Nothing is ever written to stdout. Diagnostics are single synchronous writes to fd 2
//   that ignore a dead stderr; MCP_TETHER_LOG=debug|info|warning|quiet (default warning).
// - No timer or listener of ours keeps the event loop alive: the host watch is unref'd.
// - Safe to call late (after any `await` at start-up): what already happened to the
//   streams is read on attach (stdin ended, closed, destroyed or errored; stdout
//   destroyed, ended or errored; stderr dead) and shuts down at once with the reason the
//   listener would have given. What tether() cannot see after the fact: a signal that
//   came before it (Node's default: SIGTERM, SIGINT and SIGHUP end the process at once,
//   no close, no hooks; a handler of the server's own got it instead). A host that died
//   before it is seen where the evidence allows (Linux: this process left in the host's
//   process group, whose leader is gone, and adopted by a parent outside it); a server
//   in a group of its own cannot tell, and watches whoever adopted it. Hence the
//   placement: before any other `await` at start-up, or the preload.
//
// The roles live in lib/tether/: arming (arm.cjs), the stdio watch (stdio.cjs), the
// signals (signals.cjs), the host watch (host-watch.cjs), the shutdown (shutdown.cjs);
// the descendants in lib/terminate/descendants.cjs, the host in lib/process/host.cjs, every platform
// decision in lib/platform/platform.cjs. This file checks the arguments and arms or joins.

const hostlib = require('./lib/process/host.cjs');
const { arm, armed, join, DEFAULT_TIMEOUT_MS } = require('./lib/tether/arm.cjs');
const { outsideTether } = require('./lib/process/mark.cjs');

function looksLikeOptions(x) {
  return x !== null && typeof x === 'object' && typeof x.close !== 'function' &&
    ['onShutdown', 'timeoutMs', 'watchHost', 'signals', 'exit', 'stdin'].some((k) => k in x);
}

/** `tether(server, options)` or `tether(options)`: `{ server, options, hooks, timeoutMs }`,
 * or a TypeError / RangeError that names what is wrong. */
function parseArguments(server, options) {
  if (options === undefined && looksLikeOptions(server)) {
    options = server;
    server = null;
  }
  options = options || {};
  const hooks = [].concat(options.onShutdown || []);
  for (const h of hooks) {
    if (typeof h !== 'function') throw new TypeError('mcp-tether: onShutdown must be a function or an array of functions');
  }
  if (server != null && typeof server.close !== 'function') {
    throw new TypeError('mcp-tether: tether(server) wants an object with close() (McpServer, Server, a transport) or null');
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!(Number.isFinite(timeoutMs) && timeoutMs >= 0)) {
    throw new RangeError(`mcp-tether: timeoutMs must be a non-negative number, got ${timeoutMs}`);
  }
  return { server, options, hooks, timeoutMs };
}

/**
 * Tie this process's life to its MCP client. Returns a handle with `shutdown(reason)`,
 * `host` (the watched ancestor, or null) and `hostWhy` (why none is watched).
 */
function tether(server, options) {
  const call = parseArguments(server, options);
  const state = armed() || arm(call.options);
  join(state, call);
  return state.handle;
}

module.exports = { tether, isLauncher: hostlib.isLauncher, findHost: hostlib.findHost,
  outsideTether };
module.exports.default = tether;
