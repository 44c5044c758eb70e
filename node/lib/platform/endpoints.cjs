'use strict';
// Linux: what a process's terminals, pipes and sockets connect it to, and who holds each
// far end. Chosen by lib/platform/platform.cjs (`ENDPOINTS`); read through
// lib/platform/procfs.cjs, and for a unix socket's peer through `ss` (iproute2: the
// kernel's sock_diag, which Node cannot ask itself). The Python package's `linux_fds.endpoints` answers the same questions.
//
// Guarantees:
// - `reader()` gives one look's `endpoints(pid)` and `holders(links)`; the network
//   tables (and `ss`, at most once) are read on first need and kept for that look.
// - `endpoints(pid)`: `[{kind, role, near, far, name}]` or null (the fds cannot be read).
//   kind 'pty' (role 'master'), 'pipe' (role 'r' or 'w'; near and far are the same
//   `pipe:[N]`, its two ends), 'unix' and 'tcp' (role 'listen', 'accepted': a connected
//   stream socket bearing a listening socket's name or port, the server side of a
//   connection; or 'client'); far is the peer's `socket:[N]` for an accepted one, null
//   when it is not on this machine or cannot be told (no `ss`: unknown, never a user).
// - `holders(links)`: Map link -> Map pid -> how ('r', 'w', 'rw' for a pipe, '' for a
//   socket), from one pass over every readable process's fds; a process whose fds cannot
//   be read is not named, so an empty answer proves nothing.

const { execFileSync } = require('node:child_process');
const procfs = require('./procfs.cjs');

const PTY_MASTERS = new Set(['/dev/ptmx', '/dev/pts/ptmx']);
const ACCEPTCON = 0x10000; // /proc/net/unix Flags: listening
const UNIX_CONNECTED = 3;
const TCP_ESTABLISHED = 0x01;
const TCP_LISTEN = 0x0a;

/** `HEX:PORT` from /proc/net/tcp as `ADDRHEX:PORT` in network order; an IPv4-mapped IPv6
 * address reads as its IPv4 one, so both ends of a connection compare equal. */
function tcpAddress(text) {
  const [host, port] = text.split(':');
  let out = '';
  for (let i = 0; i < host.length; i += 8) out += host.slice(i, i + 8).match(/../g).reverse().join('');
  if (out.length === 32 && out.startsWith('00000000000000000000ffff')) out = out.slice(24);
  return `${out.toLowerCase()}:${parseInt(port, 16)}`;
}

/** Map inode -> peer inode of every unix socket, from `ss -xan` (null: no ss here). */
function unixPeers() {
  let text;
  try {
    text = execFileSync('ss', ['-xan'], { encoding: 'latin1', timeout: 2000,
      stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, LC_ALL: 'C' } });
  } catch {
    return null;
  }
  const out = new Map();
  for (const line of text.split('\n').slice(1)) {
    // ... Local-Address Port Peer-Address Port: read from the right (a path may hold spaces)
    const f = line.trim().split(/\s+/);
    if (f.length >= 6) out.set(f[f.length - 3], f[f.length - 1]);
  }
  return out;
}

function reader() {
  let tables = null; // read once per look: the processes of one tree share a namespace
  let peers;

  function net(pid) {
    if (!tables) {
      const unix = procfs.unixTable(pid);
      const listening = new Set([...unix.values()].filter((r) => r.flags & ACCEPTCON && r.name)
        .map((r) => r.name));
      const tcp = procfs.tcpTable(pid).map((r) => ({ ...r, local: tcpAddress(r.local),
        remote: tcpAddress(r.remote) }));
      tables = { unix, listening, tcp };
    }
    return tables;
  }

  function unix(ino, link, { unix: table, listening }) {
    const row = table.get(ino);
    if (!row) return null;
    if (row.flags & ACCEPTCON) return { kind: 'unix', role: 'listen', near: link, far: null, name: row.name };
    if (row.state !== UNIX_CONNECTED || !row.name || !listening.has(row.name)) {
      return { kind: 'unix', role: 'client', near: link, far: null, name: row.name };
    }
    if (peers === undefined) peers = unixPeers();
    const peer = peers && peers.get(ino);
    return { kind: 'unix', role: 'accepted', near: link, far: peer && peer !== '0' ? `socket:[${peer}]` : null,
      name: row.name };
  }

  function tcp(ino, link, { tcp: rows }) {
    const row = rows.find((r) => r.ino === ino);
    if (!row) return null;
    if (row.state === TCP_LISTEN) return { kind: 'tcp', role: 'listen', near: link, far: null, name: '' };
    if (row.state !== TCP_ESTABLISHED) return null;
    const { local, remote } = row;
    const port = local.split(':')[1];
    // A listener on every address (0.0.0.0, or :: which takes IPv4 too) counts.
    const accepted = rows.some((r) => r.state === TCP_LISTEN &&
      (r.local === local || (/^0+:/.test(r.local) && r.local.split(':')[1] === port)));
    if (!accepted) return { kind: 'tcp', role: 'client', near: link, far: null, name: '' };
    const peer = rows.find((r) => r.state === TCP_ESTABLISHED && r.local === remote &&
      r.remote === local);
    return { kind: 'tcp', role: 'accepted', near: link, far: peer ? `socket:[${peer.ino}]` : null, name: '' };
  }

  function endpoints(pid) {
    const fds = procfs.fds(pid);
    if (fds === null) return null;
    const out = new Map(); // kind role near -> endpoint: one per open file, not per fd
    const add = (e) => { if (e) out.set(`${e.kind} ${e.role} ${e.near}`, e); };
    for (const [fd, link] of fds) {
      if (PTY_MASTERS.has(link)) {
        add({ kind: 'pty', role: 'master', near: link, far: null, name: link });
      } else if (link.startsWith('pipe:[')) {
        for (const end of procfs.fdMode(pid, fd) || '') {
          add({ kind: 'pipe', role: end, near: link, far: link, name: '' });
        }
      } else if (link.startsWith('socket:[')) {
        const ino = link.slice(8, -1);
        add(unix(ino, link, net(pid)) || tcp(ino, link, net(pid)));
      }
    }
    return [...out.values()];
  }

  function holders(links) {
    const out = new Map([...links].map((l) => [l, new Map()]));
    if (out.size === 0) return out;
    for (const st of procfs.table()) {
      for (const [fd, link] of procfs.fds(st.pid) || []) {
        const got = out.get(link);
        if (!got) continue;
        let how = got.get(st.pid) || '';
        if (link.startsWith('pipe:[')) {
          const mode = procfs.fdMode(st.pid, fd) || '';
          how = ['r', 'w'].filter((m) => how.includes(m) || mode.includes(m)).join('');
        }
        got.set(st.pid, how);
      }
    }
    return out;
  }

  return { endpoints, holders };
}

module.exports = { reader, tcpAddress };
