// A host on the TypeScript SDK's Client, careful as ts_host.mjs is (connect, list tools,
// then on stdin EOF, SIGINT, SIGTERM or SIGHUP `await client.close()` and exit), whose
// transport is mcp-tether/client's StdioClientTransport or the SDK's own.
// Usage: node node_client_host.mjs COMMAND ARGS...   (run from a folder whose
// node_modules holds both SDK lines and mcp-tether: tests/node_tether_env.py's)
// Environment: HOST_SDK "1" (@modelcontextprotocol/sdk, default) or "2"
// (@modelcontextprotocol/client); HOST_TRANSPORT "tether" (default) or "sdk";
// HOST_SUPERVISOR for mcp-tether/client (default auto).
const line = process.env.HOST_SDK || "1";
const { Client } = line === "2" ? await import("@modelcontextprotocol/client")
  : await import("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = process.env.HOST_TRANSPORT === "sdk"
  ? (line === "2" ? await import("@modelcontextprotocol/client/stdio")
    : await import("@modelcontextprotocol/sdk/client/stdio.js"))
  : await import("mcp-tether/client");

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, stderr: "inherit",
  supervisor: process.env.HOST_SUPERVISOR || "auto" });
const client = new Client({ name: "hostcheck-node-client-host", version: "1.0.0" });
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
