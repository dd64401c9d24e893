// The codings a HIT serves without per-request work (issue #12): a gzip copy of a brotli entry
// made once in the background for gzip-only clients, and one decoded identity copy per entry.
import { brotliCompressSync, gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { gzipOf, identityOf } from '../../src/cache/coding-variants.ts';

const json = Buffer.from(
  JSON.stringify({ rows: Array.from({ length: 2000 }, (_, i) => ({ i, name: `row ${i}` })) }),
);

function stored(): Buffer {
  const packed = brotliCompressSync(json);
  const own = Buffer.allocUnsafeSlow(packed.length);
  packed.copy(own);
  return own;
}

async function until<T>(f: () => T | null): Promise<T> {
  for (let i = 0; i < 500; i++) {
    const v = f();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('never ready');
}

describe('coding variants of a stored entry', () => {
  it('a gzip-only client gets identity first, then a gzip copy of the same bytes, made once', async () => {
    const body = stored();
    expect(gzipOf(body, 'br', 1000, 6)).toBeNull();
    const gz = await until(() => gzipOf(body, 'br', 1000, 6));
    expect(gunzipSync(gz).equals(json)).toBe(true);
    expect(gzipOf(body, 'br', 1000, 6)).toBe(gz);
    // A view of the same stored bytes (a later read of the same entry) finds the same copy.
    expect(gzipOf(body.subarray(0), 'br', 1000, 6)).toBe(gz);
  });

  it('decodes a brotli entry once; another entry in the same place (new stored time) is decoded anew', () => {
    const body = stored();
    const first = identityOf(body, 'br', 1000);
    expect(first.equals(json)).toBe(true);
    expect(identityOf(body, 'br', 1000)).toBe(first);
    const again = identityOf(body, 'br', 2000);
    expect(again).not.toBe(first);
    expect(again.equals(json)).toBe(true);
  });
});
