'use strict';
// mcp-tether/client: the TypeScript SDK's StdioClientTransport, with a server that never
// outlives its host.
//
//   import { StdioClientTransport } from "mcp-tether/client";
//   // was: "@modelcontextprotocol/sdk/client/stdio.js" (1.x) or
//   //      "@modelcontextprotocol/client/stdio" (2.x)
//
// The same constructor options (command, args, env merged over getDefaultEnvironment(),
// stderr, cwd, maxBufferSize), methods (start, send, close), callbacks (onmessage,
// onerror, onclose) and getters (pid, stderr) as @modelcontextprotocol/sdk 1.32 and
// @modelcontextprotocol/client 2.4, message framing included (newline-delimited JSON; a
// line that is not JSON is skipped, as 2.x does). The 2.x Client's version probe on a
// disposable sibling works as on the SDK's class (the prototype owns `_dispose`).
//
// Guarantees:
// - The server runs behind a supervisor in a session of its own (detached), which ends the
//   server's whole tree when the host closes the transport or dies, SIGKILL included:
//   `mcp-tether run` (the Python guard: a subreaper, exact on every process shape) when
//   it is on PATH on Linux, else this package's Node watchdog (lib/terminate/watchdog.cjs: a
//   lifeline pipe from the host, a tree recorded by pid + start time, and a mark in the
//   server's environment that finds a daemonized descendant). Which one is said in one
//   stderr line at debug level (MCP_TETHER_LOG=debug); when `auto` falls back to the
//   watchdog, one warning line per host process says what it cannot follow (a daemon
//   that replaced its environment). `supervisor` forces one.
// - close() is the spec's ladder on the whole tree: end stdin, `graceMs` (2000), SIGTERM
//   to the group and to members that left it, `termGraceMs` (2000), SIGKILL; it resolves
//   when the supervisor has exited, which it does only once the last process of the tree
//   is gone, whatever the state of a piped stderr nobody reads. Writes the server never
//   read do not hold stdin open (it is destroyed, not ended): the ladder starts at once.
//   A supervisor still there after its own worst case is SIGKILLed with the tree it
//   leads, each process identity-checked right before the signal (lib/client/end.cjs).
// - `pid` is the supervisor's (the process this transport started), as in the Python
//   client; the server is its child.
// - A command that cannot start rejects start() (and calls onerror) with the error
//   Node's spawn gives (ENOENT / EACCES), before anything is spawned.
// - Nothing of ours is written to the server's stdin but the messages sent, or to stdout.
//
// The roles live in lib/client/: the ladder's options (options.cjs), what is started and
// behind which supervisor (launch.cjs), the child's events (wire.cjs), the framing
// (framing.cjs), stdin's back-pressure (drain.cjs), the end of the tree (end.cjs). This
// file is the SDK-shaped class that wires them.

const { spawn } = require('node:child_process');
const { PassThrough } = require('node:stream');
const { identify } = require('./lib/process/identity.cjs');
const { INHERITED_ENV_VARS: DEFAULT_INHERITED_ENV_VARS } = require('./lib/platform/platform.cjs');
const {
  getDefaultEnvironment, refusal, plan, announce, spawnOptions,
} = require('./lib/client/launch.cjs');
const { ReadBuffer } = require('./lib/client/framing.cjs');
const { endChild, exited } = require('./lib/client/end.cjs');
const { ladderTimes } = require('./lib/client/options.cjs');
const { wire } = require('./lib/client/wire.cjs');
const { drained } = require('./lib/client/drain.cjs');

/**
 * Client transport for stdio whose server's whole tree ends with the transport or with
 * the host (see the module comment).
 */
class StdioClientTransport {
  constructor(server) {
    this._serverParams = server;
    this._readBuffer = new ReadBuffer(server.maxBufferSize);
    this._stderrStream = null;
    ({ graceMs: this._graceMs, termGraceMs: this._termGraceMs } = ladderTimes(server));
    this._plan = null;
    this._ident = null;
    this._closing = null;
    if (server.stderr === 'pipe' || server.stderr === 'overlapped') {
      this._stderrStream = new PassThrough();
    }
  }

