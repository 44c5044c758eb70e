// Fixture server for the mcp-tether Node package, on either TypeScript SDK line.
//
//   node server.mjs <v1|v2> <timer|socket|child|sleep|daemon|own-env|stuck-hook|writer> <tether|plain|hooks-only|own-end> [low-level]
//
// - v1: @modelcontextprotocol/sdk 1.x (its transport does not react to EOF); v2:
//   @modelcontextprotocol/server 2.x (closes its transport at EOF, does not exit).
// - What keeps the event loop alive, as in real servers: a 100 ms timer, a TCP socket to
//   a listener of its own, a child process (ended by a hook of its own), the timer plus
//   a `sleep` child that nothing in the server ends (sleep), the timer plus a set-up
//   helper that daemonizes (`sh -c 'sleep 901 &'`) started before connect, so before
//   tether() arms (daemon), the timer plus one started after tether() with an environment
//   of its own (own-env: `sleep 902`), the timer plus a cleanup hook that never
//   settles, or (writer) the timer plus a notification to stdout every 20 ms with an
//   uncaughtException handler that logs to stderr: the classic EPIPE spinner.
// - `tether` adds the one line; `plain` leaves it out; `hooks-only` calls tether without
//   the server object; `own-end` exits in its own stdin `end` handler. `low-level` uses the SDK's Server instead of McpServer.
// - The hooks append `hook reason=<why> pid=<pid>` to $TETHER_HOOK_FILE (if set): the
//   proof that they ran. Nothing but protocol bytes is written to stdout.

import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import net from "node:net";
import process from "node:process";

import { tether } from "mcp-tether";
import { z } from "zod";

const [line = "v1", keep = "timer", mode = "tether", flavor = "mcp"] = process.argv.slice(2);
// `preload` is `plain` under NODE_OPTIONS=--import=mcp-tether/register: no line at all.
const hookFile = process.env.TETHER_HOOK_FILE;

function note(text) {
  if (hookFile) appendFileSync(hookFile, `${text} pid=${process.pid}\n`);
}

async function sdk() {
  if (line === "v1") {
    const { McpServer } = await import("@modelcontextprotocol/sdk/server/mcp.js");
    const { Server } = await import("@modelcontextprotocol/sdk/server/index.js");
    const { StdioServerTransport } = await import("@modelcontextprotocol/sdk/server/stdio.js");
    return { McpServer, Server, StdioServerTransport, schema: { text: z.string() } };
  }
  const { McpServer, Server } = await import("@modelcontextprotocol/server");
  const { StdioServerTransport } = await import("@modelcontextprotocol/server/stdio");
  return { McpServer, Server, StdioServerTransport, schema: z.object({ text: z.string() }) };
}

const { McpServer, Server, StdioServerTransport, schema } = await sdk();
const info = { name: `tether-${line}-${keep}`, version: "0.0.0" };
let server;
if (flavor === "low-level") {
  server = new Server(info, { capabilities: {} });
} else {
  server = new McpServer(info);
  server.registerTool("echo", { description: "Echo the text.", inputSchema: schema },
    async ({ text }) => ({ content: [{ type: "text", text }] }));
}
(server.server ?? server).onclose = () => note("onclose");

const hooks = [];
if (["timer", "stuck-hook", "writer", "sleep", "daemon", "own-env"].includes(keep)) {
  setInterval(() => {}, 100);
}
if (keep === "stuck-hook") {
  hooks.push(async function stuck() {
    await new Promise(() => {}); // a pool that never drains
  });
}
if (keep === "socket") {
  const listener = net.createServer((peer) => peer.on("data", () => {}));
  await new Promise((resolve) => listener.listen(0, "127.0.0.1", resolve));
  const sock = net.connect(listener.address().port, "127.0.0.1");
  sock.setKeepAlive(true, 1000);
  hooks.push(async function closeSocket() {
    sock.destroy();
    await new Promise((resolve) => listener.close(resolve));
  });
}
if (keep === "child") {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"],
    { stdio: "ignore" });
  hooks.push(async function endChild() {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await gone;
  });
}
if (keep === "sleep") {
  // A helper the server starts and forgets, as many do: only a tree-wide end stops it.
  spawn("sleep", ["1000"], { stdio: "ignore" });
}
if (keep === "daemon") {
  // A set-up helper that detaches (a language server, a cache daemon): it leaves the
  // server's tree at once, before any tether() line below has run.
  spawn("sh", ["-c", "sleep 901 &"], { stdio: "ignore" });
}
if (keep === "writer") {
  process.on("uncaughtException", (err) => console.error("uncaught:", err.message));
  setInterval(() => {
    process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/message",
      params: { level: "info", data: "x".repeat(512) } })}\n`);
  }, 20);
}
hooks.push(async function writeProof(reason) {
  note(`hook reason=${reason}`);
});

await server.connect(new StdioServerTransport());
if (mode === "tether") tether(server, { onShutdown: hooks });
if (mode === "hooks-only") tether({ onShutdown: hooks });
if (keep === "own-env") {
  // Started after the line, but with an environment of its own: it never inherits the
  // tether's mark, and it detaches.
  spawn("sh", ["-c", "sleep 902 &"], { stdio: "ignore", env: { PATH: process.env.PATH } });
}
if (mode === "own-end") {
  // The baseline of bench/bench_node_tether.py: the server ends itself in its own handler.
  process.stdin.on("end", () => process.exit(0));
}
note("ready");
