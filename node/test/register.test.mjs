// The tree's end and the preload (mcp-tether/register): real processes, watched by pid +
// start time. Run with `node --test test/` (Node 18+; the tree tests need Linux /proc).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

import { INDEX_MJS, PACKAGE_MACOS, PKG, lines, run, script, tmp, until } from "./helpers.mjs";

const require = createRequire(import.meta.url);
const LINUX = process.platform === "linux";
const REGISTER_MJS = join(PKG, "register.mjs");
const REGISTER_CJS = join(PKG, "register.cjs");

function stat(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, "latin1");
    const rest = f.slice(f.lastIndexOf(")") + 2).split(" ");
    return rest[0] === "Z" ? null : { pid, start: rest[19] };
  } catch {
    return null;
  }
}

const alive = (ids) => ids.filter((i) => stat(i.pid)?.start === i.start);

// A server whose children are a forgotten `sleep` and a `sleep` in a session of its own
// (setsid); it notes their pids, then "ready".
const KIDS = `
import { spawn } from "node:child_process";
const a = spawn("sleep", ["1000"], { stdio: "ignore" });
const b = spawn("sleep", ["1000"], { stdio: "ignore", detached: true });
note("kids " + a.pid + " " + b.pid);
process.stdin.on("data", () => {});
setInterval(() => {}, 1000);
`;

function kids(out) {
  const line = lines(out).find((l) => l.startsWith("kids "));
  return line.split(" ").slice(1).map(Number).map((pid) => stat(pid)).filter(Boolean);
}

test("tether(): stdin EOF ends the server's children too, a setsid one included, after " +
     "the hooks", { skip: !LINUX && "reads /proc" }, async () => {
  const s = script(`${KIDS}
tether({ close() { note("server.close"); } }, { onShutdown: () => note("hook") });
note("ready");`);
  const { child, done } = run(s.file);
  await until(() => lines(s.out).includes("ready"), "ready");
  const ids = kids(s.out);
  assert.equal(ids.length, 2);
  child.stdin.end();
  assert.equal((await done).code, 0);
  assert.deepEqual(alive(ids), []);
  assert.deepEqual(lines(s.out).slice(-2), ["server.close", "hook"]);
});

test("tether(): the process's own process.exit still SIGTERMs its children on the way out",
  { skip: !LINUX && "reads /proc" }, async () => {
    const s = script(`${KIDS}
tether(null);
process.stdin.on("end", () => process.exit(3));
note("ready");`);
    const { child, done } = run(s.file);
    await until(() => lines(s.out).includes("ready"), "ready");
    const ids = kids(s.out);
    child.stdin.end();
    assert.equal((await done).code, 3);
    await until(() => alive(ids).length === 0, "the children to go");
  });

for (const [flag, file] of [["--import", REGISTER_MJS], ["--require", REGISTER_CJS]]) {
  test(`node ${flag} register: a SIGTERM before any tether() ends the process and its ` +
       "children (143)", { skip: !LINUX && "reads /proc" }, async () => {
    // No line at all: the preload alone.
    const s = script(`${KIDS}
note("ready");`, tmp(), { late: true });
    const { child, done } = run(s.file, [], { execArgv: undefined,
      env: { ...process.env, NODE_OPTIONS: `${flag}=${file}` } });
    await until(() => lines(s.out).includes("ready"), "ready");
    const ids = kids(s.out);
    child.kill("SIGTERM");
    assert.equal((await done).code, 143);
    assert.deepEqual(alive(ids), []);
    child.stdin.end();
  });
}

test("register: a later tether(server, { onShutdown }) joins, its close() and hooks run",
  async () => {
    const s = script(`process.stdin.on("data", () => {}); setInterval(() => {}, 1000);
const { tether } = await import(PACKAGE);
const t = tether({ close() { note("server.close"); } }, { onShutdown: (r) => note("hook " + r) });
note("preloaded " + t.preloaded);
note("ready");`, tmp(), { late: true });
    const { child, done } = run(s.file, [], { env: { ...process.env, NODE_OPTIONS: `--import=${REGISTER_MJS}` } });
    await until(() => lines(s.out).includes("ready"), "ready");
    child.stdin.end();
    assert.equal((await done).code, 0);
    assert.deepEqual(lines(s.out), ["preloaded true", "ready", "server.close", "hook stdin-end"]);
  });

