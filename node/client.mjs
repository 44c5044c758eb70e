// ESM entry of mcp-tether/client: the same single implementation as client.cjs.
import cjs from './client.cjs';

export const StdioClientTransport = cjs.StdioClientTransport;
export const getDefaultEnvironment = cjs.getDefaultEnvironment;
export const DEFAULT_INHERITED_ENV_VARS = cjs.DEFAULT_INHERITED_ENV_VARS;
export const ReadBuffer = cjs.ReadBuffer;
export default cjs.StdioClientTransport;
