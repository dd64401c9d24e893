// One cached upstream answer and its byte format. An entry keeps the status, the headers that
// describe the body (never per-call ones: X-Charged-Minor, rate-limit headers, the gateway's
// X-Request-Id, X-Window-Expires, which the window tracker knows better), the body as stored
// (compressed or not), the time stored and the INN it is about.
//
// Wire format, one Buffer (big-endian):
//   0  4  magic "CPC" + format version 1
//   4  1  body encoding: 0 identity, 1 gzip, 2 br
//   5  1  reserved (0)
//   6  2  HTTP status
//   8  8  storedAt, ms since epoch (float64; from the injected clock)
//  16  4  identity body length (uint32)
//  20  4  meta length (uint32)
//  24  .  meta: JSON {h: headers, i: inn|null, r: route, k: kind}
//   .  .  body
//
// The encoded Buffer owns exactly its bytes (allocUnsafeSlow, never a pool slice), so the
// size the store charges for it is the memory it holds.
//
// Must never: throw on bytes it did not write (decode returns null), or store a header that
// belongs to one call rather than to the answer.
import type { RouteName } from '../route-table.ts';
import type { CacheKind } from './cache-config.ts';
import type { BodyEncoding } from './content-coding.ts';

export interface CacheEntry {
  status: number;
  /** Lower-case names; only STORED_HEADERS. */
  headers: Record<string, string>;
  /** The body as stored: compressed when encoding is not identity. */
  body: Buffer;
  encoding: BodyEncoding;
  /** Length of the identity (uncompressed) body. */
  identityLength: number;
  /** ms since epoch, from the cache's clock. */
  storedAt: number;
  inn: string | null;
  route: RouteName;
  kind: CacheKind;
}

/** Headers kept with an entry. The upstream's X-Request-Id is kept as X-Upstream-Request-Id. */
export const STORED_HEADERS = ['content-type', 'x-upstream-request-id'] as const;

const MAGIC = [0x43, 0x50, 0x43, 0x01] as const; // "CPC", version 1
/** Bytes before the meta: magic, encoding, status, storedAt, lengths (they tell one stored entry from another). */
export const HEADER_BYTES = 24;
const ENCODINGS: readonly BodyEncoding[] = ['identity', 'gzip', 'br'];

/** Picks the stored headers from an upstream answer's (lower-case) headers. */
export function selectHeaders(
  upstream: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  const contentType = upstream['content-type'];
  out['content-type'] = contentType ?? 'application/json; charset=utf-8';
  const upstreamId = upstream['x-upstream-request-id'] ?? upstream['x-request-id'];
  if (upstreamId) out['x-upstream-request-id'] = upstreamId;
  return out;
}

export function encodeEntry(entry: CacheEntry): Buffer {
  const meta = Buffer.from(
    JSON.stringify({ h: entry.headers, i: entry.inn, r: entry.route, k: entry.kind }),
    'utf8',
  );
  const out = Buffer.allocUnsafeSlow(HEADER_BYTES + meta.length + entry.body.length);
  out.set(MAGIC, 0);
  out.writeUInt8(ENCODINGS.indexOf(entry.encoding), 4);
  out.writeUInt8(0, 5);
  out.writeUInt16BE(entry.status, 6);
  out.writeDoubleBE(entry.storedAt, 8);
  out.writeUInt32BE(entry.identityLength, 16);
  out.writeUInt32BE(meta.length, 20);
  meta.copy(out, HEADER_BYTES);
  entry.body.copy(out, HEADER_BYTES + meta.length);
  return out;
}

/** The entry in `bytes`, or null when they are not an entry of this format. The body is a view, not a copy. */
export function decodeEntry(bytes: Buffer): CacheEntry | null {
  if (bytes.length < HEADER_BYTES) return null;
  for (let i = 0; i < MAGIC.length; i++) if (bytes[i] !== MAGIC[i]) return null;
  const encoding = ENCODINGS[bytes.readUInt8(4)];
  if (!encoding) return null;
  const metaLength = bytes.readUInt32BE(20);
  if (HEADER_BYTES + metaLength > bytes.length) return null;
  let meta: { h?: unknown; i?: unknown; r?: unknown; k?: unknown };
  try {
    meta = JSON.parse(bytes.toString('utf8', HEADER_BYTES, HEADER_BYTES + metaLength));
  } catch {
    return null;
  }
  if (!meta || typeof meta.h !== 'object' || meta.h === null || typeof meta.r !== 'string') return null;
  if (typeof meta.k !== 'string') return null;
  return {
    status: bytes.readUInt16BE(6),
    headers: meta.h as Record<string, string>,
    body: bytes.subarray(HEADER_BYTES + metaLength),
    encoding,
    identityLength: bytes.readUInt32BE(16),
    storedAt: bytes.readDoubleBE(8),
    inn: typeof meta.i === 'string' ? meta.i : null,
    route: meta.r as RouteName,
    kind: meta.k as CacheKind,
  };
}

/** Bytes an entry takes once encoded (what the store is charged for, before the key). */
export function encodedSize(entry: CacheEntry): number {
  const meta = JSON.stringify({ h: entry.headers, i: entry.inn, r: entry.route, k: entry.kind });
  return HEADER_BYTES + Buffer.byteLength(meta) + entry.body.length;
}
