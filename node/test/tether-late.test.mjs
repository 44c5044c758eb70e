// The package's own tests of tether() called late: after awaits, a dynamic import, the
// host's death or the client's end. Run with `node --test test/` (Node 18+).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { join } from "node:path";

import { lines, run, script, until } from "./helpers.mjs";

// tether() called late: the server reads stdin (as its transport does) and awaits things
// before the call; whatever ended meanwhile is seen on attach, with the listener's reason.
const LATE = `
const server = { async close() { note("server.close"); } };
setInterval(() => {}, 1000);
const { once } = await import("node:events");
`;

test("tether() after a dynamic import, stdin at EOF from the start: shuts down at once", async () => {
  const s = script(`${LATE}
process.stdin.on("data", () => {});
await once(process.stdin, "end"); // EOF came and went before the package is even loaded
const { tether } = await import(PACKAGE);
tether(server, { onShutdown: (r) => note("hook " + r) });
note("attached");`, undefined, { late: true });
  const { done } = run(s.file, [], { stdio: ["ignore", "pipe", "pipe"] });
  const { code, stderr } = await done;
  assert.equal(code, 0, stderr);
  assert.deepEqual(lines(s.out), ["attached", "server.close", "hook stdin-end"]);
});

test("tether() after its host died, a held stdin and no EOF: adopted, shuts down at once", async () => {
  // 1. A host leads a process group of its own and starts the server in it (as Node's
  //    child_process and the TypeScript SDK's transport do); a FIFO opened read-write
  //    stands for a writer that outlives the host, so EOF never comes.
  // 2. The host is SIGKILLed while the server is still before its import; then the
  //    server loads the package and calls tether(): the ancestor it finds is whoever
  //    adopted it, but its group's leader is gone and its parent is outside the group.
  const s = script(`${LATE}
note("ready " + process.pid);
const { existsSync } = await import("node:fs");
while (!existsSync(${JSON.stringify("GO")})) await new Promise((r) => setTimeout(r, 10));
const { tether } = await import(PACKAGE);
tether(server, { onShutdown: (r) => note("hook " + r) });
note("attached");`, undefined, { late: true });
  const fifo = join(s.dir, "stdin.fifo");
  execFileSync("mkfifo", [fifo]);
  const { openSync, closeSync, writeFileSync } = await import("node:fs");
  const fd = openSync(fifo, "r+");
  const hostJs = `require("node:child_process").spawn(process.execPath, [${JSON.stringify(s.file)}],
    { stdio: ["inherit", "ignore", "inherit"], cwd: ${JSON.stringify(s.dir)} });
    setInterval(() => {}, 1000);`;
  const host = spawn(process.execPath, ["-e", hostJs],
    { detached: true, stdio: [fd, "ignore", "pipe"] });
  const hostGone = new Promise((r) => host.on("exit", r));
  let pid = 0;
  try {
    const ready = await until(() => lines(s.out).find((l) => l.startsWith("ready ")), "ready");
    pid = Number(ready.split(" ")[1]);
    host.kill("SIGKILL");
    await hostGone; // reaped: the group's leader is gone
    writeFileSync(join(s.dir, "GO"), "");
    await until(() => { try { process.kill(pid, 0); return false; } catch { return true; } },
      "the server's exit");
    assert.deepEqual(lines(s.out).slice(1), ["attached", "server.close", "hook host-gone"]);
  } finally {
    closeSync(fd);
    if (host.exitCode === null && host.signalCode === null) host.kill("SIGKILL");
    if (pid) try { process.kill(pid, "SIGKILL"); } catch { /* gone, as it should be */ }
  }
});

test("tether() after the client already closed stdin: shuts down at once", async () => {
  const s = script(`${LATE}
process.stdin.on("data", () => {});
note("reading");
await once(process.stdin, "close"); // the client closed; stdin is destroyed by now
const { tether } = await import(PACKAGE);
tether({ onShutdown: (r) => note("hook " + r) });
tether(server); // joins the first call
note("attached");`, undefined, { late: true });
  const { child, done } = run(s.file);
  await until(() => lines(s.out).includes("reading"), "reading");
  child.stdin.end();
  const { code, stderr } = await done;
  assert.equal(code, 0, stderr);
  assert.deepEqual(lines(s.out), ["reading", "attached", "server.close", "hook stdin-end"]);
});

test("tether() after stdout already failed (EPIPE): the next write's error shuts down", async () => {
  // Node keeps process.stdout open after EPIPE (not destroyed, not errored): the past
  // error leaves no state to read, and every later write fails again, into the listener.
  const s = script(`${LATE}
process.stdin.on("data", () => {});
process.stdout.on("error", () => {}); // the server's own: without one, EPIPE is uncaught
note("writing");
const failed = once(process.stdout, "error");
setInterval(() => process.stdout.write("x".repeat(1024) + "\\n"), 5);
const [err] = await failed;
note("stdout " + err.code);
const { tether } = await import(PACKAGE);
tether(server, { onShutdown: (r) => note("hook " + r) });`, undefined, { late: true });
  const { child, done } = run(s.file);
  await until(() => lines(s.out).includes("writing"), "writing");
  child.stdout.destroy();
  const { code } = await done;
  assert.equal(code, 0);
  assert.deepEqual(lines(s.out).slice(1), ["stdout EPIPE", "server.close", "hook stdout-error:EPIPE"]);
  child.stdin.end();
});

test("a live stdin is not a trigger: a late tether() waits for the real EOF", async () => {
  const s = script(`${LATE}
process.stdin.on("data", () => {});
await new Promise((r) => setTimeout(r, 50));
const { tether } = await import(PACKAGE);
tether(server, { onShutdown: (r) => note("hook " + r) });
note("attached");`, undefined, { late: true });
  const { child, done } = run(s.file);
  await until(() => lines(s.out).includes("attached"), "attached");
  assert.equal(child.exitCode, null);
  assert.deepEqual(lines(s.out), ["attached"]);
  child.stdin.end();
  assert.equal((await done).code, 0);
  assert.deepEqual(lines(s.out), ["attached", "server.close", "hook stdin-end"]);
});

test("importing the package installs no signal handler: before tether(), SIGTERM is " +
     "Node's default (the process dies of it, no hooks)", async () => {
  const s = script(`process.stdin.on("data", () => {}); setInterval(() => {}, 1000);
note("imported " + process.listenerCount("SIGTERM"));`);
  const { child, done } = run(s.file);
  await until(() => lines(s.out).length, "imported");
  child.kill("SIGTERM");
  const { code, signal } = await done;
  assert.deepEqual([code, signal], [null, "SIGTERM"]);
  assert.deepEqual(lines(s.out), ["imported 0"]);
  child.stdin.end();
});
