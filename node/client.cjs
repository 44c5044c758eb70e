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
//   it is on PATH on Linux, else this package's Node watchdog (lib/watchdog.cjs: a
//   lifeline pipe from the host, a tree recorded by pid + start time, and a mark in the
//   server's environment that finds a daemonized descendant). Which one is said in one
//   stderr line at debug level (MCP_TETHER_LOG=debug); when `auto` falls back to the
//   watchdog, one warning line per host process says what it cannot follow (a daemon
//   that replaced its environment). `supervisor` forces one.
// - close() is the spec's ladder on the whole tree: end stdin, `graceMs` (2000), SIGTERM
//   to the group and to members that left it, `termGraceMs` (2000), SIGKILL; it resolves
//   when the supervisor has exited, which it does only once the last process of the tree
//   is gone, whatever the state of a piped stderr nobody reads. Writes the server never
//   read do not hold stdin open (it is destroyed, not ended): the ladder starts at once. A supervisor still there after its own worst case is SIGKILLed with the tree
//   it leads, each process identity-checked right before the signal.
// - `pid` is the supervisor's (the process this transport started), as in the Python
//   client; the server is its child.
// - A command that cannot start rejects start() (and calls onerror) with the error
//   Node's spawn gives (ENOENT / EACCES), before anything is spawned.
// - Nothing of ours is written to the server's stdin but the messages sent, or to stdout.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { PassThrough } = require('node:stream');
const { Tree, identify } = require('./lib/tree.cjs');
const { endTree, waitEmpty, Nudge, GRACE_MS, TERM_GRACE_MS, KILL_WAIT_MS } = require('./lib/ladder.cjs');
const { say } = require('./lib/log.cjs');

const WATCHDOG = path.join(__dirname, 'lib', 'watchdog.cjs');
const STDIO_DEFAULT_MAX_BUFFER_SIZE = 10 * 1024 * 1024;
// Beyond the supervisor's own worst case before it is no longer trusted.
const SAFETY_MARGIN_MS = 1000;
// The 2.x SDK's _dispose(): SIGTERM first, 1 s, then SIGKILL.
const DISPOSE_TERM_MS = 1000;
// Once the tree is gone, how long its stdout and stderr get to deliver what is left.
const STREAM_DRAIN_MS = 500;
const SUPERVISORS = ['auto', 'mcp-tether', 'node', 'none'];

const DEFAULT_INHERITED_ENV_VARS = process.platform === 'win32'
  ? ['APPDATA', 'COMSPEC', 'HOMEDRIVE', 'HOMEPATH', 'LOCALAPPDATA', 'PATH', 'PATHEXT',
    'PROCESSOR_ARCHITECTURE', 'PROGRAMDATA', 'PROGRAMFILES', 'PROGRAMFILES(X86)',
    'PROGRAMW6432', 'SYSTEMDRIVE', 'SYSTEMROOT', 'TEMP', 'USERNAME', 'USERPROFILE', 'WINDIR']
  : ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER']; // sudo's list, as in both SDKs

/** The environment a server gets when `env` is not given (the SDKs' rule). */
function getDefaultEnvironment() {
  const env = {};
  for (const key of DEFAULT_INHERITED_ENV_VARS) {
    const value = process.env[key];
    if (value === undefined || value.startsWith('()')) continue; // shell functions
    env[key] = value;
  }
  return env;
}

/** The file exec would run for `command`: PATH of `env`, relative paths from `cwd`.
 * Returns the path, or the errno name ('ENOENT', 'EACCES') exec would fail with. */
function resolveCommand(command, env, cwd) {
  const base = cwd || process.cwd();
  const candidates = command.includes('/') ? [command]
    : String((env && env.PATH) ?? process.env.PATH ?? '').split(path.delimiter)
      .filter(Boolean).map((dir) => path.join(dir, command));
  let first = null;
  for (const cand of candidates) {
    const full = path.resolve(base, cand);
    try {
      const st = fs.statSync(full);
      fs.accessSync(full, fs.constants.X_OK);
      if (!st.isDirectory()) return { file: full };
      first = first || 'EACCES';
    } catch (err) {
      if (err.code !== 'ENOENT' && err.code !== 'ENOTDIR') first = first || 'EACCES';
    }
  }
  return { error: first || 'ENOENT' };
}

