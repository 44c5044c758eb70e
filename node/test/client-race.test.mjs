// mcp-tether/client under stress, behind each supervisor: a server flooding a piped stderr
// nobody reads, sends queued to a server that never reads, and close() racing start() at
// four moments while the server daemonizes. Nothing may be left (tests/test_node_client.py).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { StdioClientTransport } from "../client.mjs";
import { SIM_ENV, tmp, until } from "./helpers.mjs";
import { GUARD, LINUX, STUBBORN, alive, carrying, descendants, recorded, stat } from "./procs.mjs";

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
