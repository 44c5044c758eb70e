'use strict';
// The started child's events and streams, wired to the transport's callbacks.
//
// Guarantees:
// - `spawn` resolves start(); a spawn `error` rejects it and goes to onerror.
// - `close` (every stdio stream ended and the supervisor exited) calls onclose once.
// - Each stdout chunk goes to `onData`; stdin's and stdout's errors go to onerror.
// - The watchdog's lifeline (fd 3, when there is one) is read so that its EOF closes it
//   (the child's `close` waits for it too), never keeps the loop alive, and its errors
//   are dropped: the watchdog's exit says the rest.
// - A piped stderr goes to the PassThrough the transport made before start().

/** `on`: `{resolve, reject, onError, onClose, onData}`; `stderr`: a stream or null. */
function wire(child, on, stderr) {
  const lifeline = child.stdio[3];
  if (lifeline) {
    lifeline.on('error', () => {});
    lifeline.resume();
    lifeline.unref?.(); // the stdio pipes keep the loop alive, as in the SDK
  }
  child.on('error', (error) => {
    on.reject(error);
    on.onError(error);
  });
  child.on('spawn', () => on.resolve());
  child.on('close', () => on.onClose());
  child.stdin?.on('error', (error) => on.onError(error));
  child.stdout?.on('data', (chunk) => on.onData(chunk));
  child.stdout?.on('error', (error) => on.onError(error));
  if (stderr && child.stderr) child.stderr.pipe(stderr);
}

module.exports = { wire };
