'use strict';
// The transport's own constructor options, beyond the SDK's: the ladder's two waits.
//
// Guarantees:
// - `graceMs` (stdin closed -> SIGTERM) and `termGraceMs` (SIGTERM -> SIGKILL) default to
//   the spec's 2 s each (lib/terminate/ladder.cjs); anything but a finite non-negative
//   number of ms is refused with a RangeError when the transport is made, never at close().

const { GRACE_MS, TERM_GRACE_MS } = require('../terminate/ladder.cjs');

function nonNegative(name, value, dflt) {
  const v = value ?? dflt;
  if (!(Number.isFinite(v) && v >= 0)) {
    throw new RangeError(`mcp-tether: ${name} must be a non-negative number of ms, got ${value}`);
  }
  return v;
}

/** `{graceMs, termGraceMs}` of the server parameters, checked. */
function ladderTimes(server) {
  return {
    graceMs: nonNegative('graceMs', server.graceMs, GRACE_MS),
    termGraceMs: nonNegative('termGraceMs', server.termGraceMs, TERM_GRACE_MS),
  };
}

module.exports = { ladderTimes };
