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
//   bunx, uvx, cmd /c), identified by pid and start time (lib/host.cjs); and the death of
//   any launcher in between (the host saw its child exit: it will not talk to us again).
// - One shutdown, run once, bounded by one deadline (`timeoutMs`, 1000 by default): the
//   server's own close() first (the SDK closes its transport, `onclose` runs), then each
//   hook in order; every step gets an equal share of the time left. A step that throws
//   or outlives its share is reported in one stderr line and the next step still runs.
// - Then the process's descendants (lib/descendants.cjs: found down the ppid chain, never
//   by group, each identity-checked before SIGTERM and SIGKILL, within what is left of
//   the host's 2 s window), then process.exit: 0 for EOF, a dead pipe or the host's
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

const hostlib = require('./lib/host.cjs');
const descendants = require('./lib/descendants.cjs');
const report = require('./lib/report.cjs');
const { say } = require('./lib/log.cjs'); // stderr only, MCP_TETHER_LOG's level

const DEFAULT_TIMEOUT_MS = 1000;
// 200 ms: a host's death is seen within a fifth of a second plus one /proc read, well
// inside the 1 s a robust server gets; one small read per poll costs next to nothing.
const HOST_POLL_MS = 200;
const SIGNALS = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };
const DEAD_PIPE = new Set(['EPIPE', 'EIO', 'ECONNRESET', 'ENOTCONN', 'ERR_STREAM_DESTROYED']);

function oneLine(err) {
  const text = err && err.stack ? String(err.stack).split('\n')[0]
    : err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.replace(/\s+/g, ' ').slice(0, 300);
}

function looksLikeOptions(x) {
  return x !== null && typeof x === 'object' && typeof x.close !== 'function' &&
    ['onShutdown', 'timeoutMs', 'watchHost', 'signals', 'exit', 'stdin'].some((k) => k in x);
}

// One tether per process, whichever copy of the package armed it (a preload resolved from
// one folder, the server's import from another): a later call joins the first.
const CURRENT = Symbol.for('mcp-tether.current');

/**
 * Tie this process's life to its MCP client. Returns a handle with `shutdown(reason)`,
 * `host` (the watched ancestor, or null) and `hostWhy` (why none is watched).
 */
