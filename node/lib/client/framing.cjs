'use strict';
// The stdio framing of MCP, as the SDKs read it: newline-delimited JSON-RPC 2.0.
//
// Guarantees:
// - One message per line; a trailing '\r' is dropped; a line that is not JSON is skipped
//   (a stray log line on stdout, as the 2.x SDK does); a JSON line that is not a JSON-RPC
//   2.0 message throws (the transport passes it to onerror and reads on).
// - The buffer never holds more than `maxBufferSize` bytes (10 MB by default, as the
//   SDK): a chunk past it clears the buffer and throws.

const STDIO_DEFAULT_MAX_BUFFER_SIZE = 10 * 1024 * 1024;

/** Newline-delimited JSON-RPC, as the SDKs frame stdio. */
class ReadBuffer {
  constructor(maxBufferSize = STDIO_DEFAULT_MAX_BUFFER_SIZE) {
    this._max = maxBufferSize;
    this._buffer = undefined;
  }

  append(chunk) {
    if ((this._buffer?.length ?? 0) + chunk.length > this._max) {
      this.clear();
      throw new Error(`ReadBuffer exceeded maximum size of ${this._max} bytes`);
    }
    this._buffer = this._buffer ? Buffer.concat([this._buffer, chunk]) : chunk;
  }

  readMessage() {
    while (this._buffer) {
      const index = this._buffer.indexOf('\n');
      if (index === -1) return null;
      const line = this._buffer.toString('utf8', 0, index).replace(/\r$/, '');
      this._buffer = this._buffer.subarray(index + 1);
      let message;
      try {
        message = JSON.parse(line);
      } catch (err) {
        if (err instanceof SyntaxError) continue; // a stray log line on stdout (2.x)
        throw err;
      }
      if (message === null || typeof message !== 'object' || Array.isArray(message) ||
          message.jsonrpc !== '2.0') {
        throw new TypeError(`not a JSON-RPC 2.0 message: ${line.slice(0, 200)}`);
      }
      return message;
    }
    return null;
  }

  clear() {
    this._buffer = undefined;
  }
}

module.exports = { ReadBuffer, STDIO_DEFAULT_MAX_BUFFER_SIZE };
