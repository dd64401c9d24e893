// Other codings of a stored body, made once per stored entry and kept beside it (issue #12): a
// gzip-only client (Go's and Java's defaults) of a brotli entry gets a gzip copy, compressed once
// on zlib's thread pool (identity meanwhile), and an identity client gets one decoded copy, not a
// brotli decompression per HIT. Copies are keyed by the stored bytes' own allocation (a WeakMap on
// its ArrayBuffer and offset), so they live exactly as long as the store keeps that entry and go
// when it is evicted or replaced; a different entry at the same place never matches (stored time
// and length are compared).
// Must never: serve a copy of another entry, or block the event loop compressing.
import { gzip } from 'node:zlib';
import { type BodyEncoding, decompressBody } from './content-coding.ts';

interface Variants {
  storedAt: number;
  length: number;
  identity?: Buffer;
  gzip?: Buffer;
  gzipPending?: boolean;
}

const byAllocation = new WeakMap<ArrayBufferLike, Map<number, Variants>>();

function variantsOf(body: Buffer, storedAt: number): Variants {
  let at = byAllocation.get(body.buffer);
  if (!at) {
    at = new Map();
    byAllocation.set(body.buffer, at);
  }
  let v = at.get(body.byteOffset);
  if (!v || v.storedAt !== storedAt || v.length !== body.length) {
    v = { storedAt, length: body.length };
    at.set(body.byteOffset, v);
  }
  return v;
}

/** The identity bytes of a stored body, decoded once per stored entry. */
export function identityOf(body: Buffer, encoding: BodyEncoding, storedAt: number): Buffer {
  if (encoding === 'identity') return body;
  const v = variantsOf(body, storedAt);
  v.identity ??= decompressBody(body, encoding);
  return v.identity;
}

/**
 * A gzip copy of a stored (non-gzip) body when one is ready; else null, and one is made in the
 * background (level `level`) for the next HIT.
 */
export function gzipOf(body: Buffer, encoding: BodyEncoding, storedAt: number, level: number): Buffer | null {
  const v = variantsOf(body, storedAt);
  if (v.gzip) return v.gzip;
  if (!v.gzipPending) {
    v.gzipPending = true;
    const identity = identityOf(body, encoding, storedAt);
    gzip(identity, { level }, (err, packed) => {
      if (!err && packed.length < identity.length) v.gzip = packed;
    });
  }
  return null;
}
