// mcp-tether/client: the drop-in StdioClientTransport. Unit tests of its surface, then its
// tree's end behind each supervisor (none, the Node watchdog): a setsid helper, a server
// that exits by itself, a launcher that hands the stdio over, the watchdog's own usage.
// Stress in client-race.test.mjs, real SDK hosts in client-hosts.test.mjs; the readers
// of processes they share in procs.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

import { StdioClientTransport, getDefaultEnvironment } from "../client.mjs";
import { PACKAGE_MACOS, PKG, SIM_ENV, tmp, until } from "./helpers.mjs";
import { LINUX, STUBBORN, alive, descendants, recorded } from "./procs.mjs";

const require = createRequire(import.meta.url);

// ---- the surface ---------------------------------------------------------------------

test("ESM and CommonJS entries are the same class; the package exports ./client", () => {
  assert.equal(require("../client.cjs").StdioClientTransport, StdioClientTransport);
  const pkg = JSON.parse(readFileSync(join(PKG, "package.json"), "utf8"));
  assert.equal(pkg.exports["./client"].import.default, "./client.mjs");
  assert.equal(pkg.exports["./client"].require.default, "./client.cjs");
});

test("it looks like the SDK's stdio transport to the 2.x Client (stdio kind, own _dispose)", () => {
  const t = new StdioClientTransport({ command: "node", stderr: "pipe" });
  assert.ok("stderr" in t && "pid" in t);
  assert.ok(Object.prototype.hasOwnProperty.call(StdioClientTransport.prototype, "_dispose"));
  assert.equal(t._serverParams.command, "node");
  assert.ok(t.stderr, "a PassThrough before start(), as in the SDK");
  assert.equal(t.pid, null);
  assert.equal(t.supervisor, null);
});

test("the default environment is the SDKs' short list", () => {
  const env = getDefaultEnvironment();
  for (const k of Object.keys(env)) assert.ok(["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"].includes(k));
});

test("bad options are refused at once with a clear error", () => {
  assert.throws(() => new StdioClientTransport({ command: "x", graceMs: -1 }), /graceMs/);
  assert.throws(() => new StdioClientTransport({ command: "x", termGraceMs: NaN }), /termGraceMs/);
});

test("a missing command rejects start() with spawn's ENOENT, before anything runs", async () => {
  for (const supervisor of ["node", "none"]) {
    const t = new StdioClientTransport({ command: "no-such-server-xyz", supervisor });
    let seen = null;
    t.onerror = (e) => { seen = e; };
    await assert.rejects(t.start(), (e) => e.code === "ENOENT" && /spawn no-such-server-xyz ENOENT/.test(e.message));
    assert.equal(seen?.code, "ENOENT", supervisor);
  }
});

test("framing: messages split across chunks, CRLF, a stray log line skipped", async () => {
  const t = new StdioClientTransport({ command: process.execPath, supervisor: "node", graceMs: 0,
    args: ["-e", `process.stdout.write('log line\\n{"jsonrpc":"2.0","id":1,'); ` +
      `setTimeout(() => process.stdout.write('"result":{}}\\r\\n{"jsonrpc":"2.0","method":"x"}\\n'), 50)`] });
  const got = [];
  const errors = [];
  t.onmessage = (m) => got.push(m);
  t.onerror = (e) => errors.push(e);
  const closed = new Promise((r) => { t.onclose = r; });
  await t.start();
  await closed;
  assert.deepEqual(got, [{ jsonrpc: "2.0", id: 1, result: {} }, { jsonrpc: "2.0", method: "x" }]);
  assert.deepEqual(errors, []);
  await t.close();
});

test("send() before start() rejects with Not connected", async () => {
  await assert.rejects(new StdioClientTransport({ command: "x" }).send({ jsonrpc: "2.0", method: "m" }), /Not connected/);
});