/** The error Node's spawn emits for a command exec refuses. */
function spawnError(code, command, args) {
  const errno = code === 'EACCES' ? -13 : -2;
  const err = new Error(`spawn ${command} ${code}`);
  Object.assign(err, { errno, code, syscall: `spawn ${command}`, path: command, spawnargs: args });
  return err;
}

/** Which supervisor, and the argv that runs `command args` behind it. */
function plan(params, graceMs, termGraceMs) {
  const wanted = params.supervisor ?? 'auto';
  if (!SUPERVISORS.includes(wanted)) {
    throw new TypeError(`mcp-tether: supervisor must be one of ${SUPERVISORS.join(', ')}, got ${wanted}`);
  }
  const { command } = params;
  const args = params.args ?? [];
  let kind = wanted;
  let guard = null;
  if (wanted === 'auto' || wanted === 'mcp-tether') {
    const found = process.platform === 'win32' ? { error: 'ENOENT' }
      : resolveCommand('mcp-tether', process.env, undefined);
    guard = found.file || null;
    if (wanted === 'mcp-tether' && !guard) {
      throw new Error('mcp-tether: supervisor "mcp-tether" asked for, but no mcp-tether is on PATH');
    }
    if (wanted === 'auto') {
      kind = process.platform === 'win32' ? 'none'
        : guard && process.platform === 'linux' ? 'mcp-tether' : 'node';
    }
  }
  if (kind === 'mcp-tether') {
    return { kind, file: guard, args: ['run', '--grace', String(graceMs / 1000),
      '--term-grace', String(termGraceMs / 1000), '--', command, ...args] };
  }
  if (kind === 'node') {
    // Under Electron (VS Code, Cursor...) process.execPath is the app: the variable makes it
    // a plain Node for the watchdog, which unsets it again before the server starts.
    const electron = Boolean(process.versions.electron) && !('ELECTRON_RUN_AS_NODE' in (params.env || {}));
    return { kind, file: process.execPath, forced: wanted === 'node',
      addEnv: electron ? { ELECTRON_RUN_AS_NODE: '1' } : {},
      args: [WATCHDOG, String(graceMs), String(termGraceMs),
        ...(electron ? ['--unset', 'ELECTRON_RUN_AS_NODE'] : []), '--', command, ...args] };
  }
  return { kind: 'none', file: command, args };
}

let noticed = false;

/** `auto` fell back to the Node watchdog: said once per host process, on stderr. */
function fallbackNotice() {
  if (noticed) return;
  noticed = true;
  say('warning', 'no mcp-tether on PATH' + (process.platform === 'linux' ? '' : ` or not Linux (${process.platform})`) +
    ': servers run behind the Node watchdog, which cannot follow a process that daemonizes ' +
    'with a clean environment (the guard, `mcp-tether run`, can); supervisor: "node" ' +
    'silences this line');
}

function nonNegative(name, value, dflt) {
  const v = value ?? dflt;
  if (!(Number.isFinite(v) && v >= 0)) {
    throw new RangeError(`mcp-tether: ${name} must be a non-negative number of ms, got ${value}`);
  }
  return v;
}

/** Newline-delimited JSON-RPC, as the SDKs frame stdio. */
class ReadBuffer {
  constructor(maxBufferSize = STDIO_DEFAULT_MAX_BUFFER_SIZE) {
    this._max = maxBufferSize;
    this._buffer = undefined;
  }

