'use strict';
// The host: the first ancestor of this process that is not a known launcher, and whether
// it still lives. The only platform-bound file of the package.
//
// Guarantees:
// - A process is (pid, start time), never a bare pid. `readProcess(pid)` answers an
//   object (it lives), `null` (positively gone: no such pid, a zombie, or a different
//   start time) or `undefined` (this platform cannot tell). `undefined` never ends a server.
// - Linux reads /proc/<pid>/stat (ppid is field 4, starttime in clock ticks since boot is
//   field 22) and /proc/<pid>/cmdline: no process is spawned, one small read per poll.
// - macOS and the BSDs ask `ps -o ppid= -o lstart= -o command=` once per ancestor at
//   start-up; while watching, `kill(pid, 0)` says whether the pid is still taken, and the
//   start time from `ps` is compared again every RECHECK_EVERY polls, so a reused pid is
//   noticed within seconds. `lstart` has one-second resolution: a pid reused within the
//   same second as the host's start would not be told apart.
// - Windows: no ancestry without spawning PowerShell/WMI; the host watch is off there
//   (stdin EOF, the dead-pipe errors and the signals still work).

const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const RECHECK_EVERY = 10;
const MAX_DEPTH = 32;
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ash', 'ksh', 'mksh', 'busybox', 'fish']);
// Always launchers: they exist to start something else.
const RUNNERS = new Set(['npx', 'pnpx', 'bunx', 'uvx']);
// The JS entry points of package managers run as `node <cli.js> ...`.
const NODE_CLIS = {
  'npx-cli.js': 'npx', 'npm-cli.js': 'npm', 'pnpm.cjs': 'pnpm', 'pnpm.mjs': 'pnpm',
  'pnpm.js': 'pnpm', 'pnpx.cjs': 'pnpx', 'pnpx.js': 'pnpx', 'yarn.js': 'yarn',
  'yarn.cjs': 'yarn', 'npx': 'npx', 'npm': 'npm', 'pnpm': 'pnpm', 'yarn': 'yarn',
};

function base(word) {
  return path.basename(String(word || '')).toLowerCase();
}

/**
 * True when argv is a launcher that sits between a host and its server: `npm exec` /
 * `npx`, `pnpm dlx` / `pnpm exec`, `yarn dlx`, `bunx` / `bun x`, `uvx` / `uv tool run`,
 * `sh -c`, `cmd /c`. npm rewrites its title (`npm exec @scope/pkg`), which Linux shows
 * as one argv word with spaces: such a single word is split before matching.
 */
function isLauncher(argv) {
  if (!Array.isArray(argv) || argv.length === 0) return false;
  let words = argv.filter((w) => w !== '');
  if (words.length === 1 && / /.test(words[0])) words = words[0].trim().split(/ +/);
  if (words.length === 0) return false;
  let b = base(words[0]).replace(/\.exe$/, '');
  if (b.startsWith('node') && words.length > 1 && NODE_CLIS[base(words[1])]) {
    words = [NODE_CLIS[base(words[1])], ...words.slice(2)];
    b = words[0];
  }
  const sub = String(words[1] || '').toLowerCase();
  if (SHELLS.has(b)) return words.slice(1).some((w) => /^-[a-z]*c[a-z]*$/i.test(w));
  if (b === 'cmd') return words.slice(1).some((w) => /^\/[ck]$/i.test(w));
  if (RUNNERS.has(b)) return true;
  if (b === 'npm' || b === 'pnpm' || b === 'yarn') return true; // exec, dlx, run, start...
  if (b === 'bun') return sub === 'x' || sub === 'run';
  if (b === 'uv') return sub === 'tool' || sub === 'run';
  return false;
}

// ---- Linux: /proc --------------------------------------------------------------------

// One read into a reused buffer: readFileSync on a /proc file (size 0) costs several
// times more (fstat, then a growing read loop), which a whole-table look pays per process.
const STAT_BUF = Buffer.alloc(4096);

function readStat(pid) {
  const fd = fs.openSync(`/proc/${pid}/stat`, 'r');
  try {
    return STAT_BUF.latin1Slice(0, fs.readSync(fd, STAT_BUF, 0, STAT_BUF.length, 0));
  } finally {
    fs.closeSync(fd);
  }
}

// `dead`: a zombie (our own unreaped child) is still itself, its pid not yet free: its
// start time identifies it. Anyone else's zombie is gone for our purposes.
function linuxStat(pid, { dead = false } = {}) {
  let text;
  try {
    text = readStat(pid);
  } catch (err) {
    if (err && (err.code === 'ENOENT' || err.code === 'ESRCH')) return null;
    return undefined;
  }
  // comm (field 2) may hold spaces and parentheses: the fields resume after the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const state = rest[0]; // field 3
  if (!dead && (state === 'Z' || state === 'X')) return null; // dead, not yet reaped
  return { pid, ppid: Number(rest[1]), pgid: Number(rest[2]), start: rest[19] }; // fields 4, 5, 22
}

