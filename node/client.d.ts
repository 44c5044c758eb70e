// Types for mcp-tether/client (hand-written; the package has no build step; checked against
// the code by tests/test_node_types.py: every export, its kind, each class's members).
// Structural: the class satisfies the TypeScript SDK's Transport interface (1.x and 2.x)
// without importing either.
import type { IOType } from 'node:child_process';
import type { Stream } from 'node:stream';

/** A JSON-RPC 2.0 message, as the SDK's JSONRPCMessage. */
export type JSONRPCMessage = { jsonrpc: '2.0'; [key: string]: unknown };

/** The SDK's StdioServerParameters, plus how the tree is ended. */
export type StdioServerParameters = {
  /** The executable to run to start the server. */
  command: string;
  /** Command line arguments to pass to the executable. */
  args?: string[];
  /** Merged over getDefaultEnvironment(), as in the SDK. */
  env?: Record<string, string>;
  /** How to handle the server's stderr (child_process.spawn semantics). Default "inherit". */
  stderr?: IOType | Stream | number;
  /** The working directory. Default: this process's. */
  cwd?: string;
  /** Largest message in bytes before onerror and close. Default 10 MB. */
  maxBufferSize?: number;
  /** ms the tree gets to exit by itself once stdin is closed. Default 2000. */
  graceMs?: number;
  /** ms between SIGTERM and SIGKILL. Default 2000. */
  termGraceMs?: number;
  /** What ends the tree when the host dies: "auto" (default: `mcp-tether run` when it is
   * on PATH on Linux, else the package's Node watchdog; none on Windows), or one of them,
   * or "none" (close() still ends the whole tree; the host's death is not covered). */
  supervisor?: 'auto' | 'mcp-tether' | 'node' | 'none';
};

export declare const DEFAULT_INHERITED_ENV_VARS: string[];
export declare function getDefaultEnvironment(): Record<string, string>;

/** Newline-delimited JSON-RPC 2.0, as the SDKs frame stdio (a line that is not JSON is
 * skipped; one that is not a JSON-RPC 2.0 message throws). */
export declare class ReadBuffer {
  constructor(maxBufferSize?: number);
  /** Throws (and clears) past `maxBufferSize` bytes (default 10 MB). */
  append(chunk: Buffer): void;
  /** The next whole message, or null until a newline comes. */
  readMessage(): JSONRPCMessage | null;
  clear(): void;
}

export declare class StdioClientTransport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: unknown) => void;
  constructor(server: StdioServerParameters);
  /** Starts the server (behind its supervisor). */
  start(): Promise<void>;
  /** The server's stderr when `stderr` is "pipe" or "overlapped", else null. */
  get stderr(): Stream | null;
  /** The pid of the process started: the supervisor (the server is its child). */
  get pid(): number | null;
  /** "mcp-tether", "node" or "none"; null before start(). */
  get supervisor(): 'mcp-tether' | 'node' | 'none' | null;
  /** End stdin, then the ladder on the whole tree; resolves when its last process is gone. */
  close(): Promise<void>;
  send(message: JSONRPCMessage, options?: unknown): Promise<void>;
  private processReadBuffer;
}

export default StdioClientTransport;