function tether(server, options) {
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
  const state = globalThis[CURRENT] || arm(options);
  if (state.preloaded && !state.joined) {
    // The first tether() after the preload (mcp-tether/register) brings what only the
    // server's code knows: its deadline and, in tests, its exit.
    state.joined = true;
    state.timeoutMs = timeoutMs;
    if (options.exit) state.exit = options.exit;
  }
  if (server != null) state.servers.push(server);
  state.hooks.push(...hooks);
  return state.handle;
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
  };
  globalThis[CURRENT] = state;
  descendants.mark();
  descendants.unsupported();
  // The last resort when the process ends by another path (the server's own
  // process.exit, an uncaught exception): its descendants get SIGTERM on the way out.
  process.on('exit', () => { if (!state.ended) descendants.onExit(); });

  // The listeners stay for the life of the process: an error on a pipe during the
  // shutdown lands in them (and shutdown() is run-once) instead of becoming uncaught.
  function on(emitter, event, fn) {
    emitter.on(event, fn);
  }

  function shutdown(reason = 'manual', code = 0) {
    if (state.running) return state.running;
    for (const undo of state.cleanups.splice(0)) undo(); // the host watch's timer
    state.running = run(reason, code);
    return state.running;
  }

  async function run(reason, code) {
    const t0 = Date.now();
    const timeoutMs = state.timeoutMs;
    const deadline = t0 + timeoutMs;
    say('info', `shutting down (${reason}); exit status ${code}`);
    // Servers, then hooks, read as the run goes: a tether(server) that joins after the
    // shutdown started (it began on attach, at a first tether({ onShutdown })) still runs.
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
    // Last, the server's own children: the hooks may still have needed them.
    const children = await descendants.endDescendants(Date.now() - t0);
    state.ended = true;
    report.write({ reason, status: code, children });
    state.exit(code);
  }

  const stdin = options.stdin || process.stdin;
  on(stdin, 'end', () => shutdown('stdin-end', 0));
  on(stdin, 'close', () => shutdown('stdin-close', 0));
  on(stdin, 'error', (err) => shutdown(`stdin-error:${err && err.code}`, 0));
  on(process.stdout, 'error', (err) => {
    say('debug', `stdout: ${oneLine(err)}`);
    shutdown(`stdout-error:${err && err.code}`, 0);
  });
  on(process.stderr, 'error', (err) => {
    if (err && DEAD_PIPE.has(err.code)) shutdown(`stderr-error:${err.code}`, 0);
  });
  for (const name of options.signals || Object.keys(SIGNALS)) {
    const n = SIGNALS[name] ?? require('node:os').constants.signals[name];
    if (!n) throw new RangeError(`mcp-tether: unknown signal ${name}`);
    process.on(name, () => {
      if (state.running) {
        say('warning', `${name} again during shutdown: exiting now`);
        state.exit(128 + n);
        return;
      }
      shutdown(`signal:${name}`, 128 + n);
    });
  }

  let host = null;
  let hostWhy = 'off (watchHost: false)';
  let adopted = false;
  if (options.watchHost !== false) {
    adopted = hostlib.adoptedEarly() === true;
    const found = hostlib.findHost();
    host = found.host;
    hostWhy = found.why || '';
    if (host) {
      // The launchers in between are watched too: when one of them is gone, the host has
      // seen its child exit and will never talk to this process again (a wrapper that
      // died of a signal it did not pass on, `sh -c` killed alone).
      const watched = [host, ...found.chain].map((p) => ({ p, alive: hostlib.watcher(p) }));
      const timer = setInterval(() => {
        for (const w of watched) {
          // undefined: cannot tell now; never a reason to shut down.
          if (w.alive() === false) {
            shutdown(w.p === host ? 'host-gone' : 'launcher-gone', 0);
            return;
          }
        }
      }, options.hostPollMs ?? HOST_POLL_MS);
      timer.unref();
      state.cleanups.push(() => clearInterval(timer));
      say('debug', `watching host pid ${host.pid} (${host.argv.join(' ').trim().slice(0, 80)}), ` +
        `start ${host.start}, and ${found.chain.length} launcher(s) in between`);
    } else {
      say('debug', `no host watch: ${hostWhy}`);
    }
  }
  state.handle = {
    shutdown,
    preloaded,
    get host() { return host && { pid: host.pid, start: host.start, argv: host.argv.slice() }; },
    hostWhy,
  };
  // A listener added after its event waits forever: a client that closed stdin during
  // an `await` before this call (or a host that started us with stdin at EOF) has come
  // and gone. The streams keep their state, so it is read once, here. The shutdown
  // starts on the next tick, before any I/O: a tether(server) on the line after this
  // call still joins in time to be closed first.
  const past = pastTrigger(stdin) || (adopted ? 'host-gone' : null);
  if (past) {
    say('info', `${past} came before tether() was called` + (adopted && past === 'host-gone'
      ? ' (the group the host left this process in has lost its leader, and the parent ' +
        'now is outside it: adopted)' : ''));
    process.nextTick(() => shutdown(past, 0));
  }
  return state;
}

/** The reason the live listeners would have given for what already happened to the
 * streams, or null. Order as the events come: an error, then `end`, then `close`. */
function pastTrigger(stdin) {
  if (stdin.errored) return `stdin-error:${stdin.errored.code}`;
  if (stdin.readableEnded) return 'stdin-end';
  if (stdin.destroyed || stdin.closed) return 'stdin-close';
  const out = process.stdout;
  if (out.errored) return `stdout-error:${out.errored.code}`;
  // Destroyed or ended without an error: the next write fails with these codes.
  if (out.destroyed) return 'stdout-error:ERR_STREAM_DESTROYED';
  if (out.writableEnded) return 'stdout-error:ERR_STREAM_WRITE_AFTER_END';
  const err = process.stderr.errored;
  if (err && DEAD_PIPE.has(err.code)) return `stderr-error:${err.code}`;
  return null;
}

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

module.exports = { tether, isLauncher: hostlib.isLauncher, findHost: hostlib.findHost };
// The preload's entry (register.cjs): arm before any of the server's code runs.
module.exports._arm = () => globalThis[CURRENT] || arm({}, { preloaded: true });
module.exports.default = tether;
