// Test helpers of leave.test.mjs: the fixture server (test/fixtures/leave.cjs) started in a
// folder of its own, a second server outside its tree, processes read from /proc by
// pid + start time (independently of the package's tree code), and a folder's leftovers
// killed at the end of each test.
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, existsSync, rmSync } from "node:fs";
import { join } from "node:path";

import { PACKAGE_MACOS, PKG, until } from "./helpers.mjs";

export const FIXTURE = join(PKG, "test", "fixtures", "leave.cjs");
export const REGISTER = join(PKG, "register.cjs");
export const has = (tool) => { try { execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" }); return true; } catch { return false; } };
export const SKIP = process.platform !== "linux" ? "Linux only" :
  ["tmux", "script", "setsid", "ss"].every(has) ? false : "needs tmux, script, setsid and ss";
export const GUARD = has("mcp-tether");
// On macOS (simulated: PACKAGE_MACOS) the Node package reads processes with ps, which
// shows no descriptors: a terminal multiplexer or a used daemon cannot be told from a
// leak there, and unknown is no exemption: they end; the opt-out still holds. The Python
// guard's darwin backend reads descriptors (libproc), so behind it they are still left.
export const NODE_SEES_ENDPOINTS = !PACKAGE_MACOS;

export const OWN_WORK = ["child", "setsid", "double", "script", "detached-script"];

// ---- reading processes, independently of the package's own tree code ----------------

export function stat(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "latin1");
    const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return f[0] === "Z" ? null : { pid, ppid: Number(f[1]), start: f[19] };
  } catch {
    return null;
  }
}

export const ident = (pid) => { const s = stat(pid); return s && { pid, start: s.start }; };
export const alive = (i) => { const s = stat(i.pid); return Boolean(s && s.start === i.start); };

export function descendants(pid) {
  const rows = readdirSync("/proc").filter((n) => /^\d+$/.test(n)).map((n) => stat(Number(n))).filter(Boolean);
  const out = [];
  for (const queue = [pid]; queue.length;) {
    const p = queue.shift();
    for (const r of rows) if (r.ppid === p) { out.push({ pid: r.pid, start: r.start }); queue.push(r.pid); }
  }
  return out;
}

/** pid -> the rest of each `left PID (...)` line of `stderr`. */
export function named(stderr) {
  return new Map([...stderr.matchAll(/left (\d+) (\(.*)/g)].map((m) => [Number(m[1]), m[2]]));
}

class Folder {
  constructor() {
    this.path = mkdtempSync("/tmp/mt-leave-"); // short: a unix socket path holds 107 bytes
    this.keep = [];
  }

  pid(name) {
    return ident(Number(readFileSync(join(this.path, `${name}.pid`), "utf8")));
  }

  tmuxServer() {
    try {
      return ident(Number(execFileSync("tmux", ["-S", join(this.path, "tmux.sock"), "display-message",
        "-p", "#{pid}"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] })));
    } catch {
      return null;
    }
  }

  async end() {
    const doomed = [...this.keep, this.tmuxServer()].filter(Boolean);
    doomed.push(...doomed.flatMap((i) => descendants(i.pid)));
    for (const i of doomed) if (alive(i)) { try { process.kill(i.pid, "SIGKILL"); } catch { /* gone */ } }
    await until(() => !doomed.some(alive), "the leftovers gone");
    rmSync(this.path, { recursive: true, force: true });
  }
}

export async function withFolder(fn) {
  const folder = new Folder();
  try {
    await fn(folder);
  } finally {
    await folder.end();
  }
}

/** A second server outside the first one's tree, connected to its daemon (over loopback
 * TCP with `tcp`): up once the daemon accepted it (its first byte read). */
export async function outsider(folder, { tcp = false } = {}) {
  const code = "const a = process.argv[1]; const c = require('net').connect(/^\\d+$/.test(a) ? { port: Number(a), host: '127.0.0.1' } : a); c.once('data', () => console.log('up')); process.stdin.on('end', () => c.end()); process.stdin.resume();";
  const where = tcp ? readFileSync(join(folder.path, "tcp.port"), "utf8") : join(folder.path, "daemon.sock");
  const p = spawn(process.execPath, ["-e", code, where], { stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  p.stdout.on("data", (d) => { out += d; });
  await until(() => out.includes("up"), "the second server connected");
  return { pid: p.pid, close: () => new Promise((r) => { p.on("exit", r); p.stdin.end(); }) };
}

/** Start `node [preload] leave.cjs DIR ...whats`; its tree once ready, and its end. */
export async function serve(folder, whats, { preload = false } = {}) {
  const argv = [...(preload ? ["--require", REGISTER] : []), FIXTURE, folder.path, ...whats];
  const child = spawn(process.execPath, argv, { stdio: ["pipe", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => { stderr += d; });
  const done = new Promise((r) => child.on("exit", (code) => r(code)));
  await until(() => existsSync(join(folder.path, "ready")), "the server ready", 30000);
  const tree = descendants(child.pid);
  return { tree, close: async () => { child.stdin.end(); const code = await done; return { code, stderr }; } };
}

/** Every member of `tree` is gone but those named (and what runs under them). */
export function onlyNamedLeft(tree, left) {
  const kept = new Set([...left.keys()].flatMap((pid) => [pid, ...descendants(pid).map((i) => i.pid)]));
  assert.deepEqual(tree.filter(alive).filter((i) => !kept.has(i.pid)), []);
}
