// mcp-tether/client: the drop-in StdioClientTransport. Unit tests of its surface, then real
// hosts on both SDK client lines whose EOF-ignoring server runs behind `sh -c '...; true'`
// or an npx-style Node wrapper (with a setsid helper outside its group), ended by close(),
// by process.exit() and by SIGKILL, behind each supervisor: nothing may be left, checked
// by pid + start time from here. The SDK hosts need MCP_TETHER_NODE_FIXTURES (a folder
// whose node_modules holds @modelcontextprotocol/sdk and @modelcontextprotocol/client;
// tests/test_node_client.py passes it) and skip without it.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { readFileSync, readdirSync, existsSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

import { StdioClientTransport, getDefaultEnvironment } from "../client.mjs";
import { PACKAGE_MACOS, PKG, SIM_ENV, tmp, until } from "./helpers.mjs";

const require = createRequire(import.meta.url);
const FIXTURES = join(PKG, "test", "fixtures");
const STUBBORN = join(FIXTURES, "stubborn.cjs");
const NPXISH = join(FIXTURES, "npxish.cjs");
const HOST = join(FIXTURES, "host.mjs");
const SDK_DIR = process.env.MCP_TETHER_NODE_FIXTURES;
const LINUX = process.platform === "linux";
const GUARD = (() => {
  try {
    return execFileSync("sh", ["-c", "command -v mcp-tether"], { encoding: "utf8" }).trim();
  } catch {
    return "";
  }
})();

// ---- reading processes, independently of the package's own tree code ----------------

function stat(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "latin1");
    const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { pid, state: f[0], ppid: Number(f[1]), start: f[19] };
  } catch {
    return null;
  }
}

/** Every descendant of `pid` now, as {pid, start}. */
function descendants(pid) {
  const rows = readdirSync("/proc").filter((n) => /^\d+$/.test(n)).map((n) => stat(Number(n)))
    .filter(Boolean);
  const out = [];
  const queue = [pid];
  while (queue.length) {
    const p = queue.shift();
    for (const r of rows) if (r.ppid === p && r.state !== "Z") { out.push(r); queue.push(r.pid); }
  }
  return out;
}

const alive = (ids) => ids.filter((i) => { const s = stat(i.pid); return s && s.state !== "Z" && s.start === i.start; });

function recorded(file) {
  return existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").filter(Boolean)
    .map((l) => { const [pid, start] = l.split(" "); return { pid: Number(pid), start }; }) : [];
}

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

const SUPERVISORS = LINUX ? ["node", "none", ...(GUARD ? ["mcp-tether"] : [])] : ["node", "none"];

for (const supervisor of SUPERVISORS) {
  test(`${supervisor}: close() settles after the server flooded a piped stderr nobody reads`,
    { timeout: 120000 }, async () => {
      const marks = join(tmp(), "marks");
      // 100 MB in 1 MB writes to a stderr the host asked to pipe and never reads: the
      // server blocks in its write once the pipe is full, and never sees stdin's EOF.
      const t = new StdioClientTransport({ command: process.execPath, supervisor, stderr: "pipe",
        graceMs: 200, termGraceMs: 200, env: { MARKS: marks, ...SIM_ENV },
        args: ["-e", `require("fs").appendFileSync(process.env.MARKS, "flooding\\n"); ` +
          `const mb = "x".repeat(1 << 20); for (let i = 0; i < 100; i++) process.stderr.write(mb); ` +
          `setInterval(() => {}, 1000);`] });
      await t.start();
      await until(() => existsSync(marks), "the flood to start");
      const pid = t.pid;
      await t.close();
      assert.deepEqual(descendants(pid), []);
      assert.equal(stat(pid), null, "the supervisor (or the server) is reaped");
    });
}

test("queued sends to a server that never reads stdin: one drain listener, and close() " +
     "reaches the SIGTERM rung instead of waiting for the writes to flush", { timeout: 120000 }, async () => {
  const marks = join(tmp(), "marks");
  const t = new StdioClientTransport({ command: process.execPath, graceMs: 200, termGraceMs: 200,
    supervisor: GUARD && LINUX ? "mcp-tether" : "node", env: { MARKS: marks, ...SIM_ENV },
    args: ["-e", `const fs = require("fs"); fs.appendFileSync(process.env.MARKS, "up\\n"); ` +
      `process.on("SIGTERM", () => { fs.appendFileSync(process.env.MARKS, "term\\n"); process.exit(0); }); ` +
      `setInterval(() => {}, 1000);`] });
  const warnings = [];
  const onWarning = (w) => warnings.push(w.name);
  process.on("warning", onWarning);
  try {
    await t.start();
    await until(() => existsSync(marks), "the server to start");
    const big = "y".repeat(64 * 1024);
    // Nobody reads: the pipe fills after a few, the rest queue in the stream.
    const sends = Array.from({ length: 40 }, (_, i) => t.send({ jsonrpc: "2.0", method: "n", params: { i, big } }));
    await new Promise((r) => setImmediate(r));
    await t.close();
    await Promise.all(sends); // a closed pipe ends the wait too
    assert.deepEqual(warnings.filter((n) => n === "MaxListenersExceededWarning"), []);
    assert.match(readFileSync(marks, "utf8"), /term/, "the ladder's SIGTERM, not a SIGKILL of a stuck supervisor");
  } finally {
    process.off("warning", onWarning);
  }
});

