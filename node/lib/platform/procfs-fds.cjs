'use strict';
// Linux: a process's descriptors and the sockets of its network namespace, read from /proc
// (part of lib/platform/procfs.cjs's answers, which exports them).
//
// Guarantees:
// - `fdTarget(n, pid)` is what fd `n` is (`socket:[123]`, `pipe:[456]`); `fds(pid)`,
//   `fdMode(pid, fd)`, `unixTable(pid)` and `tcpTable(pid)` are the raw reads behind a
//   process's endpoints (lib/platform/endpoints.cjs): its fd links, how a pipe end is
//   open, and the unix and TCP sockets of its network namespace.
// - null (or empty) where unreadable: gone, or not ours to read. Nothing is spawned.

const fs = require('node:fs');

/** What fd `n` of `pid` is (`socket:[123]`, `pipe:[456]`), or null. */
function fdTarget(n, pid = 'self') {
  try {
    return fs.readlinkSync(`/proc/${pid}/fd/${n}`);
  } catch {
    return null;
  }
}

/** `[[fd, link]]` of every open fd of `pid`, or null (gone, or not ours to read). */
function fds(pid) {
  let names;
  try {
    names = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return null;
  }
  const out = [];
  for (const n of names) {
    const link = fdTarget(n, pid);
    if (link !== null) out.push([Number(n), link]);
  }
  return out;
}

/** How fd `fd` of `pid` is open: 'r', 'w', 'rw', or null (fdinfo's flags: O_ACCMODE). */
function fdMode(pid, fd) {
  try {
    const m = /^flags:\s*([0-7]+)/m.exec(fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'latin1'));
    return m ? ['r', 'w', 'rw'][parseInt(m[1], 8) & 3] || null : null;
  } catch {
    return null;
  }
}

function lines(file) {
  try {
    return fs.readFileSync(file, 'latin1').split('\n').slice(1).filter(Boolean);
  } catch {
    return [];
  }
}

/** Map inode -> {flags, state, name} of the unix sockets in `pid`'s network namespace. */
function unixTable(pid) {
  const out = new Map();
  for (const line of lines(`/proc/${pid}/net/unix`)) {
    // Num RefCount Protocol Flags Type St Inode [Path]
    const m = /^\s*\S+\s+\S+\s+\S+\s+(\S+)\s+\S+\s+(\S+)\s+(\d+)(?: (.*))?$/.exec(line);
    if (m) out.set(m[3], { flags: parseInt(m[1], 16), state: parseInt(m[2], 16), name: m[4] || '' });
  }
  return out;
}

/** `[{ino, state, local, remote}]` of the TCP sockets in `pid`'s network namespace; an
 * address is `HEX:PORT` as the kernel prints it (`tcpAddress` reads it). */
function tcpTable(pid) {
  const out = [];
  for (const name of ['tcp', 'tcp6']) {
    for (const line of lines(`/proc/${pid}/net/${name}`)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 9) out.push({ ino: f[9], state: parseInt(f[3], 16), local: f[1], remote: f[2] });
    }
  }
  return out;
}

module.exports = { fdTarget, fds, fdMode, unixTable, tcpTable };
