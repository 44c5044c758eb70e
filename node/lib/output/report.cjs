'use strict';
// The shutdown as data, for whoever launched the server and asked (the probe): one JSON
// line appended to the file MCP_TETHER_SHUTDOWN_REPORT names, so that no reader searches
// a human message for what happened.
//
// Guarantees (version 1):
// - Without the variable nothing is written. With it, exactly one line per shutdown that
//   ran through tether(), written after the descendants' ladder and before the exit:
//   `{"version":1,"pid":N,"start":"<stat field 22>"|null,"reason":"stdin-end",
//   "status":0,"children":{"found":N,"ended_by":"sigterm"|"sigkill"|"none"|
//   "none-found"|"unknown","survivors":[{pid,start}],"left":[{pid,start,why}]},
//   "armed":{"by":"tether()"|"preload","at":N|null}}` ("none": something outlived
//   SIGKILL; "unknown": this platform cannot list descendants; `left`: what was left
//   running for the user, lib/process/leave.cjs's `why`). `armed.at` is when the tether armed
//   (and marked the environment its later children inherit), on the clock process start
//   times are read on (lib/platform/platform.cjs `processClock`): a descendant that started before
//   it carries no mark, and once it leaves the tree no shutdown can find it.
// - One synchronous write with O_APPEND (lines of one file from several processes of
//   one tree do not interleave); a file that cannot be written costs one debug line.
// - Never stdout; the variable stays in the environment (a tethered child writes its own
//   line, under its own pid).

const fs = require('node:fs');
const { identify } = require('../process/identity.cjs');
const { say } = require('./log.cjs');

const ENV = 'MCP_TETHER_SHUTDOWN_REPORT';
const VERSION = 1;

function write({ reason, status, children, armed }) {
  const file = process.env[ENV];
  if (!file) return;
  const me = identify(process.pid);
  const line = JSON.stringify({ version: VERSION, pid: process.pid, start: me ? me.start : null,
    reason, status, children, armed }) + '\n';
  try {
    fs.appendFileSync(file, line);
  } catch (err) {
    say('debug', `${ENV}: not written (${err.code || err.message})`);
  }
}

module.exports = { write, ENV, VERSION };
