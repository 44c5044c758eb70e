// Types for mcp-tether's ESM entry: the declarations of the CommonJS one (index.d.ts), and
// tether as the default export (index.mjs exports it so).
import { tether } from './index.js';

export * from './index.js';
export default tether;
