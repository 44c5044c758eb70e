// Test helpers of the transport's tests: the fixtures, and processes read from /proc
// independently of the package's own tree code (lib/process/), so that a bug there cannot
// hide itself.
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync, existsSync } from "node:fs";
import { join } from "node:path";

import { PKG } from "./helpers.mjs";

export const FIXTURES = join(PKG, "test", "fixtures");
export const STUBBORN = join(FIXTURES, "stubborn.cjs");
export const NPXISH = join(FIXTURES, "npxish.cjs");
export const HOST = join(FIXTURES, "host.mjs");
export const SDK_DIR = process.env.MCP_TETHER_NODE_FIXTURES;
export const LINUX = process.platform === "linux";
export const GUARD = (() => {
  try {
    return execFileSync("sh", ["-c", "command -v mcp-tether"], { encoding: "utf8" }).trim();
  } catch {
    return "";
  }
})();


export function stat(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "latin1");
    const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { pid, state: f[0], ppid: Number(f[1]), start: f[19] };
  } catch {
    return null;
  }
}

/** Every descendant of `pid` now, as {pid, start}. */
export function descendants(pid) {
  const rows = readdirSync("/proc").filter((n) => /^\d+$/.test(n)).map((n) => stat(Number(n)))
    .filter(Boolean);
  const out = [];
  const queue = [pid];
  while (queue.length) {
    const p = queue.shift();
    for (const r of rows) if (r.ppid === p && r.state !== "Z") { out.push(r); queue.push(r.pid); }
  }
  return out;
}

export const alive = (ids) => ids.filter((i) => { const s = stat(i.pid); return s && s.state !== "Z" && s.start === i.start; });

export function recorded(file) {
  return existsSync(file) ? readFileSync(file, "utf8").trim().split("\n").filter(Boolean)
    .map((l) => { const [pid, start] = l.split(" "); return { pid: Number(pid), start }; }) : [];
}

/** Live processes (zombies left out) whose environment holds `name=value`, as {pid, start}. */
export function carrying(name, value) {
  const want = `${name}=${value}`;
  const out = [];
  for (const n of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    let env;
    try { env = readFileSync(`/proc/${n}/environ`, "latin1").split("\0"); } catch { continue; }
    const s = stat(Number(n));
    if (s && s.state !== "Z" && env.includes(want)) out.push({ pid: s.pid, start: s.start });
  }
  return out;
}
