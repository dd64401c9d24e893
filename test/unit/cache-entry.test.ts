// The entry codec and body codings: round trips, honest sizes, bytes it did not write, the
// compression ratio of a real ~100 KB dossier, and Accept-Encoding negotiation.
import { describe, expect, it } from 'vitest';
import { resolveCacheConfig } from '../../src/cache/cache-config.ts';
import {
  type CacheEntry,
  decodeEntry,
  encodedSize,
  encodeEntry,
  selectHeaders,
} from '../../src/cache/cache-entry.ts';
import { acceptsCoding, compressBody, decompressBody } from '../../src/cache/content-coding.ts';
import { answer, bankBody, dossierBody, emulatorData, INN } from './cache-fixtures.ts';

function entry(body: Buffer, overrides: Partial<CacheEntry> = {}): CacheEntry {
  return {
    status: 200,
    headers: { 'content-type': 'application/json; charset=utf-8', 'x-upstream-request-id': 'up-1' },
    body,
    encoding: 'identity',
    identityLength: body.length,
    storedAt: Date.UTC(2026, 0, 15, 9, 0, 0) + 0.5,
    inn: INN,
    route: 'company',
    kind: 'dossier',
    ...overrides,
  };
}

describe('entry codec', () => {
  it('round-trips every field', () => {
    const e = entry(Buffer.from('{"found":true}'));
    const decoded = decodeEntry(encodeEntry(e));
    expect(decoded).toEqual({ ...e, body: expect.any(Buffer) });
    expect(decoded!.body.equals(e.body)).toBe(true);
  });

  it('round-trips a negative entry without an INN, an empty body and a brotli body', async () => {
    for (const e of [
      entry(Buffer.alloc(0), { status: 404, inn: null, kind: 'negative' }),
      entry(Buffer.from('x'), { encoding: 'br', identityLength: 10, route: 'check_poll', kind: 'check' }),
    ]) {
      const decoded = decodeEntry(encodeEntry(e))!;
      expect({ ...decoded, body: null }).toEqual({ ...e, body: null });
      expect(decoded.body.equals(e.body)).toBe(true);
    }
  });

  it('encodes into a buffer that owns exactly its bytes (honest size for the store)', () => {
    for (const size of [0, 10, 500, 5000, 120_000]) {
      const encoded = encodeEntry(entry(Buffer.alloc(size, 'a')));
      expect(encoded.buffer.byteLength).toBe(encoded.length);
      expect(encoded.byteOffset).toBe(0);
      expect(encodedSize(entry(Buffer.alloc(size, 'a')))).toBe(encoded.length);
    }
  });

  it('returns null for bytes it did not write or that were cut short', () => {
    const good = encodeEntry(entry(Buffer.from('{}')));
    expect(decodeEntry(Buffer.from('{"some":"json"}'))).toBeNull();
    expect(decodeEntry(Buffer.alloc(0))).toBeNull();
    expect(decodeEntry(good.subarray(0, 20))).toBeNull();
    expect(decodeEntry(good.subarray(0, 30))).toBeNull();
    const badVersion = Buffer.from(good);
    badVersion[3] = 9;
    expect(decodeEntry(badVersion)).toBeNull();
    const badEncoding = Buffer.from(good);
    badEncoding[4] = 7;
    expect(decodeEntry(badEncoding)).toBeNull();
  });

  it('keeps the answer headers and never the per-call ones', () => {
    const kept = selectHeaders(
      answer(200, Buffer.from('{}'), { 'x-window-expires': '2026-01-15T09:15:00Z', 'retry-after': '3' })
        .headers,
    );
    expect(kept).toEqual({
      'content-type': 'application/json; charset=utf-8',
      'x-upstream-request-id': 'up-req-1',
    });
  });
});