test("supervisor none: close() still ends the whole tree before it resolves, and a " +
     "second close() waits for the same end", { skip: !LINUX }, async () => {
  const pids = join(tmp(), "pids");
  const t = new StdioClientTransport({ command: "sh", supervisor: "none", graceMs: 200, termGraceMs: 200,
    args: ["-c", `${process.execPath} ${STUBBORN} --helper; true`], env: { STUBBORN_PIDS: pids, ...SIM_ENV } });
  await t.start();
  await until(() => recorded(pids).length === 2, "server and helper");
  const tree = [...descendants(process.pid), ...recorded(pids)];
  await Promise.all([t.close(), t.close().then(() => assert.deepEqual(alive(recorded(pids)), []))]);
  assert.deepEqual(alive(tree), []);
});

test("a server that exits by itself: the watchdog ends what is left of its tree (a setsid " +
     "helper) and the transport closes", { skip: !LINUX }, async () => {
  const pids = join(tmp(), "pids");
  const t = new StdioClientTransport({ command: "sh", supervisor: "node", env: { STUBBORN_PIDS: pids, ...SIM_ENV },
    // The server's stdout goes to /dev/null: a background job that kept the stdio would
    // be a launcher's hand-over, guarded until the lifeline ends (the next test).
    args: ["-c", `${process.execPath} ${STUBBORN} --helper >/dev/null & while [ "$(wc -l < ${pids} 2>/dev/null)" != 2 ]; do sleep 0.05; done; exit 7`] });
  const closed = new Promise((r) => { t.onclose = r; });
  await t.start();
  if (PACKAGE_MACOS) {
    // macOS's ps shows no descriptors: whether the helper holds the server's stdio is
    // unknown, so the watchdog guards it as it would a launcher's real server (never
    // ending what may be the server) until the host closes the transport.
    await until(() => recorded(pids).length === 2, "server and helper");
    await t.close();
    assert.deepEqual(alive(recorded(pids)), []);
    return;
  }
  await closed; // without the end of the rest, the helper would keep the watchdog (and this) waiting
  assert.equal(recorded(pids).length, 2);
  assert.deepEqual(alive(recorded(pids)), []);
  await t.close();
});

test("a launcher that hands the stdio over and exits: the holder is guarded, and ended " +
     "by close()", { skip: !LINUX }, async () => {
  const pids = join(tmp(), "pids");
  const t = new StdioClientTransport({ command: "sh", supervisor: "node", graceMs: 200, termGraceMs: 200,
    // sh gives a background job /dev/null for stdin unless told otherwise: fd 4 passes it on.
    env: { STUBBORN_PIDS: pids, ...SIM_ENV }, args: ["-c", `exec 4<&0; ${process.execPath} ${STUBBORN} <&4 4<&- & exit 0`] });
  let closedEarly = false;
  t.onclose = () => { closedEarly = true; };
  await t.start();
  await until(() => recorded(pids).length === 1, "the server");
  const reply = new Promise((r) => { t.onmessage = r; });
  await t.send({ jsonrpc: "2.0", id: 1, method: "tools/list" });
  const answer = await Promise.race([reply, new Promise((r) => setTimeout(r, 20000, null))]);
  assert.deepEqual(answer?.result, { tools: [] }, "the handed-over server still answers");
  assert.equal(closedEarly, false);
  await t.close();
  assert.deepEqual(alive(recorded(pids)), []);
});

test("the watchdog: --unset keeps its own variable from the server; bad usage exits 2, " +
     "a missing command 127", async () => {
  const WATCHDOG = join(PKG, "lib", "terminate", "watchdog.cjs");
  const run = (args, env = {}) => new Promise((resolve) => {
    const p = spawn(process.execPath, [WATCHDOG, ...args], { stdio: ["ignore", "pipe", "ignore", "pipe"],
      env: { ...process.env, ...env } });
    let out = "";
    p.stdout.on("data", (d) => { out += d; });
    p.on("close", (code) => resolve({ code, out }));
  });
  const echo = ["--", "sh", "-c", 'echo "X=${X-unset}"'];
  assert.deepEqual(await run(["0", "0", "--unset", "X", ...echo], { X: "1" }), { code: 0, out: "X=unset\n" });
  assert.deepEqual(await run(["0", "0", ...echo], { X: "1" }), { code: 0, out: "X=1\n" });
  assert.equal((await run(["0", "0", "--bogus", "--", "true"])).code, 2);
  assert.equal((await run(["0", "0", "--", "no-such-server-xyz"])).code, 127);
});
