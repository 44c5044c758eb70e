// A Node MCP server with a timer, made to die with its client.
//
// The SDK's StdioServerTransport listens to stdin 'data' and 'error' only, so at EOF
// nothing ends the process and any timer (a DB pool, a flusher) keeps it alive forever.
// The fix: stdin 'end'/'close', SIGTERM/SIGINT/SIGHUP and a parent watch, all funnelled
// into one run-once shutdown.
import process from "node:process";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const originalPpid = process.ppid; // read first: the parent may die while we start
const server = new McpServer({ name: "notes", version: "1.0.0" });
const notes = [];
server.registerTool(
  "add_note",
  { description: "Remember a note.", inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: "text", text: `${notes.push(text)} notes` }] }),
);
const flusher = setInterval(() => {}, 100); // the timer that used to keep us alive

let done = false;
function shutdown(code = 0) {
  if (done) return; // run once, whichever trigger comes first
  done = true;
  clearInterval(flusher);
  process.exit(code);
}

process.stdin.on("end", () => shutdown(0)); // the client closed stdin (EOF)
process.stdin.on("close", () => shutdown(0)); // the socket or pipe is gone
for (const [name, num] of [["SIGTERM", 15], ["SIGINT", 2], ["SIGHUP", 1]]) {
  process.on(name, () => shutdown(128 + num));
}
setInterval(() => {
  if (process.ppid !== originalPpid) shutdown(0); // reparented: the client died
}, 200).unref();

await server.connect(new StdioServerTransport());
