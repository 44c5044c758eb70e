// Fixture server that calls tether() late: after `await server.connect(...)`, then an
// `await import("mcp-tether")` (and, given a delay, a slow start-up step before it), so
// the client's EOF or a dead stdout may come before tether() is attached.
//
//   node late.mjs <v1|v2> [delay-ms] [sleep]
//
// - v1: @modelcontextprotocol/sdk 1.x; v2: @modelcontextprotocol/server 2.x. McpServer
//   with one tool and a 100 ms timer that keeps the event loop alive, as real servers do.
// - delay-ms (default 0): a start-up step awaited before the import (a database that
//   takes that long to connect); long enough, tether() has not run when the probe ends.
// - sleep: the server also starts a `sleep` child it never ends itself.
// - The hook appends `hook reason=<why> pid=<pid>` to $TETHER_HOOK_FILE, and `ready`
//   once tether() is attached. Nothing but protocol bytes is written to stdout.

import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import process from "node:process";

import { z } from "zod";

const [line = "v1", delay = "0", child = ""] = process.argv.slice(2);
const hookFile = process.env.TETHER_HOOK_FILE;
const note = (text) => hookFile && appendFileSync(hookFile, `${text} pid=${process.pid}\n`);

const sdk = line === "v1"
  ? { ...await import("@modelcontextprotocol/sdk/server/mcp.js"),
      ...await import("@modelcontextprotocol/sdk/server/stdio.js"), schema: { text: z.string() } }
  : { ...await import("@modelcontextprotocol/server"),
      ...await import("@modelcontextprotocol/server/stdio"), schema: z.object({ text: z.string() }) };

const server = new sdk.McpServer({ name: `tether-late-${line}`, version: "0.0.0" });
server.registerTool("echo", { description: "Echo the text.", inputSchema: sdk.schema },
  async ({ text }) => ({ content: [{ type: "text", text }] }));
setInterval(() => {}, 100);
if (child === "sleep") spawn("sleep", ["1000"], { stdio: "ignore" });

await server.connect(new sdk.StdioServerTransport());
if (Number(delay) > 0) await new Promise((resolve) => setTimeout(resolve, Number(delay)));
const { tether } = await import("mcp-tether");
tether(server, { onShutdown: async (reason) => note(`hook reason=${reason}`) });
note("ready");
