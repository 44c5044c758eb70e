'use strict';
// The host: the first ancestor of this process that is not a known launcher, and whether
// it still lives. How ancestors are read is the platform's reader (lib/platform/platform.cjs:
// /proc on Linux, `ps` on macOS and the BSDs, none on Windows).
//
// Guarantees:
// - A process is (pid, start time), never a bare pid. `readProcess(pid)` answers an
//   object (it lives), `null` (positively gone: no such pid, a zombie, or a different
//   start time) or `undefined` (this platform cannot tell). `undefined` never ends a server.
// - The launchers (`isLauncher`) are told by argv alone, the same on every platform.
// - Where there is no reader (Windows) there is no host: `findHost()` says why, and the
//   host watch is off (stdin EOF, the dead-pipe errors and the signals still work).

const path = require('node:path');
const { ANCESTRY, PROCS: procs, NAME } = require('../platform/platform.cjs');

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

/** `{pid, ppid, start, argv}`, `null` (gone) or `undefined` (cannot tell here). */
function readProcess(pid) {
  return ANCESTRY ? ANCESTRY.readProcess(pid) : undefined;
}

/**
 * The host: `{ host: {pid, start, argv}, chain: [launchers...] }`, or `{ host: null, why }`
 * when it cannot be named (this platform, an unreadable ancestor, or an ancestry that
 * ends at pid 1: started by init, or orphaned already).
 */
function findHost(startPid = process.ppid) {
  if (!ANCESTRY) return { host: null, why: `no host watch on ${NAME}` };
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
  return ANCESTRY ? ANCESTRY.watcher(host) : () => undefined;
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
  if (!procs) return undefined;
  const me = procs.stat(process.pid);
  if (!me || !(me.pgid > 1) || me.pgid === process.pid) return undefined;
  const leader = procs.stat(me.pgid);
  if (leader !== null) return leader === undefined ? undefined : false;
  const parent = procs.stat(process.ppid, { dead: true });
  if (!parent) return undefined;
  return parent.pgid !== me.pgid;
}

module.exports = { findHost, isLauncher, readProcess, watcher, adoptedEarly };
