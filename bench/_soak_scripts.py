"""The programs `soak_reap.py` writes out and starts (Python and Node hosts, a crashing
server, a service, the launcher of services and daemons), as source text."""

PY_HOST = """\
import signal, sys, anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def serve(server, ready):
    async with stdio_client(StdioServerParameters(command=sys.executable, args=[server])) \\
            as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            ready()
            await anyio.sleep_forever()

async def main():
    n = int(sys.argv[2])
    left = [n]
    def ready():
        left[0] -= 1
        if not left[0]:
            print("ready", flush=True)
    with anyio.open_signal_receiver(signal.SIGTERM) as sigs:
        async with anyio.create_task_group() as tg:
            for _ in range(n):
                tg.start_soon(serve, sys.argv[1], ready)
            async for _ in sigs:  # stop: the SDK closes each server's stdin, then waits
                tg.cancel_scope.cancel()
                break

anyio.run(main)
"""

PY_CRASH_HOST = """\
import sys, time, anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    p = StdioServerParameters(command=sys.executable, args=[sys.argv[1]])
    async with stdio_client(p) as (r, w):
        async with ClientSession(r, w) as s:
            await s.initialize()
            async with anyio.create_task_group() as tg:
                tg.start_soon(s.send_ping)  # the server crashes on it...
                await anyio.sleep(0.05)
                print("ready", flush=True)
                time.sleep(100000)  # ...while the host is busy in synchronous work

anyio.run(main)
"""

CRASHING_SERVER = """\
import json, os, sys, time
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {},
            "serverInfo": {"name": "crashy", "version": "0"}}}) + "\\n")
        sys.stdout.flush()
    elif "id" in msg:
        time.sleep(0.5)
        os._exit(3)
"""

NODE_HOST = """\
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
const [server, n] = [process.argv[2], Number(process.argv[3])];
const clients = [];
for (let i = 0; i < n; i++) {
  const c = new Client({ name: "soak", version: "0" });
  await c.connect(new StdioClientTransport({ command: process.execPath, args: [server] }));
  clients.push(c);
}
console.log("ready");
process.on("SIGTERM", async () => {
  for (const c of clients) await c.close();
  process.exit(0);
});
setInterval(() => {}, 1000);
"""

NODE_CRASH_HOST = """\
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
const client = new Client({ name: "svc", version: "0" });
await client.connect(new StdioClientTransport({ command: process.argv[2],
                                                args: [process.argv[3]] }));
client.ping().catch(() => {});  // the server crashes on it...
setTimeout(() => {  // ...while the host blocks its event loop in synchronous work
  console.log("ready");
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 3600e3);
}, 50);
"""

SERVICE = "import time\nwhile True:\n    time.sleep(1)\n"

# Starts argv as a service (new session, stdin /dev/null read-only, stdout and stderr to
# one log) or as a daemon (stdio /dev/null, the given fds passed), prints its pid, exits.
LAUNCHER = """\
import json, subprocess, sys
spec = json.loads(sys.argv[1])
if spec["log"]:
    log = open(spec["log"], "ab")
    p = subprocess.Popen(spec["argv"], stdin=open("/dev/null", "rb"), stdout=log,
                         stderr=subprocess.STDOUT, start_new_session=True)
else:
    p = subprocess.Popen(spec["argv"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, pass_fds=spec["fds"],
                         start_new_session=True)
print(p.pid, flush=True)
"""
