// The package's own tests: real processes for every trigger, the shutdown's order and
// bounds, and the exit status. Run with `node --test test/` (Node 18+).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { join } from "node:path";
import { createRequire } from "node:module";

import { tether, isLauncher, findHost } from "../index.mjs";
import { INDEX_CJS, PACKAGE_MACOS, lines, run, script, until } from "./helpers.mjs";

const require = createRequire(import.meta.url);

// A fake server: close() notes itself; stdin is read as a real transport would.
const SERVER = `
const server = { async close() { note("server.close"); } };
process.stdin.on("data", () => {});
setInterval(() => {}, 1000); // a keep-alive handle, as real servers have
`;

test("ESM and CommonJS entries are the same function", () => {
  assert.equal(require(INDEX_CJS).tether, tether);
  assert.equal(typeof require(INDEX_CJS).default, "function");
});

test("launchers are recognised, servers and hosts are not", () => {
  for (const argv of [["npx", "-y", "x"], ["node", "/usr/lib/node_modules/npm/bin/npx-cli.js", "x"],
    ["npm exec @scope/pkg        "], ["npm", "exec", "x"], ["sh", "-c", "node s.js; true"],
    ["/bin/bash", "-lc", "x"], ["pnpm", "dlx", "x"], ["bunx", "x"], ["bun", "x", "y"],
    ["uvx", "x"], ["uv", "tool", "run", "x"], ["cmd.exe", "/c", "x"], ["yarn", "dlx", "x"]]) {
    assert.equal(isLauncher(argv), true, argv.join(" "));
  }
  for (const argv of [["node", "server.js"], ["bash"], ["sh", "script.sh"], ["claude"],
    ["python", "-m", "host"], ["bun", "server.ts"], [], ["uv"]]) {
    assert.equal(isLauncher(argv), false, argv.join(" "));
  }
});

test("stdin EOF: server.close() first, then the hooks in order, then exit 0", async () => {
  const s = script(`${SERVER}
tether(server, { onShutdown: [async (r) => note("hook1 " + r), (r) => note("hook2 " + r)] });
note("ready");`);
  const { child, done } = run(s.file);
  await until(() => lines(s.out).includes("ready"), "ready");
  child.stdin.end();
  const { code } = await done;
  assert.equal(code, 0);
  assert.deepEqual(lines(s.out), ["ready", "server.close", "hook1 stdin-end", "hook2 stdin-end"]);
});

for (const [sig, n] of [["SIGTERM", 15], ["SIGINT", 2], ["SIGHUP", 1]]) {
  test(`${sig}: hooks run, exit status 128+${n}`, async () => {
    const s = script(`${SERVER}
tether(server, { onShutdown: (r) => note("hook " + r) });
note("ready");`);
    const { child, done } = run(s.file);
    await until(() => lines(s.out).includes("ready"), "ready");
    child.kill(sig);
    const { code } = await done;
    assert.equal(code, 128 + n);
    assert.deepEqual(lines(s.out).slice(1), ["server.close", `hook signal:${sig}`]);
    child.stdin.end();
  });
}

test("a hook that hangs is cut off within its share and the next still runs; " +
     "a hook that throws is reported in one stderr line", async () => {
  const s = script(`${SERVER}
tether(server, { timeoutMs: 600, onShutdown: [
  async function hang() { await new Promise(() => {}); },
  function boom() { throw new Error("db gone"); },
  (r) => note("last " + r),
] });
note("ready");`);
  const { child, done } = run(s.file);
  await until(() => lines(s.out).includes("ready"), "ready");
  child.stdin.end();
  const { code, stderr } = await done;
  assert.equal(code, 0);
  assert.deepEqual(lines(s.out).slice(1), ["server.close", "last stdin-end"]);
  const errs = stderr.trim().split("\n");
  assert.equal(errs.length, 2, stderr);
  assert.match(errs[0], /onShutdown hook 1 \(hang\) did not finish within its \d+ ms of the 600 ms/);
  assert.match(errs[1], /onShutdown hook 2 \(boom\) threw .*db gone/);
  // The deadline ended it, not the hang (which never settles): that it exited at all,
  // with the hang's cut-off said, is the proof; how soon is the machine's.
});

test("run once: EOF and SIGTERM together run the hooks once", async () => {
  const s = script(`${SERVER}
tether(server, { onShutdown: async (r) => { note("hook " + r); await new Promise((ok) => setTimeout(ok, 100)); } });
note("ready");`);
  const { child, done } = run(s.file);
  await until(() => lines(s.out).includes("ready"), "ready");
  child.stdin.end();
  await until(() => lines(s.out).some((l) => l.startsWith("hook")), "hook");
  child.kill("SIGTERM"); // a second trigger during the shutdown: exits at once, 143
  const { code } = await done;
  assert.equal(lines(s.out).filter((l) => l.startsWith("hook")).length, 1);
  assert.ok(code === 143 || code === 0, String(code));
});

