'use strict';
// A tree's marked newcomers: the processes of a whole-table reading that carry the tree's
// mark in their environment (lib/process/mark.cjs), found even when their parent is gone.
//
// Guarantees:
// - Only processes started at or after the root count (none before it could have
//   inherited the mark from it), and never the root's own ancestors: a namespace's init
//   started in the same clock tick would otherwise pass for a descendant.
// - Only the top of each newer subtree is read (its parent older than the root: init, a
//   subreaper); what descends from it is found from it by ppid.
// - An environment that cannot be read (gone, not ours) is not the mark: what we cannot
//   read is not ours to signal either.

const { PROCS: procs } = require('../platform/platform.cjs');

/** The records of `all` (one whole-table reading; `snap`: the same by pid) that carry
 * `mark` (`NAME=token`, NAME a comma-separated list), for a tree rooted at `root`; the
 * tree's `members` (a Map by pid) are not read again. */
function markedNewcomers(mark, root, all, snap, members) {
  const eq = mark.indexOf('=');
  const name = mark.slice(0, eq);
  const token = mark.slice(eq + 1);
  const since = Number(root.start);
  const above = new Set();
  for (let p = root.pid; p > 0 && !above.has(p);) {
    above.add(p);
    const st = snap.get(p);
    p = st ? st.ppid : 0;
  }
  const newer = new Set(all.filter((st) => Number(st.start) >= since && !above.has(st.pid))
    .map((st) => st.pid));
  const found = [];
  for (const st of all) {
    if (st.pid === root.pid || members.has(st.pid) || !newer.has(st.pid)) continue;
    if (newer.has(st.ppid)) continue;
    const env = procs.environ(st.pid);
    if (env === null) continue;
    if (procs.envValue(env, name).split(',').includes(token)) found.push(st);
  }
  return found;
}

module.exports = { markedNewcomers };
