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
//   then its descendants (lib/terminate/descendants.cjs). A later `tether(server, {...})` joins:
//   its server.close() and hooks run first, with its `timeoutMs`.
// - stdin is only listened to (`end`, `close`, `error`), never read: not one protocol
//   byte is taken from the server; EOF is seen once the server's transport reads. Nothing
//   is written to stdout.
// - A launcher that is itself Node (npx, npm exec, pnpm) is not armed and passes the
//   preload on to the server it starts. The server, once armed, takes the preload out of
//   NODE_OPTIONS and execArgv: its own child processes (a worker, a `node` helper) are
//   not tethered to it behind its back; its shutdown ends them anyway.

const { isMainThread } = require('node:worker_threads');
const { preload } = require('./lib/tether/arm.cjs');
const { isLauncher } = require('./lib/process/host.cjs');

const path = require('node:path');
const { pathToFileURL } = require('node:url');

const FLAGS = ['--import', '--require', '-r'];
// This preload, however it was named: the package's specifier, or one of these files by
// path or file: URL.
const OURS = new Set(['mcp-tether/register', ...['register.cjs', 'register.mjs']
  .flatMap((f) => [path.join(__dirname, f), pathToFileURL(path.join(__dirname, f)).href])]);

function isOurs(value) {
  const v = String(value).replace(/^(["'])(.*)\1$/, '$2');
  return OURS.has(v) || OURS.has(path.resolve(v)) ||
    /(^|[\\/])node_modules[\\/]mcp-tether[\\/]register(\.[cm]?js)?$/.test(v);
}

/** Option words with this preload's flags taken out (`--import=x`, `-r x`, ...). */
function withoutPreloadWords(words) {
  const out = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i];
    const eq = w.indexOf('=');
    if (eq > 0 && FLAGS.includes(w.slice(0, eq)) && isOurs(w.slice(eq + 1))) continue;
    if (FLAGS.includes(w) && i + 1 < words.length && isOurs(words[i + 1])) {
      i += 1;
      continue;
    }
    out.push(w);
  }
  return out;
}

function withoutPreload(text) {
  return withoutPreloadWords(String(text).trim().split(/\s+/).filter(Boolean)).join(' ');
}

function dropPreload() {
  const opts = process.env.NODE_OPTIONS;
  if (opts !== undefined) {
    const rest = withoutPreload(opts);
    if (rest) process.env.NODE_OPTIONS = rest;
    else delete process.env.NODE_OPTIONS;
  }
  const kept = withoutPreloadWords(process.execArgv);
  process.execArgv.splice(0, process.execArgv.length, ...kept);
}

// A worker thread (Node loads the preload there too) is not the process: only the main
// thread arms, and a worker's exit ends nothing.
if (isMainThread && !isLauncher(process.argv)) {
  preload();
  dropPreload();
}

module.exports = { withoutPreload };
