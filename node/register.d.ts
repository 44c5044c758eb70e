// Types for mcp-tether/register: a preload with no API of its own (see register.cjs).
// Importing it arms the tether; `tether(server, options)` from "mcp-tether" joins it.

/** NODE_OPTIONS (or any option text) with the mcp-tether/register preload taken out. */
export declare function withoutPreload(text: string): string;