test("no server object: tether({ onShutdown }) runs the hooks alone", async () => {
  const s = script(`process.stdin.on("data", () => {}); setInterval(() => {}, 1000);
tether({ onShutdown: (r) => note("hook " + r) });
note("ready");`);
  const { child, done } = run(s.file);
  await until(() => lines(s.out).includes("ready"), "ready");
  child.stdin.end();
  assert.equal((await done).code, 0);
  assert.deepEqual(lines(s.out), ["ready", "hook stdin-end"]);
});

test("a server.close() that throws does not stop the hooks", async () => {
  const s = script(`process.stdin.on("data", () => {}); setInterval(() => {}, 1000);
tether({ close() { throw new Error("already closed"); } }, { onShutdown: (r) => note("hook " + r) });
note("ready");`);
  const { child, done } = run(s.file);
  await until(() => lines(s.out).includes("ready"), "ready");
  child.stdin.end();
  const { code, stderr } = await done;
  assert.equal(code, 0);
  assert.deepEqual(lines(s.out), ["ready", "hook stdin-end"]);
  assert.match(stderr, /server.close\(\) threw .*already closed/);
});

test("the host is the first ancestor that is not a launcher (sh -c is skipped)",
  { skip: process.platform !== "linux" && "reads /proc" }, async () => {
    const s = script(`note(JSON.stringify(findHost()));`);
    const child = spawn("sh", ["-c", `"${process.execPath}" "${s.file}"; true`], { stdio: "ignore" });
    await new Promise((r) => child.on("exit", r));
    const found = JSON.parse(lines(s.out)[0]);
    assert.equal(found.host.pid, process.pid);
    assert.equal(found.chain.length, 1);
    assert.equal(found.chain[0].pid, child.pid);
    assert.ok(found.host.start.length > 0);
  });

test("host death while EOF never comes: the server ends (reason host-gone, exit 0)",
  { skip: process.platform !== "linux" && "a FIFO opened read-write is Linux behaviour" },
  async () => {
    // 1. a host (node) starts the server behind `sh -c` with stdin on a FIFO opened
    //    read-write: a writer stays open whatever happens, so EOF never comes.
    const s = script(`${SERVER}
tether(server, { onShutdown: (r) => note("hook " + r) });
note("ready");`);
    const fifo = join(s.dir, "stdin.fifo");
    execFileSync("mkfifo", [fifo]);
    const hostCode = `const fd = require("fs").openSync(${JSON.stringify(fifo)}, "r+");
require("child_process").spawn("sh", ["-c", ${JSON.stringify(`"${process.execPath}" "${s.file}"; true`)}], { stdio: [fd, "ignore", "ignore"] });
setInterval(() => {}, 1000);`;
    const host = spawn(process.execPath, ["-e", hostCode], { stdio: "ignore" });
    await until(() => lines(s.out).includes("ready"), "ready");
    // 2. SIGKILL the host; 3. the server notices and runs its hooks, then exits.
    host.kill("SIGKILL");
    await until(() => lines(s.out).includes("hook host-gone"), "the hook after host death");
    assert.deepEqual(lines(s.out), ["ready", "server.close", "hook host-gone"]);
  });

test("a dead stdout (EPIPE) shuts down with exit 0 instead of an uncaught error", async () => {
  const s = script(`${SERVER}
process.on("uncaughtException", (e) => { console.error("uncaught", e.message); });
setInterval(() => process.stdout.write("x".repeat(1024) + "\\n"), 10);
tether(server, { onShutdown: (r) => note("hook " + r) });
note("ready");`);
  const { child, done } = run(s.file);
  await until(() => lines(s.out).includes("ready"), "ready");
  child.stdout.destroy();
  child.stderr.destroy();
  const { code } = await done;
  assert.equal(code, 0);
  assert.match(lines(s.out).at(-1), /^hook (stdout|stderr)-error:EPIPE$/);
  child.stdin.end();
});

test("bad arguments are refused with a clear TypeError", () => {
  assert.throws(() => tether({ close: 1 }, {}), /close\(\)/);
});

test("a reused pid is not the host: same pid, another start time reads as gone",
  { skip: (process.platform !== "linux" || PACKAGE_MACOS) &&
    "elsewhere the start time is compared every few polls" },
  () => {
    const hostlib = require("../lib/process/host.cjs");
    const me = hostlib.readProcess(process.pid);
    assert.equal(hostlib.watcher(me)(), true);
    assert.equal(hostlib.watcher({ ...me, start: `${me.start}1` })(), false);
    assert.equal(hostlib.readProcess(2 ** 22 + 1), null); // above pid_max: no such process
  });
