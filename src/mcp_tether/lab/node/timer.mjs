// Fixture `timer`: `plain` plus a setInterval(…, 100) that never stops.
//
// Nothing reacts to stdin EOF, and the live timer keeps the event loop running: the
// process outlives its client (the orphan case).

import { log, logExit, makeServer, serve } from "./common.mjs";

const server = makeServer("timer");
logExit();
await serve(server);
setInterval(() => {}, 100);
log("ready");
