// A Node MCP server with a timer, made to die with its client by one line.
//
// The SDK's StdioServerTransport (1.x) listens to stdin 'data' and 'error' only, so at
// EOF nothing ends the process and any timer (a DB pool, a flusher) keeps it alive
// forever; 2.x closes its transport at EOF but the timer still keeps the process.
// tether() ends it on stdin EOF, a dead stdout, SIGTERM/SIGINT/SIGHUP and the host's
// death, after server.close() and the onShutdown hooks.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { tether } from "mcp-tether";
import { z } from "zod";

const server = new McpServer({ name: "notes", version: "1.0.0" });
const notes = [];
server.registerTool(
  "add_note",
  { description: "Remember a note.", inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: "text", text: `${notes.push(text)} notes` }] }),
);
const flusher = setInterval(() => {}, 100); // the timer that used to keep us alive

await server.connect(new StdioServerTransport());
tether(server, { onShutdown: () => clearInterval(flusher) });
