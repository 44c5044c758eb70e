// Types for mcp-tether/client's ESM entry: the declarations of the CommonJS one, and the
// class as the default export (client.mjs exports it so).
import { StdioClientTransport } from './client.js';

export * from './client.js';
export default StdioClientTransport;
