'use strict';
// Linux: processes read from /proc, never by spawning anything. Chosen by lib/platform/platform.cjs
// (`PROCFS`, and the host's reader on Linux); no other file opens /proc.
//
// Guarantees:
// - A process is (pid, start time): `stat(pid)` reads /proc/<pid>/stat (ppid is field 4,
//   pgid field 5, starttime in clock ticks since boot field 22) and answers an object (it
//   lives), `null` (positively gone: no such pid, a zombie) or `undefined` (it cannot be
//   read). One small read into a reused buffer per call.
// - `readProcess(pid)` adds the argv (/proc/<pid>/cmdline); `watcher(host)` answers, one
//   stat read per poll, whether that process still lives as itself.
// - `uptime()` is now on the clock start times are counted on (seconds since boot).
// - `children(pid)` reads /proc/<pid>/task/<tid>/children; on a kernel without them
//   (no CONFIG_PROC_CHILDREN) `childrenFilesMissing()` turns true, and callers read the
//   whole table (`table()`) instead.
// - `fdTarget(n, pid)`, `fds(pid)`, `fdMode(pid, fd)`, `unixTable(pid)` and `tcpTable(pid)`:
//   a process's descriptors and sockets, read by lib/platform/procfs-fds.cjs and part of
//   this reader's answers.

const fs = require('node:fs');

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
function stat(pid, { dead = false } = {}) {
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
  // fields 4 (ppid), 5 (pgid), 6 (session), 7 (controlling terminal, 0: none), 22 (start)
  return { pid, ppid: Number(rest[1]), pgid: Number(rest[2]), sid: Number(rest[3]),
    tty: Number(rest[4]), start: rest[19] };
}

/** `{pid, ppid, pgid, start, argv}`, `null` (gone) or `undefined` (cannot tell). */
function readProcess(pid) {
  const st = stat(pid);
  if (!st) return st;
  let argv = [];
  try {
    argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0+$/, '').split('\0');
  } catch {
    argv = [];
  }
  return { ...st, argv };
}

/** Whether `host` still lives as itself: true, false (gone or replaced), undefined. */
function watcher(host) {
  return () => {
    const st = stat(host.pid);
    if (st === undefined) return undefined;
    return st !== null && st.start === host.start;
  };
}

let childrenFiles; // probed on first use

function children(pid) {
  let tids;
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const out = [];
  for (const tid of tids) {
    let text;
    try {
      text = fs.readFileSync(`/proc/${pid}/task/${tid}/children`, 'latin1');
    } catch (err) {
      if (err && err.code === 'ENOENT' && childrenFiles === undefined) {
        // The task is there but not its children file: a kernel without
        // CONFIG_PROC_CHILDREN. Whole-table reads from now on.
        try { fs.statSync(`/proc/${pid}/task/${tid}`); childrenFiles = false; } catch { /* gone */ }
      }
      continue;
    }
    childrenFiles = true;
    for (const word of text.split(' ')) if (word) out.push(Number(word));
  }
  return out;
}

function childrenFilesMissing() {
  return childrenFiles === false;
}

/** Every process: [{pid, ppid, pgid, start}]. */
function table() {
  const out = [];
  let names;
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return out;
  }
  for (const name of names) {
    if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) continue;
    const st = stat(Number(name));
    if (st) out.push(st);
  }
  return out;
}

/** The raw environment of `pid` (NUL-separated), or null: gone, or not ours to read. */
function environ(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/environ`, 'latin1');
  } catch {
    return null;
  }
}

/** Seconds since boot now (/proc/uptime: the clock /proc/<pid>/stat's start times are
 * counted on), or null where it cannot be read. */
function uptime() {
  try {
    const s = Number(fs.readFileSync('/proc/uptime', 'latin1').split(' ')[0]);
    return Number.isFinite(s) ? s : null;
  } catch {
    return null;
  }
}

/** The value of `name` in a raw environment (NUL-separated, as /proc gives it), or ''. */
function envValue(raw, name) {
  const key = `${name}=`;
  const at = raw.startsWith(key) ? 0 : raw.indexOf(`\0${key}`) + 1;
  if (at === 0 && !raw.startsWith(key)) return '';
  const end = raw.indexOf('\0', at);
  return raw.slice(at + key.length, end === -1 ? undefined : end);
}

module.exports = {
  stat, readProcess, watcher, children, childrenFilesMissing, table, environ, envValue, uptime,
  ...require('./procfs-fds.cjs'),
};