/** Live processes (zombies left out) whose environment holds `name=value`, as {pid, start}. */
function carrying(name, value) {
  const want = `${name}=${value}`;
  const out = [];
  for (const n of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    let env;
    try { env = readFileSync(`/proc/${n}/environ`, "latin1").split("\0"); } catch { continue; }
    const s = stat(Number(n));
    if (s && s.state !== "Z" && env.includes(want)) out.push({ pid: s.pid, start: s.start });
  }
  return out;
}

// close() at four moments of start(): in the same tick, one turn of the event loop later
// (the supervisor spawned, start() not yet resolved), once start() resolved, and once the
// server runs (its daemon not yet, or just, born). The server daemonizes at start-up
// through a middle process that lives a millisecond or two, and exits at stdin's EOF:
// what it leaves is found only by the tree's mark.
const MOMENTS = {
  before: async () => {},
  during: () => new Promise((r) => setImmediate(r)),
  after: (started) => started,
  running: async (started, pids) => { await started; await until(() => recorded(pids).length >= 1, "the server"); },
};
const RACE_SUPERVISORS = LINUX ? ["node", ...(GUARD ? ["mcp-tether"] : [])] : [];
// 50 rounds, 5 side by side (the wall time of ten, the load of five); fewer where each look
// costs a program run (the simulated macOS: a Python `ps` per look).
const RACE_ROUNDS = Number(process.env.MCP_TETHER_RACE_ROUNDS || 50);
const RACE_AT_ONCE = Math.min(RACE_ROUNDS, Number(process.env.MCP_TETHER_RACE_AT_ONCE || 5));

for (const supervisor of RACE_SUPERVISORS) {
  test(`${supervisor}: close() racing start() ends the whole tree, a daemonized grandchild ` +
       `included, in ${RACE_ROUNDS} rounds`, { timeout: 300000 }, async () => {
    const ROUNDS = RACE_ROUNDS;
    const AT_ONCE = RACE_AT_ONCE;
    const dir = tmp();
    const moments = Object.keys(MOMENTS);
    const round = async (i) => {
      const pids = join(dir, `pids-${i}`);
      const t = new StdioClientTransport({ command: process.execPath, supervisor,
        graceMs: 100, termGraceMs: 100, args: [STUBBORN, "--daemon", "--exit-on-eof"],
        env: { STUBBORN_PIDS: pids, RACE_ROUND: `${dir}:${i}`, ...SIM_ENV } });
      const started = t.start();
      await MOMENTS[moments[i % moments.length]](started, pids);
      await t.close();
      await started;
      // close() resolved: the supervisor saw the tree empty and exited. Anything of the
      // round still alive (the server, the shell, the daemon all carry its variable) is left.
      return carrying("RACE_ROUND", `${dir}:${i}`).map((p) => ({ ...p, round: i }));
    };
    const left = [];
    for (let i = 0; i < ROUNDS; i += AT_ONCE) {
      const batch = Array.from({ length: AT_ONCE }, (_, k) => round(i + k));
      left.push(...(await Promise.all(batch)).flat());
    }
    for (const p of alive(left)) try { process.kill(p.pid, "SIGKILL"); } catch { /* gone */ }
    const rounds = new Set(left.map((p) => p.round));
    assert.deepEqual(left, [], `${rounds.size} of ${ROUNDS} rounds left processes ` +
      `(the moments ${moments.join(", ")} in turn)`);
  });
}

// ---- real hosts ----------------------------------------------------------------------

const WRAPPERS = {
  "sh -c": (helper) => ["sh", "-c", `${process.execPath} ${STUBBORN} ${helper}; true`],
  "npx-style wrapper": (helper) => [process.execPath, NPXISH, process.execPath, STUBBORN, helper],
};