test("register: every stdin byte reaches the server, and its children do not inherit the " +
     "preload", async () => {
  const s = script(`import { execFileSync } from "node:child_process";
note("child NODE_OPTIONS=" + execFileSync(process.execPath, ["-e", "process.stdout.write(String(process.env.NODE_OPTIONS))"]));
note("execArgv=" + JSON.stringify(process.execArgv));
let got = "";
process.stdin.on("data", (d) => { got += d; });
process.stdin.on("end", () => note("got " + got.length));
note("ready");`, tmp(), { late: true });
  const { child, done } = run(s.file, ["x"], {
    env: { ...process.env, NODE_OPTIONS: `--max-old-space-size=200 --import=${REGISTER_MJS}` } });
  child.stdin.write("a".repeat(100000));
  child.stdin.end();
  assert.equal((await done).code, 0);
  assert.deepEqual(lines(s.out).filter((l) => !l.startsWith("ready")),
    ["child NODE_OPTIONS=--max-old-space-size=200", "execArgv=[]", "got 100000"]);
});

test("register: a launcher that is itself Node (npx-cli.js) is not armed", () => {
  const { isLauncher } = require("../index.cjs");
  assert.equal(isLauncher([process.execPath, "/usr/lib/node_modules/npm/bin/npx-cli.js", "x"]), true);
  const { withoutPreload } = require("../register.cjs");
  assert.equal(withoutPreload("--import=mcp-tether/register --inspect"), "--inspect");
  assert.equal(withoutPreload("-r /a/node_modules/mcp-tether/register.cjs"), "");
  assert.equal(withoutPreload("--import=other/register"), "--import=other/register");
});

test("the shutdown record: one JSON line in MCP_TETHER_SHUTDOWN_REPORT's file",
  { skip: !LINUX && "reads /proc" }, async () => {
    const dir = tmp();
    const file = join(dir, "records");
    writeFileSync(file, "");
    const s = script(`${KIDS}
tether(null);
note("ready");`, dir);
    const { child, done } = run(s.file, [], { env: { ...process.env, MCP_TETHER_SHUTDOWN_REPORT: file } });
    await until(() => lines(s.out).includes("ready"), "ready");
    child.kill("SIGINT");
    assert.equal((await done).code, 130);
    const [rec, ...rest] = lines(file).map((l) => JSON.parse(l));
    assert.deepEqual(rest, []);
    assert.equal(rec.version, 1);
    assert.equal(rec.pid, child.pid);
    assert.equal(rec.reason, "signal:SIGINT");
    assert.equal(rec.status, 130);
    assert.equal(rec.children.found, 2);
    assert.equal(rec.children.ended_by, "sigterm");
    assert.deepEqual(rec.children.survivors, []);
    // When it armed, on the clock start times are read on (Linux: seconds since boot, as
    // /proc counts; macOS: since the epoch, as ps's lstart gives them, whole seconds): no
    // earlier than the process's own start, no later than now.
    assert.equal(rec.armed.by, "tether()");
    if (PACKAGE_MACOS) {
      assert.ok(rec.armed.at >= Number(rec.start) && rec.armed.at <= Date.now() / 1000,
        JSON.stringify(rec));
    } else {
      const hz = 100; // USER_HZ, the unit of /proc/<pid>/stat start times
      const uptime = Number(readFileSync("/proc/uptime", "latin1").split(" ")[0]);
      assert.ok(rec.armed.at >= Number(rec.start) / hz - 0.01 && rec.armed.at <= uptime,
        JSON.stringify(rec));
    }
  });

test("register: a worker thread's exit ends nothing; the main thread alone is armed",
  { skip: !LINUX && "reads /proc" }, async () => {
    const s = script(`${KIDS}
const { Worker } = await import("node:worker_threads");
// The worker loads the preload too, as one started with the process's execArgv would.
const w = new Worker(${JSON.stringify(`require(${JSON.stringify(REGISTER_CJS)})`)}, { eval: true });
w.on("exit", () => note("worker gone"));
note("ready");`, tmp(), { late: true });
    const { child, done } = run(s.file, [], { env: { ...process.env, NODE_OPTIONS: `--import=${REGISTER_MJS}` } });
    await until(() => lines(s.out).includes("worker gone"), "the worker's exit");
    const ids = kids(s.out);
    assert.equal(alive(ids).length, 2, "the worker's exit left the process's children alone");
    child.stdin.end();
    assert.equal((await done).code, 0);
    assert.deepEqual(alive(ids), []);
  });
