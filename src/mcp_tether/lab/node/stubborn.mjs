// Fixture `stubborn`: `timer` plus a SIGTERM handler that only logs.
//
// Survives stdin EOF (the timer) and SIGTERM (a listener replaces the default action):
// only SIGKILL ends it.

import process from "node:process";

import { log, logExit, makeServer, serve } from "./common.mjs";

const server = makeServer("stubborn");
logExit();
process.on("SIGTERM", () => log("signal", { signum: 15, action: "ignored" }));
await serve(server);
setInterval(() => {}, 100);
log("ready");
