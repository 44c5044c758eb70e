'use strict';
// Diagnostics of the package (tether(), the transport and its watchdog): single synchronous
// writes to fd 2, tagged with the pid, that ignore a dead stderr; never stdout. The level
// comes from MCP_TETHER_LOG (debug, info, warning (default), quiet), as everywhere in
// mcp-tether.

const fs = require('node:fs');

const LEVELS = { debug: 10, info: 20, warning: 30, error: 40, quiet: 100 };

function threshold(env = process.env) {
  return LEVELS[String(env.MCP_TETHER_LOG || 'warning').trim().toLowerCase()] ?? 30;
}

const current = threshold();

/** An error as one short line: the first line of its stack, or `Name: message`. */
function oneLine(err) {
  const text = err && err.stack ? String(err.stack).split('\n')[0]
    : err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return text.replace(/\s+/g, ' ').slice(0, 300);
}

// What a terminal would obey: C0 and C1 controls, DEL, the bidirectional overrides.
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `text` for one terminal line: every control character shown as an escape (`\x1b`,
 * `\n`), never sent, as the Python package's escape.py `terminal` does. */
function shown(text) {
  return String(text).replace(CONTROLS, (c) => {
    const n = c.charCodeAt(0);
    if (n === 9) return '\\t';
    if (n === 10) return '\\n';
    if (n === 13) return '\\r';
    return n <= 0xff ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u${n.toString(16).padStart(4, '0')}`;
  });
}

function say(level, text, who = 'mcp-tether') {
  if (LEVELS[level] < current) return;
  try {
    fs.writeSync(2, `${who}[${process.pid}]: ${text}\n`);
  } catch {
    // stderr is gone: nobody is left to tell.
  }
}

module.exports = { say, oneLine, shown, threshold, LEVELS };
