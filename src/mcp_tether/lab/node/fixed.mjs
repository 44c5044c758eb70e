// Fixture `fixed`: the `timer` fixture made right by hand, without mcp-tether.
//
// It keeps its 100 ms timer, yet ends promptly on each of:
//   (a) stdin 'end' or 'close' (EOF; the SDK transport listens to neither), or 'error';
//   (b) SIGTERM, SIGINT or SIGHUP;
//   (c) parent death: process.ppid compared with the original every 200 ms (an unref'd
//       timer, so the watch alone never keeps the process alive).
// All funnel into one run-once shutdown(): clear the timers, log `event=shutdown` as the
// last act, process.exit(0), or 128+N after signal N.

import process from "node:process";

import { log, makeServer, serve } from "./common.mjs";

const PARENT_POLL_MS = 200;
const SIGNALS = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };

const originalPpid = process.ppid; // before any await: the parent may die meanwhile
const server = makeServer("fixed");
let ticker;
let parentWatch;
let done = false;

function shutdown(reason, code = 0) {
  if (done) return;
  done = true;
  clearInterval(ticker);
  clearInterval(parentWatch);
  log("shutdown", { reason, code });
  process.exit(code);
}

for (const [name, signum] of Object.entries(SIGNALS)) {
  process.on(name, () => shutdown(`signal:${name}`, 128 + signum));
}
// Listeners first, then connect: an EOF that is already pending must not slip past.
process.stdin.on("end", () => shutdown("stdin_end"));
process.stdin.on("close", () => shutdown("stdin_close"));
process.stdin.on("error", (err) => shutdown(`stdin_error:${err.code ?? "unknown"}`));
await serve(server);

ticker = setInterval(() => {}, 100);
// process.ppid is a live getter (uv_os_getppid). An orphan is reparented to init or a
// subreaper, so any change means the original parent is gone, including before we got here.
parentWatch = setInterval(() => {
  if (process.ppid !== originalPpid) shutdown("parent_gone");
}, PARENT_POLL_MS);
parentWatch.unref();
if (process.ppid !== originalPpid) shutdown("parent_gone");
log("ready", { ppid: originalPpid });