  /** Starts the server process (behind its supervisor) and prepares to communicate. */
  async start() {
    if (this._process) {
      throw new Error('StdioClientTransport already started! If using Client class, note that connect() calls start() automatically.');
    }
    const params = this._serverParams;
    const env = { ...getDefaultEnvironment(), ...params.env };
    const how = plan(params, this._graceMs, this._termGraceMs);
    return new Promise((resolve, reject) => {
      // The supervisor would start and then exit 127: fail as the SDK's spawn does.
      const refused = how.kind !== 'none' && refusal(params, env);
      if (refused) {
        reject(refused);
        this.onerror?.(refused);
        return;
      }
      this._plan = how;
      this._closing = null;
      announce(params.command, how);
      this._process = spawn(how.file, how.args, spawnOptions(how, params, env));
      const child = this._process;
      if (child.pid !== undefined) this._ident = identify(child.pid, { dead: true }) || null;
      this._wire(child, resolve, reject);
    });
  }

  /** The child's events and streams to this transport's callbacks. */
  _wire(child, resolve, reject) {
    wire(child, {
      resolve,
      reject,
      onError: (error) => this.onerror?.(error),
      onClose: () => {
        this._process = undefined;
        this.onclose?.();
      },
      onData: (chunk) => {
        try {
          this._readBuffer.append(chunk);
          this.processReadBuffer();
        } catch (error) {
          this.onerror?.(error);
          this.close().catch(() => {});
        }
      },
    }, this._stderrStream);
  }

  /** The server's stderr, if `stderr` was "pipe" or "overlapped" (a PassThrough that
   * exists before start(), as in the SDK). */
  get stderr() {
    if (this._stderrStream) return this._stderrStream;
    return this._process?.stderr ?? null;
  }

  /** The pid of the process this transport started: the supervisor (the server is its
   * child), or the server itself with `supervisor: "none"`. */
  get pid() {
    return this._process?.pid ?? null;
  }

  /** Which supervisor the server runs behind: "mcp-tether", "node" or "none" (null
   * before start()). */
  get supervisor() {
    return this._plan?.kind ?? null;
  }

  processReadBuffer() {
    for (;;) {
      try {
        const message = this._readBuffer.readMessage();
        if (message === null) break;
        this.onmessage?.(message);
      } catch (error) {
        this.onerror?.(error);
      }
    }
  }

  /** End stdin and let the ladder end the whole tree; resolves when it is gone (a second
   * call during the first waits for the same end). */
  async close() {
    if (this._process) {
      const child = this._process;
      this._process = undefined;
      this._closing = this._end(child, false);
    }
    if (this._closing) await this._closing;
    this._readBuffer.clear();
  }

  /** The 2.x Client's reaper for its version-probe sibling: signal first (SIGTERM, 1 s,
   * SIGKILL), awaiting the tree's end rather than the pipes'. Internal, as in the SDK. */
  async _dispose() {
    const child = this._process;
    this._process = undefined;
    if (child && !exited(child)) await this._end(child, true);
    for (const s of [child?.stdout, child?.stdin, child?.stderr, child?.stdio?.[3]]) {
      try { s?.destroy(); } catch { /* already gone */ }
    }
    this._readBuffer.clear();
  }

  _end(child, signalFirst) {
    return endChild(child, { kind: this._plan?.kind, ident: this._ident, graceMs: this._graceMs,
      termGraceMs: this._termGraceMs, signalFirst });
  }

  send(message) {
    return new Promise((resolve) => {
      const stdin = this._process?.stdin;
      if (!stdin) throw new Error('Not connected');
      const json = JSON.stringify(message) + '\n';
      if (stdin.write(json)) resolve();
      else drained(stdin).then(resolve);
    });
  }
}

module.exports = {
  StdioClientTransport, getDefaultEnvironment, DEFAULT_INHERITED_ENV_VARS, ReadBuffer,
};
module.exports.default = StdioClientTransport;
