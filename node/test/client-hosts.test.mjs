// mcp-tether/client in real hosts on both SDK client lines: an EOF-ignoring server behind
// `sh -c '...; true'` or an npx-style Node wrapper (with a setsid helper outside its
// group), ended by close(), by process.exit() and by SIGKILL, behind each supervisor:
// nothing may be left, checked by pid + start time from here. Needs
// MCP_TETHER_NODE_FIXTURES (tests/test_node_client.py passes it) and skips without it.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";

import { tmp, until } from "./helpers.mjs";
import {
  GUARD, HOST, LINUX, NPXISH, SDK_DIR, STUBBORN, alive, descendants, recorded, stat,
} from "./procs.mjs";

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