/** Start a host; resolve once it said ready, with its tree recorded by identity. */
async function startHost(t, { sdk, supervisor, ending, wrapper, helper = "--helper", grace = 300, extraEnv = {} }) {
  const dir = tmp();
  const pidsFile = join(dir, "pids");
  const host = spawn(process.execPath, [HOST, ...WRAPPERS[wrapper](helper)], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, HOST_SDK_DIR: SDK_DIR, HOST_SDK: sdk, HOST_ENDING: ending,
      HOST_SUPERVISOR: supervisor, HOST_GRACE_MS: String(grace), HOST_PIDS: pidsFile,
      HOST_WAIT: helper ? "2" : "1", ...extraEnv },
  });
  // A failed test must not leave its host (and so keep this runner) alive: SIGKILL it
  // (its supervisor then ends the rest).
  t.after(() => { if (host.exitCode === null && host.signalCode === null) host.kill("SIGKILL"); });
  let out = "";
  let err = "";
  host.stdout.on("data", (d) => { out += d; });
  host.stderr.on("data", (d) => { err += d; });
  const done = new Promise((resolve) => host.on("exit", (code, signal) => resolve({ code, signal })));
  await until(() => out.includes("ready") || host.exitCode !== null, "the host's ready line", 60000);
  assert.match(out, /ready/, err);
  const me = stat(host.pid);
  // The host's whole tree (supervisor, wrapper, server, its helper) and the server's own
  // record of itself and its helper, by pid + start time.
  const tree = [...descendants(host.pid), ...recorded(pidsFile)];
  return { host, done, tree, me, pidsFile, get out() { return out; }, get err() { return err; } };
}

async function nothingLeft(tree, what) {
  await until(() => alive(tree).length === 0, `${what}: ${JSON.stringify(alive(tree))} gone`, 20000);
}

const LINES = { 1: "@modelcontextprotocol/sdk 1.x", 2: "@modelcontextprotocol/client 2.x" };
// Each SDK line behind one supervisor (1.x: the Node watchdog, this package's own code;
// 2.x: `mcp-tether run`, when on PATH, else the watchdog too), each wrapper, each ending.
const SUPERVISOR = { 1: "node", 2: GUARD ? "mcp-tether" : "node" };
const cases = [];
for (const sdk of ["1", "2"]) {
  for (const wrapper of Object.keys(WRAPPERS)) {
    for (const ending of ["close", "exit", "sigkill"]) {
      cases.push({ sdk, wrapper, supervisor: SUPERVISOR[sdk], ending });
    }
  }
}

describe("hosts leave nothing", { skip: !SDK_DIR || !LINUX ? "needs MCP_TETHER_NODE_FIXTURES on Linux" : false, concurrency: 3 }, () => {
  for (const c of cases) {
    test(`${LINES[c.sdk]}, ${c.wrapper}, ${c.supervisor}: ${c.ending}`, { timeout: 90000 }, async (t) => {
      const h = await startHost(t, { ...c, ending: c.ending === "sigkill" ? "idle" : c.ending });
      assert.match(h.out, new RegExp(`ready ${c.supervisor} `));
      assert.ok(h.tree.length >= 4, `supervisor, wrapper, server and helper: ${JSON.stringify(h.tree)}`);
      process.kill(h.host.pid, c.ending === "sigkill" ? "SIGKILL" : "SIGUSR2");
      const { code } = await h.done;
      if (c.ending === "close") {
        // close() resolved only after the last process was gone: the host saw none left.
        assert.match(h.out, /closed left=\[\]/, h.err);
        assert.equal(code, 0, h.err);
      }
      await nothingLeft(h.tree, `${c.ending} of ${c.wrapper}`);
    });
  }

  test("the Node watchdog: a server that daemonizes at start-up (setsid and a double fork) " +
       "leaves nothing after its host is SIGKILLed", { timeout: 90000 }, async (t) => {
    const h = await startHost(t, { sdk: "1", supervisor: "node", ending: "idle", wrapper: "sh -c",
      helper: "--daemon" });
    const daemon = recorded(h.pidsFile)[1];
    assert.notEqual(stat(daemon.pid)?.ppid, h.host.pid);
    process.kill(h.host.pid, "SIGKILL");
    await h.done;
    await nothingLeft([...h.tree, daemon], "the daemonized helper");
  });

  test("a server that ignores SIGTERM too is ended by SIGKILL, its setsid helper with it", { timeout: 90000 }, async (t) => {
    const h = await startHost(t, { sdk: "1", supervisor: "node", ending: "close", wrapper: "sh -c",
      helper: "--helper --ignore-term" });
    process.kill(h.host.pid, "SIGUSR2");
    await h.done;
    assert.match(h.out, /closed left=\[\]/, h.err);
    await nothingLeft(h.tree, "SIGKILL rung");
  });

  test("2.x version probe on a disposable sibling: the sibling's tree is gone too", { timeout: 90000 }, async (t) => {
    // The sibling's server wrote its line before it answered the probe; its helper may
    // have been ended before it wrote one.
    const h = await startHost(t, { sdk: "2", supervisor: "node", ending: "close", wrapper: "sh -c",
      helper: "--helper", extraEnv: { HOST_NEGOTIATION: "auto", HOST_WAIT: "3" } });
    process.kill(h.host.pid, "SIGUSR2");
    await h.done;
    assert.match(h.out, /closed left=\[\]/, h.err);
    assert.ok(recorded(h.pidsFile).length >= 3, "the sibling's server, the session's and its helper");
    await nothingLeft(recorded(h.pidsFile), "sibling and session");
  });
});
