// A host on the TypeScript SDK's StdioClientTransport that reconnects: copy A, then
// copy B of the same command (a config edit, a reload).
// MODE listen:  both transports stay open and read.
// MODE forget:  A's Client is dropped without close(), as a host that reconnects on a
//   config edit may do: its transport's data listener stays, so libuv still reads A.
// MODE abandon: A is forgotten, not closed: its child and both its sockets are kept,
//   and its output is no longer read. libuv's read stop leaves the fd in the epoll set
//   until one more event arrives for it (it is dropped lazily, on the next wakeup), so
//   A is sent one last ping whose answer is that event.
// Commands, one per line on stdin: `call I` (a tools/call to copy I, answered `ok I`;
// in forget mode only B, index 1, has a Client left).
// Prints "ready PID_A PID_B" and runs until stdin EOF.
// Usage: node ts_reconnect_host.mjs MODE COMMAND ARGS...  (from a folder with node_modules)
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [mode, command, ...args] = process.argv.slice(2);

async function connect() {
  const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
  const client = new Client({ name: "ts-reconnect-host", version: "1.0.0" });
  await client.connect(transport);
  await client.listTools();
  return { transport, client };
}

const a = await connect();
const b = await connect();
const pids = [a.transport.pid, b.transport.pid];
const clients = [mode === "forget" ? null : a.client, b.client];
if (mode === "forget") a.client = null; // dropped: no reference to A's Client is kept
if (mode === "abandon") {
  const out = a.transport._process.stdout; // the SDK's child process: no public handle to it
  out.pause();
  // libuv stops reading; Node is left believing it still reads (`reading` stays true),
  // else its read-more logic would start the handle again on the next tick
  out._handle.readStop();
  await a.transport.send({ jsonrpc: "2.0", id: 99, method: "ping" });
}
console.log(`ready ${pids[0]} ${pids[1]}`);
const lines = createInterface({ input: process.stdin });
lines.on("line", async (line) => {
  const [word, index] = line.trim().split(/\s+/);
  if (word !== "call") return;
  await clients[Number(index)].callTool({ name: "sleep", arguments: { seconds: 0 } });
  console.log(`ok ${index}`);
});
lines.on("close", () => process.exit(0));
