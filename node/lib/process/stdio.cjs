'use strict';
// Who holds a process's stdio: the pipes and sockets on its fds 0 and 1, and the members
// of a tree that hold this process's. What tells a host's channel from a file.
//
// Guarantees:
// - Only pipes and sockets count (/dev/null or a file says nothing about who).
// - Where descriptors cannot be read (macOS's ps) the answer is `undefined`, and every live
//   member may hold them: unknown is never "nobody".

const { PROCS: procs } = require('../platform/platform.cjs');
const { SUPPORTED } = require('./identity.cjs');

/** The pipes and sockets on fds 0 and 1 of `pid` (default: this process), as links.
 * undefined where descriptors cannot be read. */
function stdioTargets(pid = 'self') {
  if (!SUPPORTED) return [];
  const got = [procs.fdTarget(0, pid), procs.fdTarget(1, pid)];
  if (got.includes(undefined)) return undefined;
  return got.filter((t) => /^(pipe|socket):/.test(t || ''));
}

/** Live members of `tree` that hold this process's stdin or stdout (a server a launcher
 * handed the stdio to before it exited). Where descriptors cannot be read, every live
 * member may be that server: all count as holders. */
function stdioHolders(tree) {
  const targets = stdioTargets();
  // A whole-table look: a server the launcher started just before it left was likely
  // never seen by a look while the launcher lived; it is still in the group.
  const live = tree.full();
  if (targets === undefined) return live;
  const ours = new Set(targets);
  return live.filter((m) => [0, 1].some((n) => ours.has(procs.fdTarget(n, m.pid))));
}

module.exports = { stdioHolders, stdioTargets };