  append(chunk) {
    if ((this._buffer?.length ?? 0) + chunk.length > this._max) {
      this.clear();
      throw new Error(`ReadBuffer exceeded maximum size of ${this._max} bytes`);
    }
    this._buffer = this._buffer ? Buffer.concat([this._buffer, chunk]) : chunk;
  }

  readMessage() {
    while (this._buffer) {
      const index = this._buffer.indexOf('\n');
      if (index === -1) return null;
      const line = this._buffer.toString('utf8', 0, index).replace(/\r$/, '');
      this._buffer = this._buffer.subarray(index + 1);
      let message;
      try {
        message = JSON.parse(line);
      } catch (err) {
        if (err instanceof SyntaxError) continue; // a stray log line on stdout (2.x)
        throw err;
      }
      if (message === null || typeof message !== 'object' || Array.isArray(message) ||
          message.jsonrpc !== '2.0') {
        throw new TypeError(`not a JSON-RPC 2.0 message: ${line.slice(0, 200)}`);
      }
      return message;
    }
    return null;
  }

  clear() {
    this._buffer = undefined;
  }
}

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

/**
 * Client transport for stdio whose server's whole tree ends with the transport or with
 * the host (see the module comment).
 */
class StdioClientTransport {
  constructor(server) {
    this._serverParams = server;
    this._readBuffer = new ReadBuffer(server.maxBufferSize);
    this._stderrStream = null;
    this._graceMs = nonNegative('graceMs', server.graceMs, GRACE_MS);
    this._termGraceMs = nonNegative('termGraceMs', server.termGraceMs, TERM_GRACE_MS);
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
      if (how.kind !== 'none') {
        // The supervisor would start and then exit 127: fail as the SDK's spawn does.
        const found = resolveCommand(params.command, env, params.cwd);
        if (found.error && (!params.cwd || fs.existsSync(params.cwd))) {
          const error = spawnError(found.error, params.command, [params.command, ...(params.args ?? [])]);
          reject(error);
          this.onerror?.(error);
          return;
        }
      }
      this._plan = how;
      this._closing = null;
      if (how.kind === 'node' && !how.forced) fallbackNotice();
      say('debug', how.kind === 'mcp-tether' ? `starting ${params.command} behind mcp-tether run (${how.file})`
        : how.kind === 'node' ? `starting ${params.command} behind the Node watchdog` +
          (how.forced ? '' : ' (no mcp-tether on PATH)')
          : `starting ${params.command} with no supervisor (the host's death is not covered)`);
      const stdio = ['pipe', 'pipe', params.stderr ?? 'inherit'];
      if (how.kind === 'node') stdio.push('pipe'); // fd 3: the watchdog's lifeline
      this._process = spawn(how.file, how.args, {
        env: { ...env, ...how.addEnv },
        stdio,
        shell: false,
        detached: process.platform !== 'win32',
        windowsHide: process.platform === 'win32',
        cwd: params.cwd,
      });
      const child = this._process;
      if (child.pid !== undefined) this._ident = identify(child.pid, { dead: true }) || null;
      const lifeline = child.stdio[3];
      if (lifeline) {
        lifeline.on('error', () => {}); // the watchdog is gone: its exit says the rest
        // Read (nothing comes) so that its EOF closes it: the child's 'close', and with it
        // onclose, waits for every stdio stream, this one included.
        lifeline.resume();
        lifeline.unref?.(); // the stdio pipes keep the loop alive, as in the SDK
      }
      child.on('error', (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.on('spawn', () => {
        resolve();
      });
      child.on('close', () => {
        this._process = undefined;
        this.onclose?.();
      });
      child.stdin?.on('error', (error) => {
        this.onerror?.(error);
      });
      child.stdout?.on('data', (chunk) => {
        try {
          this._readBuffer.append(chunk);
          this.processReadBuffer();
        } catch (error) {
          this.onerror?.(error);
          this.close().catch(() => {});
        }
      });
      child.stdout?.on('error', (error) => {
        this.onerror?.(error);
      });
      if (this._stderrStream && child.stderr) child.stderr.pipe(this._stderrStream);
    });
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

  async _end(child, signalFirst) {
    const closed = new Promise((resolve) => child.once('close', resolve));
    const stdin = child.stdin;
    try {
      // A server that does not read its stdin leaves our writes queued: end() would wait
      // for them to flush before closing the pipe, and the server (or the guard, which
      // watches for the hang-up) would never see EOF. What it never read is dropped.
      if (stdin && stdin.writableLength > 0) stdin.destroy();
      else stdin?.end();
    } catch { /* ignore, as the SDK does */ }
    try { child.stdio[3]?.destroy(); } catch { /* the watchdog sees EOF either way */ }
    const kind = this._plan?.kind;
    const termMs = signalFirst ? DISPOSE_TERM_MS : this._termGraceMs;
    if (kind === 'none') {
      const tree = new Tree(this._ident, { pgid: child.pid, includeRoot: true, leader: this._ident });
      const nudge = new Nudge();
      child.once('exit', () => nudge.poke());
      await endTree(tree, { graceMs: this._graceMs, termGraceMs: termMs,
        fromSigterm: signalFirst, busy: () => !exited(child), nudge,
        // Our unreaped child: its pid is still its own (and the only handle off Linux).
        direct: (sig) => { if (!exited(child)) child.kill(sig); } });
    } else {
      if (signalFirst && !exited(child)) child.kill('SIGTERM'); // our unreaped child
      const budget = (signalFirst ? 0 : this._graceMs) + termMs + KILL_WAIT_MS + SAFETY_MARGIN_MS;
      if (!(await waitExit(child, budget))) {
        // The supervisor is stuck (stopped, traced, a bug): SIGKILL it and its tree.
        const tree = new Tree(this._ident, { includeRoot: true });
        tree.full();
        const stuck = [...tree.members.values()].map(({ pid, start }) => ({ pid, start }));
        tree.signal('SIGKILL');
        if (!exited(child)) child.kill('SIGKILL');
        const gone = await waitEmpty(tree, KILL_WAIT_MS, () => !exited(child));
        say('warning', `the ${kind} supervisor ${child.pid} did not exit in time; SIGKILLed ` +
          `${JSON.stringify(stuck)}${gone ? '' : ' and some survived'}`);
      }
    }
    // The tree is gone. 'close' (and onclose) waits for every stdio stream to end: stdout
    // is read to its EOF here, but a stderr the host asked to pipe and never reads holds
    // its data in the pipe forever. Past a short drain, the streams of a dead tree are
    // destroyed (what the host already has in `stderr` stays readable there).
    if (!(await Promise.race([closed.then(() => true), sleep(STREAM_DRAIN_MS).then(() => false)]))) {
      for (const s of [child.stdout, child.stderr, child.stdio[3]]) s?.destroy();
      await Promise.race([closed, sleep(KILL_WAIT_MS)]);
    }
  }

  send(message) {
    return new Promise((resolve) => {
      const stdin = this._process?.stdin;
      if (!stdin) throw new Error('Not connected');
      const json = JSON.stringify(message) + '\n';
      if (stdin.write(json)) resolve();
      else this._drained(stdin).then(resolve);
    });
  }

  /** One wait for 'drain' shared by every queued send (one listener, however many), that
   * also ends when the pipe closes (a dead server never drains). */
  _drained(stdin) {
    if (this._drain?.stdin !== stdin) {
      const wait = new Promise((resolve) => {
        const done = () => {
          stdin.off('drain', done);
          stdin.off('close', done);
          if (this._drain?.wait === wait) this._drain = null;
          resolve();
        };
        stdin.on('drain', done);
        stdin.on('close', done);
      });
      this._drain = { stdin, wait };
    }
    return this._drain.wait;
  }
}

module.exports = {
  StdioClientTransport, getDefaultEnvironment, DEFAULT_INHERITED_ENV_VARS, ReadBuffer,
};
module.exports.default = StdioClientTransport;
