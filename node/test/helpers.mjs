// Test helpers: run a small script as a real process and watch what it does.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

export const PKG = dirname(dirname(fileURLToPath(import.meta.url)));
// The package takes its macOS path here (lib/platform/platform.cjs's test switch: its processes
// read with a `ps` that prints as macOS's, tests/macos_ps.py); the tests still read /proc.
export const PACKAGE_MACOS = process.env.MCP_TETHER_TEST_PLATFORM === "darwin";
// What a process the tests start must inherit to take the same (simulated) path, where
// the transport gives its server (and the watchdog) an environment of its own.
export const SIM_ENV = PACKAGE_MACOS ? Object.fromEntries(["MCP_TETHER_TEST_PLATFORM",
  "MCP_TETHER_TEST_PS", "MCP_TETHER_BACKEND"].filter((k) => process.env[k])
  .map((k) => [k, process.env[k]])) : {};
export const INDEX_CJS = join(PKG, "index.cjs");
export const INDEX_MJS = join(PKG, "index.mjs");

export function tmp() {
  return mkdtempSync(join(tmpdir(), "mcp-tether-node-"));
}

/** Write `body` as an .mjs file in a temp dir, after the package's import (none with
 * `{ late: true }`: the body imports it itself, from `PACKAGE`). */
export function script(body, dir = tmp(), { late = false } = {}) {
  const file = join(dir, "s.mjs");
  writeFileSync(file, (late ? `const PACKAGE = ${JSON.stringify(INDEX_MJS)};\n`
    : `import { tether, findHost } from ${JSON.stringify(INDEX_MJS)};\n`) +
    `import { appendFileSync } from "node:fs";\n` +
    `const OUT = ${JSON.stringify(join(dir, "out.txt"))};\n` +
    `const note = (s) => appendFileSync(OUT, s + "\\n");\n${body}\n`);
  return { file, dir, out: join(dir, "out.txt") };
}

export function lines(path) {
  return existsSync(path) ? readFileSync(path, "utf8").trim().split("\n").filter(Boolean) : [];
}

/** Poll `fn` until it returns truthy; throws at the deadline (never a fixed sleep). */
export async function until(fn, what, ms = 10000) {
  const end = Date.now() + ms;
  for (let delay = 5; ; delay = Math.min(delay * 2, 50)) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, delay));
  }
}

/** Spawn node on the file with piped stdio; resolves {code, signal, stderr} at exit. */
export function run(file, args = [], opts = {}) {
  const child = spawn(process.execPath, [file, ...args], { stdio: ["pipe", "pipe", "pipe"], ...opts });
  let stderr = "";
  child.stderr?.on("data", (d) => { stderr += d; });
  child.stdout?.on("data", () => {});
  const done = new Promise((resolve) => child.on("exit", (code, signal) =>
    resolve({ code, signal, get stderr() { return stderr; } })));
  return { child, done };
}
