// Fixture `plain`: an McpServer on a StdioServerTransport, nothing else.
//
// The transport listens to stdin 'data' and 'error' only, never 'end' (typescript-sdk
// issue 2002). It still exits on EOF: once stdin ends, its handle closes and nothing is
// left to keep the event loop alive.

import { log, logExit, makeServer, serve } from "./common.mjs";

const server = makeServer("plain");
logExit();
await serve(server);
log("ready");
