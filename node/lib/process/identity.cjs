'use strict';
// A process is (pid, start time), never a bare pid: how the package tells one, and every
// signal it sends, to a process or to a group.
//
// Guarantees:
// - The start time is `/proc/<pid>/stat` field 22 on Linux, `ps`'s `lstart` on macOS
//   (lib/platform/platform.cjs `PROCS`). `identify(pid)` answers `{pid, start, pgid}`
//   (it lives), `null` (gone) or `undefined` (it cannot be told).
// - `signalIdent(ident, sig)` re-reads the process right before the signal and sends
//   nothing unless it is still itself: a pid now held by another start time is gone, one
//   that cannot be read is `unknown`, and neither is signalled. Node has no pidfd: a pid
//   that dies and is reused between that read and the kill is the one race left,
//   microseconds wide.
// - A group is signalled (kill(-pgid)) only by a caller that holds a member of it
//   (lib/process/tree.cjs); `groupEmpty(pgid)` is one kill(-pgid, 0).
// - Wherever there is a process reader (Linux's /proc, macOS's ps). Elsewhere (Windows)
//   `SUPPORTED` is false: nothing can be told, and nothing is signalled by identity.

const { PROCS: procs } = require('../platform/platform.cjs');

const SUPPORTED = procs !== null;

/** `{pid, start}` of a live process, `null` if gone, `undefined` if it cannot be told. */
function identify(pid, { dead = false } = {}) {
  if (!SUPPORTED) return undefined;
  const st = procs.stat(pid, { dead });
  return st && { pid, start: st.start, pgid: st.pgid };
}

/** true (the same process lives), false (gone or replaced), undefined (cannot tell). */
function same(ident) {
  if (!SUPPORTED) return undefined;
  const st = procs.stat(ident.pid);
  if (st === undefined) return undefined;
  return st !== null && st.start === ident.start;
}

/** Signal `ident` if it is still itself; true if sent. */
function signalIdent(ident, sig) {
  if (same(ident) !== true) return false;
  try {
    process.kill(ident.pid, sig);
    return true;
  } catch {
    return false; // ESRCH: gone in between; EPERM: not ours to signal
  }
}

/** True when no process holds group `pgid` (null: no group), by one kill(-pgid, 0). */
function groupEmpty(pgid) {
  if (pgid === null) return true;
  return !signalGroup(pgid, 0); // ESRCH: nobody; EPERM: a stranger's group of that number now
}

/** kill(-pgid, sig); true if sent (ESRCH: the group is empty; EPERM: nothing of ours). */
function signalGroup(pgid, sig) {
  try {
    process.kill(-pgid, sig);
    return true;
  } catch {
    return false;
  }
}

module.exports = { identify, same, signalIdent, groupEmpty, signalGroup, SUPPORTED };
