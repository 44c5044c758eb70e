// Fixture `stdout_writer`: a server that writes on its own, every 200 ms.
//
// Sends a `notifications/message` (level info) through the SDK, so real bytes reach
// stdout even when the client asks nothing. No stdout 'error' handler on purpose: when
// the client is gone the next write meets EPIPE, and the process does whatever Node does
// by default with that.

import { log, logExit, makeServer, serve } from "./common.mjs";

const PUMP_MS = 200;

const server = makeServer("stdout_writer", { capabilities: { logging: {} } });
logExit();
await serve(server);
let seq = 0;
setInterval(() => {
  seq += 1;
  server.server
    .notification({
      method: "notifications/message",
      params: { level: "info", logger: "stdout_writer", data: { seq } },
    })
    .catch((err) => log("pump_error", { seq, error: err?.code ?? err?.message }));
}, PUMP_MS);
log("ready");
