// A host on the TypeScript SDK's StdioClientTransport (the version pinned by the lab's
// Node fixtures): connect, list tools, then quit on stdin EOF, SIGINT, SIGTERM or SIGHUP
// the way a careful host does: `await client.close()` (the transport's ladder: end
// stdin, 2 s, SIGTERM to the direct child, 2 s, SIGKILL), then exit.
// Usage: node ts_host.mjs COMMAND ARGS...   (run from the folder holding node_modules)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
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