function linuxRead(pid) {
  const st = linuxStat(pid);
  if (!st) return st;
  let argv = [];
  try {
    argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0+$/, '').split('\0');
  } catch {
    argv = [];
  }
  return { ...st, argv };
}

// ---- macOS / BSD: ps -----------------------------------------------------------------

function psRead(pid) {
  let out;
  try {
    out = execFileSync('ps', ['-ww', '-o', 'ppid=', '-o', 'lstart=', '-o', 'command=', '-p',
      String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'],
      env: { ...process.env, LC_ALL: 'C' }, timeout: 2000 });
  } catch (err) {
    // ps exits 1 with no output when the pid does not exist.
    if (err && err.status === 1 && !String(err.stdout || '').trim()) return null;
    return undefined;
  }
  const m = /^\s*(\d+)\s+(\w{3}\s+\w{3}\s+\d+\s+[\d:]+\s+\d{4})\s+(.*)$/.exec(out.trim());
  if (!m) return undefined;
  return { pid, ppid: Number(m[1]), start: m[2].replace(/\s+/g, ' '), argv: m[3].split(/ +/) };
}

function pidTaken(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    if (err && err.code === 'ESRCH') return false;
    return true; // EPERM: someone's process has that pid
  }
}

// ---- dispatch, chosen once -----------------------------------------------------------

const PLATFORM = process.platform === 'linux' ? 'linux'
  : process.platform === 'win32' ? 'none' : 'ps';

/** `{pid, ppid, start, argv}`, `null` (gone) or `undefined` (cannot tell here). */
function readProcess(pid) {
  if (PLATFORM === 'linux') return linuxRead(pid);
  if (PLATFORM === 'ps') return psRead(pid);
  return undefined;
}

/**
 * The host: `{ host: {pid, start, argv}, chain: [launchers...] }`, or `{ host: null, why }`
 * when it cannot be named (this platform, an unreadable ancestor, or an ancestry that
 * ends at pid 1: started by init, or orphaned already).
 */
function findHost(startPid = process.ppid) {
  if (PLATFORM === 'none') return { host: null, why: `no host watch on ${process.platform}` };
  const chain = [];
  let pid = startPid;
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    if (!Number.isInteger(pid) || pid <= 1) {
      return { host: null, why: `the ancestry ends at pid ${pid} (started by init, or orphaned)` };
    }
    const p = readProcess(pid);
    if (p === undefined) return { host: null, why: `cannot read process ${pid}` };
    if (p === null) return { host: null, why: `ancestor ${pid} is already gone` };
    if (!isLauncher(p.argv)) return { host: p, chain };
    chain.push(p);
    pid = p.ppid;
  }
  return { host: null, why: `more than ${MAX_DEPTH} launchers above this process` };
}

/**
 * A function answering whether `host` still lives: true, false (gone or replaced) or
 * undefined (cannot tell now).
 */
function watcher(host) {
  if (PLATFORM === 'linux') {
    return () => {
      const st = linuxStat(host.pid);
      if (st === undefined) return undefined;
      return st !== null && st.start === host.start;
    };
  }
  let polls = 0;
  return () => {
    if (!pidTaken(host.pid)) return false;
    polls += 1;
    if (polls % RECHECK_EVERY !== 0) return true;
    const p = psRead(host.pid);
    if (p === undefined) return undefined;
    return p !== null && p.start === host.start;
  };
}

/**
 * Whether the host that started this process died before anyone watched it, so that
 * this process was adopted (by init or a subreaper) and `findHost()` now names the
 * adopter. A host that spawns its server without a group of its own (the TypeScript
 * SDK's transport, Node's `child_process` by default) leaves it in the host's process
 * group; a shell's job control makes that host the group's leader. The evidence, all of
 * it required (Linux): this process is in a group it does not lead; that group's leader
 * is positively gone (no such pid, or a zombie); and the parent it has now is outside
 * that group (a launcher or a live host in between would share it). true only then;
 * false or undefined (cannot tell) otherwise, which never ends anything. A server in a
 * group or session of its own (the Python SDK's hosts) gets undefined: no evidence.
 */
function adoptedEarly() {
  if (PLATFORM !== 'linux') return undefined;
  const me = linuxStat(process.pid);
  if (!me || !(me.pgid > 1) || me.pgid === process.pid) return undefined;
  const leader = linuxStat(me.pgid);
  if (leader !== null) return leader === undefined ? undefined : false;
  const parent = linuxStat(process.ppid, { dead: true });
  if (!parent) return undefined;
  return parent.pgid !== me.pgid;
}

module.exports = { findHost, isLauncher, readProcess, watcher, linuxStat, adoptedEarly, PLATFORM };