describe('body compression', () => {
  const defaults = resolveCacheConfig().compression;
  const gzip = resolveCacheConfig({ compression: { encoding: 'gzip', level: 6 } }).compression;
  /** jemalloc's 16 KiB size class: past it Redis spends 20 KiB on the value (MEMORY USAGE > 20 KB). */
  const JEMALLOC_16K = 16_384;

  it('stores a real ~100 KB dossier in under 20 KB with the default (brotli 5), fitting the 16 KiB class', async () => {
    const body = dossierBody();
    expect(body.length).toBeGreaterThan(90_000);
    const packed = await compressBody(body, defaults);
    const encoded = encodeEntry(
      entry(packed.body, { encoding: packed.encoding, identityLength: body.length }),
    );
    expect(packed.encoding).toBe('br');
    expect(encoded.length).toBeLessThan(JEMALLOC_16K - 200);
    expect(encoded.length / body.length).toBeLessThan(0.15);
    expect(decompressBody(packed.body, 'br').equals(body)).toBe(true);
  });

  it('holds for other dossiers of the emulator too', async () => {
    for (const inn of emulatorData().universeInns().legal.slice(0, 4)) {
      const body = dossierBody(inn);
      const packed = await compressBody(body, defaults);
      expect(packed.body.length, `${inn}: ${body.length} B`).toBeLessThan(JEMALLOC_16K - 200);
    }
  });

  it('gzip 6 also round-trips and is under 20 KB by length, but misses the 16 KiB class', async () => {
    const body = dossierBody();
    const packed = await compressBody(body, gzip);
    expect(packed.encoding).toBe('gzip');
    expect(packed.body.length).toBeLessThan(20_000);
    expect(packed.body.length).toBeGreaterThan(JEMALLOC_16K - 200);
    expect(decompressBody(packed.body, 'gzip').equals(body)).toBe(true);
  });

  it('leaves bodies under minBytes as they are', async () => {
    const small = Buffer.from('{"items":[]}');
    expect(await compressBody(small, defaults)).toEqual({ body: small, encoding: 'identity' });
  });

  it('compresses a bank record (just under 1 KB stays identity; the threshold is minBytes)', async () => {
    const bank = bankBody();
    const packed = await compressBody(bank, { ...defaults, minBytes: 256 });
    expect(packed.encoding).toBe('br');
    expect(packed.body.length).toBeLessThan(bank.length);
  });

  it('keeps identity when compression would not save space', async () => {
    const noise = Buffer.from(crypto.getRandomValues(new Uint8Array(4000)));
    const packed = await compressBody(noise, gzip);
    expect(packed).toEqual({ body: noise, encoding: 'identity' });
  });
});

describe('acceptsCoding (RFC 9110 §12.5.3)', () => {
  it('accepts a listed coding', () => {
    expect(acceptsCoding('gzip, deflate, br', 'gzip')).toBe(true);
    expect(acceptsCoding('gzip, deflate, br', 'br')).toBe(true);
    expect(acceptsCoding('GZIP', 'gzip')).toBe(true);
    expect(acceptsCoding('x-gzip', 'gzip')).toBe(true);
  });

  it('refuses a coding not listed, or listed with q=0', () => {
    expect(acceptsCoding('deflate', 'gzip')).toBe(false);
    expect(acceptsCoding('gzip;q=0, br', 'gzip')).toBe(false);
    expect(acceptsCoding('gzip; q=0.000', 'gzip')).toBe(false);
    expect(acceptsCoding('identity', 'gzip')).toBe(false);
  });

  it('honours * for unlisted codings, and an explicit entry over *', () => {
    expect(acceptsCoding('*', 'br')).toBe(true);
    expect(acceptsCoding('*;q=0', 'br')).toBe(false);
    expect(acceptsCoding('gzip;q=0, *', 'gzip')).toBe(false);
    expect(acceptsCoding('br;q=0.5, *;q=0', 'br')).toBe(true);
  });

  it('treats a missing header as identity only, and a malformed q as 0', () => {
    expect(acceptsCoding(undefined, 'gzip')).toBe(false);
    expect(acceptsCoding('', 'gzip')).toBe(false);
    expect(acceptsCoding('gzip;q=high', 'gzip')).toBe(false);
  });

  it('joins repeated header lines', () => {
    expect(acceptsCoding(['deflate', 'gzip'], 'gzip')).toBe(true);
  });
});
