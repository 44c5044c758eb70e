'use strict';
// mcp-tether/register: tether a Node MCP server with no code change, armed before any of
// its code runs.
//
//   node --require mcp-tether/register server.js          (CommonJS)
//   node --import mcp-tether/register server.js           (ESM; register.mjs)
//   NODE_OPTIONS=--import=mcp-tether/register             (in a host's config entry)
//
// Guarantees:
// - The same triggers as tether() (stdin EOF, a dead stdout, SIGTERM/SIGINT/SIGHUP, the
//   host's death), armed now: a signal that comes while the server is still importing
//   its SDK runs the shutdown instead of Node's default death. Each ends the process and
//   then its descendants (lib/descendants.cjs). A later `tether(server, {...})` joins:
//   its server.close() and hooks run first, with its `timeoutMs`.
// - stdin is only listened to (`end`, `close`, `error`), never read: not one protocol
//   byte is taken from the server; EOF is seen once the server's transport reads. Nothing
//   is written to stdout.
// - A launcher that is itself Node (npx, npm exec, pnpm) is not armed and passes the
//   preload on to the server it starts. The server, once armed, takes the preload out of
//   NODE_OPTIONS and execArgv: its own child processes (a worker, a `node` helper) are
//   not tethered to it behind its back; its shutdown ends them anyway.

const { _arm, isLauncher } = require('./index.cjs');

// `--import=mcp-tether/register`, `-r /abs/node_modules/mcp-tether/register.cjs`, ...
const PRELOAD = /(?:^|\s)(?:--import|--require|-r)(?:=|\s+)(["']?)[^\s"']*mcp-tether[\\/]register(?:\.[cm]?js)?\1(?=\s|$)/g;

function withoutPreload(text) {
  return String(text).replace(PRELOAD, '').replace(/\s+/g, ' ').trim();
}

function dropPreload() {
  const opts = process.env.NODE_OPTIONS;
  if (opts !== undefined) {
    const rest = withoutPreload(opts);
    if (rest) process.env.NODE_OPTIONS = rest;
    else delete process.env.NODE_OPTIONS;
  }
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (/^(--import|--require|-r)=/.test(flag) && withoutPreload(flag) === '') {
      argv.splice(i--, 1);
    } else if (['--import', '--require', '-r'].includes(flag) && i + 1 < argv.length &&
        withoutPreload(`${flag} ${argv[i + 1]}`) === '') {
      argv.splice(i--, 2);
    }
  }
}

if (!isLauncher(process.argv)) {
  _arm();
  dropPreload();
}

module.exports = { withoutPreload };
