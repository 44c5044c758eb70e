'use strict';
// The stdio watch of tether(): the client is gone when its pipes say so.
//
// Guarantees:
// - stdin `end`, `close` and `error` (a socket half-close ends as `end`) shut down with
//   exit status 0; so does any error on stdout (it is the wire) and EPIPE, EIO,
//   ECONNRESET, ENOTCONN or a destroyed stream on stderr, so that a write to a vanished
//   client shuts down instead of becoming an uncaught exception that a handler logs to a
//   dead stderr, forever.
// - The listeners stay for the life of the process: an error on a pipe during the
//   shutdown lands in them (and the shutdown is run-once) instead of becoming uncaught.
// - stdin is only listened to, never read: not one protocol byte is taken from the server.
// - `pastTrigger()` reads what already happened to the streams (a listener added after
//   its event waits forever) and gives the reason the listener would have given.

const { say, oneLine } = require('../output/log.cjs');

const DEAD_PIPE = new Set(['EPIPE', 'EIO', 'ECONNRESET', 'ENOTCONN', 'ERR_STREAM_DESTROYED']);

/** Shut down when `stdin` ends or a pipe of this process dies. */
function watchStdio(stdin, shutdown) {
  stdin.on('end', () => shutdown('stdin-end', 0));
  stdin.on('close', () => shutdown('stdin-close', 0));
  stdin.on('error', (err) => shutdown(`stdin-error:${err && err.code}`, 0));
  process.stdout.on('error', (err) => {
    say('debug', `stdout: ${oneLine(err)}`);
    shutdown(`stdout-error:${err && err.code}`, 0);
  });
  process.stderr.on('error', (err) => {
    if (err && DEAD_PIPE.has(err.code)) shutdown(`stderr-error:${err.code}`, 0);
  });
}

/** The reason the live listeners would have given for what already happened to the
 * streams, or null. Order as the events come: an error, then `end`, then `close`. */
function pastTrigger(stdin) {
  if (stdin.errored) return `stdin-error:${stdin.errored.code}`;
  if (stdin.readableEnded) return 'stdin-end';
  if (stdin.destroyed || stdin.closed) return 'stdin-close';
  const out = process.stdout;
  if (out.errored) return `stdout-error:${out.errored.code}`;
  // Destroyed or ended without an error: the next write fails with these codes.
  if (out.destroyed) return 'stdout-error:ERR_STREAM_DESTROYED';
  if (out.writableEnded) return 'stdout-error:ERR_STREAM_WRITE_AFTER_END';
  const err = process.stderr.errored;
  if (err && DEAD_PIPE.has(err.code)) return `stderr-error:${err.code}`;
  return null;
}

module.exports = { watchStdio, pastTrigger };
