// The CommonJS twin of server.mjs for one case: require("mcp-tether") with the v1 SDK's
// CommonJS build, McpServer and a timer. `node server.cjs <tether|plain>`.
const { appendFileSync } = require("node:fs");
const { tether } = require("mcp-tether");
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");

const hookFile = process.env.TETHER_HOOK_FILE;
const note = (text) => hookFile && appendFileSync(hookFile, `${text} pid=${process.pid}\n`);

async function main() {
  const server = new McpServer({ name: "tether-cjs", version: "0.0.0" });
  setInterval(() => {}, 100);
  await server.connect(new StdioServerTransport());
  if (process.argv[2] === "tether") {
    tether(server, { onShutdown: (reason) => note(`hook reason=${reason}`) });
  }
  note("ready");
}
main();
