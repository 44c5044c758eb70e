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

function say(level, text, who = 'mcp-tether') {
  if (LEVELS[level] < current) return;
  try {
    fs.writeSync(2, `${who}[${process.pid}]: ${text}\n`);
  } catch {
    // stderr is gone: nobody is left to tell.
  }
}

module.exports = { say, oneLine, threshold, LEVELS };
