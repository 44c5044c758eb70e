// Shared bits of the Node lab fixtures: a server with the probe tools, the event log.
//
// Guarantees every fixture relies on:
// - Nothing here writes to stdout: stdout carries protocol bytes only. Events go to fd 2
//   with one synchronous write per line, so a line logged right before process.exit()
//   is on its way before the process is gone.
// - `mono=` is process.hrtime.bigint() in seconds: libuv's uv_hrtime, CLOCK_MONOTONIC on
//   Linux, the same clock as Python's time.monotonic(), so the probe can compare them.
// - Imports resolve from node_modules beside this file, so the lab can run a copy of the
//   fixtures from any folder where `npm ci` has run.

import { writeSync } from "node:fs";
import { basename } from "node:path";
import process from "node:process";

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

// The script's own stem: `timer.mjs` logs `fixture=timer`. makeServer(name) overrides it.
let fixture = basename(process.argv[1] ?? "fixture", ".mjs");

/** Write `fixture=<name> pid=<pid> event=<event> mono=<s> k=v ...` as one stderr line. */
export function log(event, extra = {}) {
  const mono = Number(process.hrtime.bigint()) / 1e9; // read first: the event's instant
  const kv = Object.entries(extra)
    .map(([k, v]) => ` ${k}=${v}`)
    .join("");
  try {
    writeSync(2, `fixture=${fixture} pid=${process.pid} event=${event} mono=${mono.toFixed(6)}${kv}\n`);
  } catch {
    // stderr gone (EPIPE) or non-blocking and full (EAGAIN): a fixture must keep
    // behaving as it would unobserved.
  }
}

/** Log `event=exit code=N` from the 'exit' event: when the process really ends. */
export function logExit() {
  process.on("exit", (code) => log("exit", { code }));
}

/** An McpServer with the two probe tools: echo(text) and sleep(seconds). */
export function makeServer(name, options = {}) {
  fixture = name;
  const server = new McpServer({ name, version: "0.0.0" }, options);
  server.registerTool(
    "echo",
    { description: "Return the text unchanged.", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  server.registerTool(
    "sleep",
    {
      description: "Sleep for `seconds`, then return; for probing an in-flight call.",
      inputSchema: { seconds: z.number() },
    },
    async ({ seconds }) => {
      log("sleep_start", { seconds });
      await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
      log("sleep_end", { seconds });
      return { content: [{ type: "text", text: `slept ${seconds}` }] };
    },
  );
  return server;
}

/** Connect `server` to a StdioServerTransport on this process's stdin/stdout. */
export async function serve(server) {
  const transport = new StdioServerTransport();
  await server.connect(transport);
  return transport;
}
