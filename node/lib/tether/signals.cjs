'use strict';
// The signals tether() answers: SIGTERM, SIGINT and SIGHUP by default (`signals`).
//
// Guarantees:
// - The first one starts the shutdown with exit status 128+N (as a shell reports a death
//   by signal N); a second one during the shutdown exits at once with 128+N, as Ctrl-C
//   twice does.
// - A name Node does not know is refused (RangeError) when the tether is armed, never
//   ignored.

const os = require('node:os');
const { say } = require('../output/log.cjs');

const SIGNALS = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };

/** Listen for `names` (default SIGHUP, SIGINT, SIGTERM) on behalf of `state`. */
function watchSignals(names, state, shutdown) {
  for (const name of names || Object.keys(SIGNALS)) {
    const n = SIGNALS[name] ?? os.constants.signals[name];
    if (!n) throw new RangeError(`mcp-tether: unknown signal ${name}`);
    process.on(name, () => {
      if (state.running) {
        say('warning', `${name} again during shutdown: exiting now`);
        state.exit(128 + n);
        return;
      }
      shutdown(`signal:${name}`, 128 + n);
    });
  }
}

module.exports = { watchSignals, SIGNALS };
