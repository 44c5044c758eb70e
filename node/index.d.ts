// Types for mcp-tether (hand-written; the package has no build step). tests/test_node_types.py
// checks them against the code: every export, its kind, and the handle tether() returns.

/** Why the shutdown started: `stdin-end`, `stdin-close`, `stdin-error:<code>`,
 * `stdout-error:<code>`, `stderr-error:<code>`, `signal:SIGTERM` (SIGINT, SIGHUP),
 * `host-gone`, `launcher-gone`, or what you passed to `shutdown()` (default `manual`). */
export type ShutdownReason = string;

export type ShutdownHook = (reason: ShutdownReason) => unknown | Promise<unknown>;

/** Anything with close(): McpServer or Server from @modelcontextprotocol/sdk 1.x or
 * @modelcontextprotocol/server 2.x, or a transport. */
export interface Closable {
  close(): unknown | Promise<unknown>;
}

export interface TetherOptions {
  /** Run after the server's close(), in order, each within its share of `timeoutMs`. */
  onShutdown?: ShutdownHook | ShutdownHook[];
  /** The whole shutdown's deadline in ms (server close + hooks). Default 1000. */
  timeoutMs?: number;
  /** Watch the host (first ancestor that is not npx/npm exec/sh -c/...). Default true. */
  watchHost?: boolean;
  /** How often the host is checked, in ms. Default 200. */
  hostPollMs?: number;
  /** Signals that shut down (exit 128+N). Default ["SIGHUP", "SIGINT", "SIGTERM"]. */
  signals?: Array<"SIGHUP" | "SIGINT" | "SIGTERM" | (string & {})>;
  /** The stream whose end means the client is gone. Default process.stdin. Its state
   * (`readableEnded`, `destroyed`, `closed`, `errored`) is read on attach. */
  stdin?: {
    on(event: string, listener: (...args: any[]) => void): unknown;
    readonly readableEnded?: boolean;
    readonly destroyed?: boolean;
    readonly closed?: boolean;
    readonly errored?: { code?: string } | null;
  };
  /** Called with the exit status at the end instead of process.exit (for tests). */
  exit?: (code: number) => void;
}

export interface HostInfo {
  pid: number;
  /** /proc/<pid>/stat field 22 on Linux, `ps -o lstart` elsewhere. */
  start: string;
  argv: string[];
}

export interface Tether {
  /** Start the shutdown now (run once; later calls return the same promise). */
  shutdown(reason?: ShutdownReason, code?: number): Promise<void>;
  /** The watched host, or null. */
  readonly host: HostInfo | null;
  /** Why no host is watched ("" when one is). */
  readonly hostWhy: string;
  /** True when mcp-tether/register armed this process before its code ran (this call
   * joined it). */
  readonly preloaded: boolean;
}

/** Safe at any time: what already happened (stdin ended, closed or errored; stdout
 * destroyed, ended or errored) shuts down at once with the listener's reason. Call it
 * before any other `await` at start-up: a signal before it gets Node's default (death,
 * no hooks) and a host that died before it is not seen. A second call joins the first. */
export declare function tether(server: Closable | null | undefined, options?: TetherOptions): Tether;
export declare function tether(options: TetherOptions): Tether;

/** True when argv is a launcher between a host and its server (npx, sh -c, ...). */
export declare function isLauncher(argv: string[]): boolean;

/** The first ancestor that is not a launcher, or null and why. */
export declare function findHost(startPid?: number): {
  host: (HostInfo & { ppid: number }) | null;
  chain?: Array<HostInfo & { ppid: number }>;
  why?: string;
};

/** An environment for a child the server starts for its user: a copy of `env` (default
 * process.env) marked MCP_TETHER_OUTSIDE, so that the tree kill of this server (tether(),
 * the preload, the watchdog, `mcp-tether run`) leaves the child and its descendants running
 * and names them on stderr. Pass it as the child's `env`, with `detached: true` (or the
 * child stays in the server's process group, which a host may signal as a whole). */
export declare function outsideTether(env?: Record<string, string | undefined>): Record<string, string | undefined>;

export default tether;
