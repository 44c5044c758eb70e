// Benchmark (by hand, not a test): mcp-tether/client's StdioClientTransport against the
// TypeScript SDK's own (1.32.2), measured alternately in one run, one Node host process.
//
//   start     new transport -> Client.connect() resolved (spawn, initialize, initialized),
//             a server that exits at stdin EOF, started directly;
//   close     close() called -> the last process of the server's tree gone (that server:
//             close() resolves at its exit on both transports);
//   stubborn  close() -> the last process gone for an EOF-ignoring server behind
//             `sh -c '...; true'` with a setsid helper: the spec's 2 s grace, then SIGTERM.
//             On the SDK's transport the server behind sh and its helper are never ended
//             (close() resolves; what is left is counted and then killed by this script).
// Variants: sdk, mcp-tether (behind `mcp-tether run`, on PATH), node (the Node watchdog),
// none (no supervisor: close() still ends the tree from the host). Rounds rotate the order;
// figures are medians, and each variant's median difference to sdk within a round.
//
//   . .venv/bin/activate && node bench/bench_node_client.mjs [--runs 15] [--stubborn 3]
import { execFileSync } from "node:child_process";
import { readFileSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const REPO = dirname(dirname(fileURLToPath(import.meta.url)));
const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const RUNS = arg("--runs", 15);
const STUBBORN_RUNS = arg("--stubborn", 3);
const FX = execFileSync("python3", [join(REPO, "tests", "node_tether_env.py")], { encoding: "utf8" }).trim();
const req = createRequire(join(FX, "package.json"));
const load = async (spec) => import(pathToFileURL(req.resolve(spec)).href);
const { Client } = await load("@modelcontextprotocol/sdk/client/index.js");
const Sdk = (await load("@modelcontextprotocol/sdk/client/stdio.js")).StdioClientTransport;
const Tether = (await import(join(REPO, "node", "client.mjs"))).StdioClientTransport;
const STUBBORN = join(REPO, "node", "test", "fixtures", "stubborn.cjs");
const VARIANTS = ["sdk", "mcp-tether", "node", "none"];

function stat(pid) {
  try {
    const t = readFileSync(`/proc/${pid}/stat`, "latin1");
    const f = t.slice(t.lastIndexOf(")") + 2).split(" ");
    return { state: f[0], start: f[19] };
  } catch {
    return null;
  }
}
const alive = (ids) => ids.filter(([pid, start]) => { const s = stat(pid); return s && s.state !== "Z" && s.start === start; });
const pidsIn = (file) => { try { return readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map((l) => l.split(" ")); } catch { return []; } };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function transport(variant, command, args, env) {
  const params = { command, args, env, stderr: "ignore" };
  return variant === "sdk" ? new Sdk(params) : new Tether({ ...params, supervisor: variant });
}

/** One run: ms to connect, ms from close() to the last process gone, processes left. */
async function once(variant, stubborn) {
  const dir = mkdtempSync(join(tmpdir(), "bench-client-"));
  const pids = join(dir, "pids");
  const env = { STUBBORN_PIDS: pids, PATH: process.env.PATH };
  const [command, args] = stubborn
    ? ["sh", ["-c", `${process.execPath} ${STUBBORN} --helper; true`]]
    : [process.execPath, [STUBBORN, "--exit-on-eof"]];
  const t = transport(variant, command, args, env);
  const client = new Client({ name: "bench", version: "0" });
  const t0 = performance.now();
  await client.connect(t);
  const start = performance.now() - t0;
  for (let d = 2; pidsIn(pids).length < (stubborn ? 2 : 1); d = Math.min(2 * d, 20)) await sleep(d);
  const tree = pidsIn(pids);
  const t1 = performance.now();
  await client.close();
  // The SDK's close() does not wait for what it leaves: wait a while, then count.
  const end = performance.now() + (variant === "sdk" && stubborn ? 1000 : 10000);
  while (alive(tree).length && performance.now() < end) await sleep(2);
  const gone = performance.now() - t1;
  const left = alive(tree);
  for (const [pid] of left) try { process.kill(Number(pid), "SIGKILL"); } catch { /* gone */ }
  rmSync(dir, { recursive: true, force: true });
  return { start, gone, left: left.length };
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN; };

async function series(stubborn, runs) {
  const res = Object.fromEntries(VARIANTS.map((v) => [v, []]));
  for (let r = 0; r < runs; r++) {
    const order = VARIANTS.map((_, i) => VARIANTS[(i + r) % VARIANTS.length]);
    for (const v of order) res[v].push(await once(v, stubborn));
  }
  return res;
}

function report(title, res, key) {
  console.log(`\n${title}`);
  console.log("| variant | median ms | vs sdk (median of per-round differences) | processes left, all runs |");
  console.log("|---|---|---|---|");
  for (const v of VARIANTS) {
    const xs = res[v].map((x) => x[key]);
    const diffs = res[v].map((x, i) => x[key] - res.sdk[i][key]);
    const left = res[v].reduce((a, x) => a + x.left, 0);
    console.log(`| ${v} | ${median(xs).toFixed(1)} | ${v === "sdk" ? "-" : `${diffs.length ? (median(diffs) >= 0 ? "+" : "") + median(diffs).toFixed(1) : "?"} ms`} | ${left} |`);
  }
}

const quick = await series(false, RUNS);
report(`start-up to initialize done (${RUNS} runs each)`, quick, "start");
report(`close() to last process gone, a server that exits at EOF (${RUNS} runs each)`, quick, "gone");
const slow = await series(true, STUBBORN_RUNS);
report(`close() to last process gone, EOF-ignoring server behind sh -c with a setsid helper (${STUBBORN_RUNS} runs each)`, slow, "gone");
