'use strict';
// The environment marks of a tree: which trees a process was started in, and which it was
// kept out of on purpose. The same marks, with the same meaning, as the Python package
// (src/mcp_tether/proc/mark.py), so that a tree of either language reads the other's.
//
// Guarantees:
// - A tree's token is its root's identity, `PID:START` (START: /proc/<pid>/stat field 22 on
//   Linux; on macOS `ps`'s lstart as whole seconds since the epoch, lib/platform/ps.cjs).
// - MCP_TETHER_TREE lists (comma-separated) the tokens of the trees a process was started
//   in: tether() adds its own to process.env when armed, the watchdog to its server's
//   environment; every process inherits the list from its parent.
// - MCP_TETHER_OUTSIDE lists the trees a process was kept out of: `outsideTether(env)`
//   names every tree this process is in and this process itself (a tree it roots, or
//   will once tether() arms), so the child and what it starts are left running when
//   those trees end. A tree the child roots itself is not named: its own children still
//   end with it.

const { identify } = require('./identity.cjs');

const TREE = 'MCP_TETHER_TREE';
const OUTSIDE = 'MCP_TETHER_OUTSIDE';

const token = (ident) => `${ident.pid}:${ident.start}`;

/** The tokens of a mark's value. */
function tokens(value) {
  return String(value || '').split(',').filter(Boolean);
}

/** `list` (comma-separated tokens, or undefined) with `more` added once each: a tree inside
 * another (a tethered server behind the watchdog) keeps the outer tree's token too. */
function addMark(list, ...more) {
  const out = [];
  for (const t of [...tokens(list), ...more.flatMap(tokens)]) if (!out.includes(t)) out.push(t);
  return out.join(',');
}

/** This process's token, or null where its identity cannot be read. */
function ownToken() {
  const me = identify(process.pid);
  return me ? token(me) : null;
}

/**
 * An environment for a child the server starts for its user: a copy of `env` (default:
 * process.env) marked so that no tree this process is in ends the child or what it starts.
 */
function outsideTether(env = process.env) {
  const out = { ...env };
  const inside = addMark(process.env[TREE], env[TREE]);
  if (inside) out[TREE] = inside; // kept: a tree that finds its members by it names the child
  const mine = ownToken();
  out[OUTSIDE] = addMark(env[OUTSIDE], inside, ...(mine ? [mine] : []));
  return out;
}

module.exports = { TREE, OUTSIDE, token, tokens, addMark, ownToken, outsideTether };
