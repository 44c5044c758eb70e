// A host on the TypeScript SDK's StdioClientTransport that reloads its config, as
// Cursor-style hosts do: every stdio server of ~/.cursor/mcp.json is connected; when an
// entry changes, a new Client and transport are connected for it and the old one is
//   MODE close:   closed first (`client.close()`: the SDK's ladder),
//   MODE forget:  dropped without close() (its transport still reads the old copy),
//   MODE abandon: dropped without close(), its output no longer read (libuv read stop;
//                 one last ping, whose answer is the event that takes the fd out of
//                 libuv's epoll set).
// On stdin EOF or SIGTERM it closes every current client and exits.
// Usage: node ts_config_host.mjs MODE   (from a folder with node_modules)
import { readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const mode = process.argv[2] ?? "close";
const CONFIG = join(homedir(), ".cursor", "mcp.json");
const load = () => JSON.parse(readFileSync(CONFIG, "utf8")).mcpServers ?? {};
const dropped = []; // forgotten transports: kept referenced, so their handles stay

async function connect(entry) {
  const transport = new StdioClientTransport({ command: entry.command,
                                               args: entry.args ?? [], stderr: "inherit" });
  const client = new Client({ name: "ts-config-host", version: "1.0.0" });
  await client.connect(transport);
  await client.listTools();
  return { client, transport };
}

let entries = load();
// Before the servers start: an edit made while one is starting (a check may hold the
// handshake until it has edited the file) is seen as an edit.
let mtime = statSync(CONFIG).mtimeMs;
const live = {};
for (const [name, e] of Object.entries(entries)) live[name] = await connect(e);
let busy = false;
setInterval(async () => {
  if (busy) return;
  const now = statSync(CONFIG).mtimeMs;
  if (now === mtime) return;
  busy = true;
  mtime = now;
  const fresh = load();
  for (const [name, e] of Object.entries(fresh)) {
    if (JSON.stringify(e) === JSON.stringify(entries[name])) continue;
    const old = live[name];
    if (old && mode === "close") await old.client.close();
    if (old && mode !== "close") dropped.push(old);
    if (old && mode === "abandon") {
      const out = old.transport._process.stdout; // no public handle to the child
      out.pause();
      // libuv stops reading; Node is left believing it still reads (`reading` stays
      // true), else its read-more logic would start the handle again on the next tick
      out._handle.readStop();
      old.transport.send({ jsonrpc: "2.0", id: 99, method: "ping" }).catch(() => {});
    }
    live[name] = await connect(e);
  }
  entries = fresh;
  busy = false;
}, 50);

async function quit() {
  for (const c of Object.values(live)) await c.client.close();
  process.exit(0);
}
process.on("SIGTERM", quit);
process.stdin.on("end", quit);
process.stdin.resume();
