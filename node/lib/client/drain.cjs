'use strict';
// Back-pressure on the server's stdin: what send() waits for when a write is queued.
//
// Guarantees:
// - One wait for 'drain' per stdin, shared by every queued send (one listener pair,
//   however many sends wait), removed once it fires.
// - The wait also ends when the pipe closes: a dead server never drains, and a send
//   queued to it never hangs.

const waits = new WeakMap(); // stdin -> the pending wait

/** Resolves when `stdin` drains or closes. */
function drained(stdin) {
  let wait = waits.get(stdin);
  if (!wait) {
    wait = new Promise((resolve) => {
      const done = () => {
        stdin.off('drain', done);
        stdin.off('close', done);
        if (waits.get(stdin) === wait) waits.delete(stdin);
        resolve();
      };
      stdin.on('drain', done);
      stdin.on('close', done);
    });
    waits.set(stdin, wait);
  }
  return wait;
}

module.exports = { drained };
