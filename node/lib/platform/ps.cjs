'use strict';
// macOS and the BSDs: processes read with `/bin/ps`, the one program there that shows
// another process's parent, group, terminal, start time and (for this user's processes)
// environment without native code. Chosen by lib/platform/platform.cjs (`PROCS` and the
// host's reader where there is no /proc); no other file runs ps. The same answers as
// lib/platform/procfs.cjs, in the same shapes, so lib/process/ (the tree, what a tree kill
// leaves, the host) reads either.
//
// Guarantees:
// - A process is (pid, start time): the start is `lstart` read in UTC (TZ=UTC, LC_ALL=C:
//   strftime's `%c`, "Mon Jan  1 12:00:00 2024"), kept as whole seconds since the epoch.
//   One-second resolution: a pid reused within the second its first owner started would
//   not be told apart (macOS hands pids out in order up to 99999).
// - `stat(pid)` asks ps once, fresh (what lib/process/identity.cjs re-reads right before a signal),
//   and answers `{pid, ppid, pgid, sid, tty, start}` (it lives), `null` (no such process,
//   or a zombie unless `dead`) or `undefined` (ps failed, or said something unreadable).
//   `sid` is null: macOS's ps shows no session id (its `sess` is a kernel pointer). `tty`
//   is 0 for none (`tt` prints "??"), 1 for one.
// - `table()` is one ps run for every process, the ps itself left out (this process's
//   child whose accounting name, `ucomm`, is "ps": a child of the server that runs ps at
//   that very instant is left out with it); `children()` is not offered (no children
//   lists: `childrenFilesMissing()` is true, and lib/process/tree.cjs reads the whole table).
// - `environ(pid)` is `ps -E`'s line for `pid` (argv, then the environment, each string
//   separated by a space: ps shows it for this user's processes), or null (gone, or not
//   ours); `envValue(line, NAME)` is the value of the last `NAME=` word in it (the
//   environment comes after argv). A mark's value has no space in it.
// - `fds`/`fdTarget` answer `undefined`: ps does not show another process's descriptors
//   (so a launcher's real server is never taken for a stranger: lib/process/tree.cjs counts an
//   unreadable holder as holding).
// - `watcher(host)`: each poll, `kill(pid, 0)` says whether the pid is still taken, and
//   the start time is compared again every RECHECK_EVERY polls.
// - MCP_TETHER_TEST_PS names another program to run as ps (a test switch: tests/macos_ps.py
//   prints as macOS's ps does, answered from Linux's /proc).

const { execFileSync } = require('node:child_process');

const PS = process.env.MCP_TETHER_TEST_PS || '/bin/ps';
const RECHECK_EVERY = 10;
const MONTHS = { Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8,
  Oct: 9, Nov: 10, Dec: 11 };
// pid ppid pgid tt state lstart (five words) [command]
const LINE = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+\w{3}\s+(\w{3})\s+(\d+)\s+(\d+):(\d+):(\d+)\s+(\d{4})(?:\s+(.*))?$/;
const COLUMNS = ['-o', 'pid=', '-o', 'ppid=', '-o', 'pgid=', '-o', 'tt=', '-o', 'state=', '-o', 'lstart='];

/** ps's output for `args`, or null (no process matched: ps exits 1 saying nothing), or
 * undefined (ps failed). */
function ps(args) {
  try {
    return execFileSync(PS, ['-ww', ...args], { encoding: 'utf8', timeout: 5000,
      maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'ignore'],
      env: { ...process.env, LC_ALL: 'C', TZ: 'UTC' } });
  } catch (err) {
    if (err && err.status === 1 && !String(err.stdout || '').trim()) return null;
    return undefined;
  }
}

/** One line of COLUMNS (and a command) as a record; null for a zombie unless `dead`. */
function parse(line, dead) {
  const m = LINE.exec(line);
  if (!m) return undefined;
  if (!dead && m[5].startsWith('Z')) return null; // dead, not yet reaped
  const month = MONTHS[m[6]];
  if (month === undefined) return undefined;
  const start = Date.UTC(Number(m[11]), month, Number(m[7]), Number(m[8]), Number(m[9]),
    Number(m[10])) / 1000;
  return { pid: Number(m[1]), ppid: Number(m[2]), pgid: Number(m[3]), sid: null,
    tty: m[4].startsWith('??') ? 0 : 1, start: String(start), command: m[12] || '' };
}

function strip(rec) {
  if (!rec) return rec;
  const { command, ...st } = rec;
  return st;
}

/** `{pid, ppid, pgid, sid, tty, start}`, `null` (gone) or `undefined` (cannot tell). */
function stat(pid, { dead = false } = {}) {
  const out = ps([...COLUMNS, '-p', String(pid)]);
  if (out === null || out === undefined) return out;
  const rec = parse(out.split('\n')[0], dead);
  if (!rec) return rec; // null: a zombie; undefined: unreadable
  return rec.pid === pid ? strip(rec) : undefined;
}

/** `{pid, ppid, pgid, start, argv}`, `null` (gone) or `undefined` (cannot tell). ps joins
 * argv with spaces: an argument that holds one reads as two words. */
function readProcess(pid) {
  const out = ps([...COLUMNS, '-o', 'command=', '-p', String(pid)]);
  if (out === null || out === undefined) return out;
  const rec = parse(out.split('\n')[0].replace(/\s+$/, ''), false);
  if (!rec) return rec;
  return { ...strip(rec), argv: rec.command.split(/ +/) };
}

/** Every process ps lists: [{pid, ppid, pgid, sid, tty, start}] (zombies left out), but
 * the ps that lists them (our child, named "ps": ps lists itself). */
function table() {
  const out = ps(['-A', ...COLUMNS, '-o', 'ucomm=']);
  if (!out) return [];
  return out.split('\n').map((l) => parse(l, false))
    .filter((r) => r && !(r.ppid === process.pid && r.command.trim() === 'ps')).map(strip);
}

function children() {
  return [];
}

function childrenFilesMissing() {
  return true;
}

/** `ps -E`'s line for `pid` (argv and environment), or null: gone, or not ours to read
 * (ps then shows no environment: an answer without one is not ours either). */
function environ(pid) {
  const out = ps(['-E', '-o', 'command=', '-p', String(pid)]);
  if (!out) return null;
  const line = out.split('\n')[0];
  return line.startsWith('(') ? null : line; // "(comm)": its arguments cannot be read
}

/** The value of the last `name=` word of an `environ` line, or ''. */
function envValue(line, name) {
  const re = new RegExp(`(?:^| )${name}=(\\S*)`, 'g');
  let value = '';
  for (let m = re.exec(line); m; m = re.exec(line)) value = m[1];
  return value;
}

/** A process's descriptors cannot be read here: undefined (unknown, never "none"). */
function fdTarget() {
  return undefined;
}

function fds() {
  return undefined;
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

/** Whether `host` still lives as itself: true, false (gone or replaced), undefined. */
function watcher(host) {
  let polls = 0;
  return () => {
    if (!pidTaken(host.pid)) return false;
    polls += 1;
    if (polls % RECHECK_EVERY !== 0) return true;
    const p = stat(host.pid);
    if (p === undefined) return undefined;
    return p !== null && p.start === host.start;
  };
}

module.exports = {
  stat, readProcess, table, children, childrenFilesMissing, environ, envValue, fdTarget,
  fds, watcher,
};
