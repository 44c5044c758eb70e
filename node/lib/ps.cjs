'use strict';
// macOS and the BSDs: the host read with `ps`. Chosen by lib/platform.cjs (the host's
// reader where there is no /proc and `ps` is there).
//
// Guarantees:
// - `readProcess(pid)` asks `ps -o ppid= -o lstart= -o command=` once (at start-up, once
//   per ancestor) and answers `{pid, ppid, start, argv}`, `null` (no such pid) or
//   `undefined` (ps failed, or said something unreadable).
// - `watcher(host)`: each poll, `kill(pid, 0)` says whether the pid is still taken, and the
//   start time from `ps` is compared again every RECHECK_EVERY polls, so a reused pid is
//   noticed within seconds. `lstart` has one-second resolution: a pid reused within the
//   same second as the host's start would not be told apart.

const { execFileSync } = require('node:child_process');

const RECHECK_EVERY = 10;

function readProcess(pid) {
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

/** Whether `host` still lives as itself: true, false (gone or replaced), undefined. */
function watcher(host) {
  let polls = 0;
  return () => {
    if (!pidTaken(host.pid)) return false;
    polls += 1;
    if (polls % RECHECK_EVERY !== 0) return true;
    const p = readProcess(host.pid);
    if (p === undefined) return undefined;
    return p !== null && p.start === host.start;
  };
}

module.exports = { readProcess, watcher };
