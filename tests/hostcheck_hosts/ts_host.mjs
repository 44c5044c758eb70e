// A host on the TypeScript SDK's Client: connect, list tools, then quit on stdin EOF,
// SIGINT, SIGTERM or SIGHUP the way a careful host does: `await client.close()`, then
// exit. On the SDK's StdioClientTransport (the default) close() is its ladder: end stdin,
// 2 s, SIGTERM to the direct child, 2 s, SIGKILL; on mcp-tether/client's it is the same
// ladder on the whole tree, and a supervisor ends the tree when the host dies.
// Usage: node ts_host.mjs COMMAND ARGS...   (run from the folder holding node_modules:
// the lab's Node fixtures for the SDK's transport on 1.x; tests/node_tether_env.py's for
// the 2.x line and for mcp-tether/client)
// Environment: HOST_SDK "1" (@modelcontextprotocol/sdk, default) or "2"
// (@modelcontextprotocol/client); HOST_TRANSPORT "sdk" (default) or "tether"
// (mcp-tether/client, with HOST_SUPERVISOR: auto, mcp-tether, node or none).
const line = process.env.HOST_SDK || "1";
const { Client } = line === "2" ? await import("@modelcontextprotocol/client")
  : await import("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = process.env.HOST_TRANSPORT === "tether"
  ? await import("mcp-tether/client")
  : line === "2" ? await import("@modelcontextprotocol/client/stdio")
    : await import("@modelcontextprotocol/sdk/client/stdio.js");

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, stderr: "inherit",
  ...(process.env.HOST_SUPERVISOR ? { supervisor: process.env.HOST_SUPERVISOR } : {}) });
const client = new Client({ name: "hostcheck-ts-host", version: "1.0.0" });
let closing = false;
async function quit() {
  if (closing) return;
  closing = true;
  await client.close();
  process.exit(0);
}
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(sig, quit);
await client.connect(transport);
await client.listTools();
process.stdin.on("end", quit);
process.stdin.resume();
