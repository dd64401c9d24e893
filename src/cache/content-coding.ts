// Body compression for cache entries (node:zlib gzip or brotli) and Accept-Encoding
// negotiation (RFC 9110 §12.5.3), so a stored compressed body can be sent as it is.
//
// Bodies of SYNC_LIMIT bytes or more are compressed on zlib's thread pool (a ~100 KB dossier
// takes ~2 ms of CPU); smaller ones synchronously, where the thread-pool hop would cost more than
// the work. Decompression is synchronous and happens at most once per answer.
//
// Must never: send a coding the client did not list with q > 0 (a request without
// Accept-Encoding gets identity, although RFC 9110 would allow any coding: many service
// HTTP clients do not decode unless they asked), or let a compressed body that is a view into a
// larger allocation when it is stored (the codec copies into one exact-size buffer).
import { promisify } from 'node:util';
import {
  type BrotliOptions,
  brotliCompress,
  brotliCompressSync,
  brotliDecompressSync,
  constants,
  gunzipSync,
  gzip,
  gzipSync,
  type ZlibOptions,
} from 'node:zlib';
import type { BodyCoding, CompressionConfig } from './cache-config.ts';

export type BodyEncoding = 'identity' | BodyCoding;

const gzipAsync = promisify<Buffer, ZlibOptions, Buffer>(gzip);
const brotliAsync = promisify<Buffer, BrotliOptions, Buffer>(brotliCompress);

/** Below this many bytes compression runs on the calling thread. */
export const SYNC_LIMIT = 32 * 1024;

/** Compresses `body` when it is at least minBytes and compression actually saves space. */
export async function compressBody(
  body: Buffer,
  config: CompressionConfig,
): Promise<{ body: Buffer; encoding: BodyEncoding }> {
  if (body.length < config.minBytes || body.length === 0) return { body, encoding: 'identity' };
  const sync = body.length < SYNC_LIMIT;
  const packed =
    config.encoding === 'gzip'
      ? sync
        ? gzipSync(body, { level: config.level })
        : await gzipAsync(body, { level: config.level })
      : sync
        ? brotliCompressSync(body, brotliOptions(config.level, body.length))
        : await brotliAsync(body, brotliOptions(config.level, body.length));
  if (packed.length >= body.length) return { body, encoding: 'identity' };
  return { body: packed, encoding: config.encoding };
}

export function brotliOptions(level: number, sizeHint: number): BrotliOptions {
  return {
    params: {
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_QUALITY]: level,
      [constants.BROTLI_PARAM_SIZE_HINT]: sizeHint,
    },
  };
}

/** The identity bytes of a stored body. */
export function decompressBody(body: Buffer, encoding: BodyEncoding): Buffer {
  switch (encoding) {
    case 'identity':
      return body;
    case 'gzip':
      return gunzipSync(body);
    case 'br':
      return brotliDecompressSync(body);
  }
}

/**
 * Whether the client accepts `coding` per its Accept-Encoding: listed (or covered by `*`)
 * with q > 0. `x-gzip` counts as gzip. Absent header: only identity.
 */
export function acceptsCoding(
  acceptEncoding: string | readonly string[] | undefined,
  coding: BodyCoding,
): boolean {
  if (acceptEncoding === undefined) return false;
  const text = typeof acceptEncoding === 'string' ? acceptEncoding : acceptEncoding.join(',');
  let exact: number | undefined;
  let star: number | undefined;
  for (const part of text.split(',')) {
    const [rawName, ...params] = part.split(';');
    const name = rawName?.trim().toLowerCase();
    if (!name) continue;
    const q = qValue(params);
    const normalized = name === 'x-gzip' ? 'gzip' : name;
    if (normalized === coding) exact = exact === undefined ? q : Math.max(exact, q);
    else if (normalized === '*') star = q;
  }
  const q = exact ?? star ?? 0;
  return q > 0;
}

function qValue(params: string[]): number {
  for (const param of params) {
    const [k, v] = param.split('=');
    if (k?.trim().toLowerCase() !== 'q') continue;
    const text = v?.trim() ?? '';
    // qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ); anything else counts as 0.
    if (!/^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(text)) return 0;
    return Number(text);
  }
  return 1;
}
