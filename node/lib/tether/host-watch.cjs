'use strict';
// The host watch of tether(): the server ends when its host dies, or when a launcher
// between them does.
//
// Guarantees:
// - The host is the first ancestor that is not a launcher (npx / npm exec, sh -c, pnpm
//   dlx, bunx, uvx, cmd /c), identified by pid and start time (lib/process/host.cjs). It and each
//   launcher in between are polled every HOST_POLL_MS (`hostPollMs`): when one of them is
//   gone, the host has seen its child exit and will never talk to this process again (a
//   wrapper that died of a signal it did not pass on, `sh -c` killed alone). The reason is
//   `host-gone` or `launcher-gone`, exit status 0.
// - "Cannot tell now" never shuts anything down. The timer is unref'd (it never keeps the
//   event loop alive) and is cleared when the shutdown starts.
// - `adopted`: the host died before this watch began and left evidence (lib/process/host.cjs
//   `adoptedEarly`); the caller shuts down at once.
// - `watchHost: false` watches nothing and says so in `hostWhy`.

const hostlib = require('../process/host.cjs');
const { say } = require('../output/log.cjs');

// 200 ms: a host's death is seen within a fifth of a second plus one /proc read, well
// inside the 1 s a robust server gets; one small read per poll costs next to nothing.
const HOST_POLL_MS = 200;

/** Start watching; returns `{ host, hostWhy, adopted }`. `cleanups` gets the timer's undo. */
function watchHost(options, shutdown, cleanups) {
  if (options.watchHost === false) {
    return { host: null, hostWhy: 'off (watchHost: false)', adopted: false };
  }
  const adopted = hostlib.adoptedEarly() === true;
  const found = hostlib.findHost();
  const host = found.host;
  const hostWhy = found.why || '';
  if (!host) {
    say('debug', `no host watch: ${hostWhy}`);
    return { host, hostWhy, adopted };
  }
  const watched = [host, ...found.chain].map((p) => ({ p, alive: hostlib.watcher(p) }));
  const timer = setInterval(() => {
    for (const w of watched) {
      // undefined: cannot tell now; never a reason to shut down.
      if (w.alive() === false) {
        shutdown(w.p === host ? 'host-gone' : 'launcher-gone', 0);
        return;
      }
    }
  }, options.hostPollMs ?? HOST_POLL_MS);
  timer.unref();
  cleanups.push(() => clearInterval(timer));
  say('debug', `watching host pid ${host.pid} (${host.argv.join(' ').trim().slice(0, 80)}), ` +
    `start ${host.start}, and ${found.chain.length} launcher(s) in between`);
  return { host, hostWhy, adopted };
}

module.exports = { watchHost, HOST_POLL_MS };
