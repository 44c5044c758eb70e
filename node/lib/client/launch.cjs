'use strict';
// What the transport (client.cjs) starts: the server's environment, its command resolved as
// exec would, and the supervisor in front of it.
//
// Guarantees:
// - `getDefaultEnvironment()` is the SDKs' rule: the inherited variables of this platform
//   (lib/platform/platform.cjs), shell functions left out; `env` is merged over it.
// - `refusal()` is the error Node's spawn gives (ENOENT / EACCES) for a command exec would
//   refuse, found before anything is spawned: behind a supervisor the command would start
//   and then exit 127, where the SDK's transport rejects start().
// - `plan()` picks the supervisor once per start: `auto` is `mcp-tether run` (the Python
//   guard) when it is on PATH where the platform prefers it (Linux), else the Node
//   watchdog (lib/terminate/watchdog.cjs), and none where there are no sessions (Windows). `auto`
//   falling back to the watchdog says so once per host process, on stderr.

const fs = require('node:fs');
const path = require('node:path');
const { POSIX, GUARD_AUTO, NAME, INHERITED_ENV_VARS } = require('../platform/platform.cjs');
const { say } = require('../output/log.cjs');

const WATCHDOG = path.join(__dirname, '..', 'terminate', 'watchdog.cjs');
const SUPERVISORS = ['auto', 'mcp-tether', 'node', 'none'];

/** The environment a server gets when `env` is not given (the SDKs' rule). */
function getDefaultEnvironment() {
  const env = {};
  for (const key of INHERITED_ENV_VARS) {
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

/** The spawn error for a server command that cannot start, or null. (A `cwd` that does not
 * exist is left to spawn, which reports it as the SDK's transport sees it.) */
function refusal(params, env) {
  const found = resolveCommand(params.command, env, params.cwd);
  if (found.error && (!params.cwd || fs.existsSync(params.cwd))) {
    return spawnError(found.error, params.command, [params.command, ...(params.args ?? [])]);
  }
  return null;
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
    const found = POSIX ? resolveCommand('mcp-tether', process.env, undefined)
      : { error: 'ENOENT' };
    guard = found.file || null;
    if (wanted === 'mcp-tether' && !guard) {
      throw new Error('mcp-tether: supervisor "mcp-tether" asked for, but no mcp-tether is on PATH');
    }
    if (wanted === 'auto') kind = !POSIX ? 'none' : guard && GUARD_AUTO ? 'mcp-tether' : 'node';
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
  say('warning', 'no mcp-tether on PATH' + (GUARD_AUTO ? '' : ` or not Linux (${NAME})`) +
    ': servers run behind the Node watchdog, which cannot follow a process that daemonizes ' +
    'with a clean environment (the guard, `mcp-tether run`, can); supervisor: "node" ' +
    'silences this line');
}

/** Say which supervisor `command` starts behind (and, once, that `auto` fell back). */
function announce(command, how) {
  if (how.kind === 'node' && !how.forced) fallbackNotice();
  say('debug', how.kind === 'mcp-tether' ? `starting ${command} behind mcp-tether run (${how.file})`
    : how.kind === 'node' ? `starting ${command} behind the Node watchdog` +
      (how.forced ? '' : ' (no mcp-tether on PATH)')
      : `starting ${command} with no supervisor (the host's death is not covered)`);
}

/** child_process.spawn's options for `how`: a session of its own where there are sessions;
 * fd 3, the watchdog's lifeline, behind the Node watchdog. */
function spawnOptions(how, params, env) {
  const stdio = ['pipe', 'pipe', params.stderr ?? 'inherit'];
  if (how.kind === 'node') stdio.push('pipe'); // fd 3: the watchdog's lifeline
  return { env: { ...env, ...how.addEnv }, stdio, shell: false, detached: POSIX,
    windowsHide: !POSIX, cwd: params.cwd };
}

module.exports = {
  getDefaultEnvironment, resolveCommand, refusal, plan, announce, spawnOptions, SUPERVISORS,
};
