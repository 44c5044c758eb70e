// What the tree kill leaves for the user, and what it still ends: tether(), the preload and
// mcp-tether/client behind each supervisor, on real processes (test/fixtures/leave.cjs).
// A tmux session (a private socket in the test's folder), a `setsid -f` daemon a second,
// still-running server uses, and an outsideTether() child are left and named on stderr;
// the server's own children, detached helpers, daemonized grandchildren and shells on
// pseudo-terminals end. Whatever a test leaves is killed at its end, by pid + start time.
// tests/test_leave.py runs this file with the guard on PATH (the `mcp-tether` supervisor).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";

import { StdioClientTransport } from "../client.mjs";
import { SIM_ENV, until } from "./helpers.mjs";
import {
  FIXTURE, GUARD, NODE_SEES_ENDPOINTS, OWN_WORK, SKIP, alive, descendants, has, named,
  onlyNamedLeft, outsider, serve, withFolder,
} from "./leaving.mjs";

// ---- tether() and the preload ----------------------------------------------------------

test("tether(): tmux, a daemon a second server uses and an outsideTether() child are left " +
     "and named; the server's own children end", { skip: SKIP }, () => withFolder(async (folder) => {
  const run = await serve(folder, ["tether", "tmux", "daemon", "outside", "child", "double"]);
  const daemon = folder.pid("daemon");
  const kept = folder.pid("outside");
  folder.keep.push(daemon, kept);
  const second = await outsider(folder);
  try {
    const { code, stderr } = await run.close();
    assert.equal(code, 0, stderr);
    const tmux = folder.tmuxServer();
    const left = named(stderr);
    if (!NODE_SEES_ENDPOINTS) {
      assert.deepEqual([...left.keys()], [kept.pid], stderr);
      assert.ok(!tmux && !alive(daemon) && alive(kept), stderr);
      onlyNamedLeft(run.tree, left);
      return;
    }
    assert.ok(tmux, stderr);
    assert.match(left.get(tmux.pid) || "", /a terminal session a user can attach to/, stderr);
    assert.match(left.get(daemon.pid) || "", new RegExp(`in use by ${second.pid} \\(node\\) over a unix socket`), stderr);
    assert.match(left.get(kept.pid) || "", /kept out of the tether on purpose/, stderr);
    assert.ok(alive(daemon) && alive(kept) && alive(tmux));
    onlyNamedLeft(run.tree, left);
  } finally {
    await second.close();
  }
}));

test("tether(): a daemon a second server uses over loopback TCP is left and named",
  { skip: SKIP }, () => withFolder(async (folder) => {
    const run = await serve(folder, ["tether", "tcp-daemon", "child"]);
    const daemon = folder.pid("tcp-daemon");
    folder.keep.push(daemon);
    const second = await outsider(folder, { tcp: true });
    try {
      const { stderr } = await run.close();
      if (!NODE_SEES_ENDPOINTS) {
        assert.deepEqual([...named(stderr).keys()], [], stderr);
        assert.ok(!alive(daemon), stderr);
        return;
      }
      assert.match(named(stderr).get(daemon.pid) || "",
        new RegExp(`in use by ${second.pid} \\(node\\) over a TCP connection`), stderr);
      onlyNamedLeft(run.tree, named(stderr));
    } finally {
      await second.close();
    }
  }));

test("tether(): helpers, a daemonized grandchild, pty shells and an unused daemon still end",
  { skip: SKIP }, () => withFolder(async (folder) => {
    const run = await serve(folder, ["tether", ...OWN_WORK, "daemon"]);
    const daemon = folder.pid("daemon");
    const { stderr } = await run.close();
    assert.deepEqual([...named(stderr).keys()], [], stderr);
    assert.deepEqual(run.tree.filter(alive), [], stderr);
    assert.ok(!alive(daemon), stderr);
  }));

test("the preload: tmux and an outsideTether() child are left and named; a child ends",
  { skip: SKIP }, () => withFolder(async (folder) => {
    const run = await serve(folder, ["tmux", "outside", "child", "setsid"], { preload: true });
    const kept = folder.pid("outside");
    folder.keep.push(kept);
    const { stderr } = await run.close();
    const tmux = folder.tmuxServer();
    const left = named(stderr);
    if (NODE_SEES_ENDPOINTS) assert.ok(tmux && left.has(tmux.pid), stderr);
    else assert.ok(!tmux, stderr);
    assert.ok(left.has(kept.pid), stderr);
    onlyNamedLeft(run.tree, left);
  }));

// ---- mcp-tether/client -----------------------------------------------------------------

for (const supervisor of ["node", "mcp-tether"]) {
  const skip = SKIP || (supervisor === "mcp-tether" && !GUARD ? "no mcp-tether on PATH" : false);
  test(`mcp-tether/client (supervisor ${supervisor}): the user's processes are left and named, ` +
       "the server's end", { skip }, () => withFolder(async (folder) => {
    const t = new StdioClientTransport({ command: process.execPath, supervisor, stderr: "pipe",
      graceMs: 200, termGraceMs: 200, env: SIM_ENV,
      args: [FIXTURE, folder.path, "tmux", "daemon", "outside", "child", "double"] });
    let stderr = "";
    t.stderr.on("data", (d) => { stderr += d; });
    await t.start();
    await until(() => existsSync(join(folder.path, "ready")), "the server ready", 30000);
    const tree = descendants(t.pid);
    const daemon = folder.pid("daemon");
    const kept = folder.pid("outside");
    folder.keep.push(daemon, kept);
    const second = await outsider(folder);
    try {
      await t.close();
      const tmux = folder.tmuxServer();
      const left = named(stderr);
      if (supervisor === "node" && !NODE_SEES_ENDPOINTS) {
        assert.deepEqual([...left.keys()], [kept.pid], stderr);
        assert.ok(!tmux && !alive(daemon) && alive(kept), stderr);
        onlyNamedLeft(tree, left);
        return;
      }
      assert.ok(tmux && left.has(tmux.pid), stderr);
      assert.match(left.get(daemon.pid) || "", new RegExp(`in use by ${second.pid} `), stderr);
      assert.match(left.get(kept.pid) || "", /kept out of the tether/, stderr);
      onlyNamedLeft(tree, left);
    } finally {
      await second.close();
    }
  }));
}

// No supervisor: the transport ends the tree itself, as far as it can follow it (the group
// and the ppid chain: a process that daemonized is out of its sight, as before). Its one
// line per process left goes to this host's own stderr.
test("mcp-tether/client (supervisor none): an outsideTether() child in the server's tree is " +
     "left, the server's child ends", { skip: SKIP }, () => withFolder(async (folder) => {
  const t = new StdioClientTransport({ command: process.execPath, supervisor: "none",
    graceMs: 200, termGraceMs: 200, env: SIM_ENV,
    args: [FIXTURE, folder.path, "outside", "child", "setsid"] });
  await t.start();
  await until(() => existsSync(join(folder.path, "ready")), "the server ready", 30000);
  const tree = descendants(t.pid);
  const kept = folder.pid("outside");
  folder.keep.push(kept);
  await t.close();
  assert.ok(alive(kept));
  assert.deepEqual(tree.filter(alive).filter((i) => i.pid !== kept.pid), []);
}));
