// The memory cache's bound counts what an entry costs in the heap (issue 31: a 16 MiB bound that
// counted body + key bytes only let 120,000 small negative answers take RSS to 703 MiB): the
// entry count stays within bound / (bytes + overhead), the heap grows by about the bound and not
// several times it, and a small entry cut from a larger allocation does not keep that allocation.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import {
  ENTRY_OVERHEAD_BYTES,
  entrySize,
  MemoryCache,
  TAG_OVERHEAD_BYTES,
} from '../../src/store/memory/memory-cache.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heap(): number {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

const HOUR = 3_600_000;

describe('MemoryCache accounting', () => {
  it('counts an entry as its bytes, its key, its tags and their measured overheads', () => {
    const body = Buffer.alloc(100);
    expect(entrySize('company:7707083893', body, undefined)).toBe(100 + 18 + ENTRY_OVERHEAD_BYTES);
    expect(entrySize('company:7707083893', body, ['inn:7707083893', 'route:company'])).toBe(
      100 + 18 + ENTRY_OVERHEAD_BYTES + 14 + 13 + 2 * TAG_OVERHEAD_BYTES,
    );
  });

  it('holds 20,000 small tagged entries within bound / (bytes + overhead), and the heap grows by less than the bound', async () => {
    const bound = 2 * 1024 * 1024;
    const bodyOf = (inn: string) =>
      Buffer.from(`{"error":{"code":"not_found","message":"company ${inn} not found"}}`);
    const bodyLength = bodyOf('7700000000').length;
    const cache = new MemoryCache(new ManualClock(), bound);
    const before = heap();
    for (let i = 0; i < 20_000; i++) {
      const inn = String(7_700_000_000 + i);
      // Small bodies cut from Node's shared pool, as encodeEntry's are.
      await cache.cacheSet(`company:${inn}`, bodyOf(inn), {
        ttlMs: HOUR,
        tags: [`inn:${inn}`, 'route:company'],
      });
    }
    const grown = heap() - before;
    const perEntry = entrySize('company:7700000000', Buffer.alloc(bodyLength), [
      'inn:7700000000',
      'route:company',
    ]);
    expect(cache.heapBytes()).toBeLessThanOrEqual(bound);
    expect(cache.size).toBeLessThanOrEqual(Math.floor(bound / perEntry));
    expect(cache.size).toBeGreaterThan(Math.floor(bound / perEntry) - 2); // it filled up
    // Counting body + key only (~85 B an entry), the bound held all 20,000 and the heap grew by
    // ~15 MiB; now it holds ~1,270 entries and their real cost is under the bound that counts them.
    expect(grown).toBeLessThan(bound);
    expect(await cache.cacheBytes()).toBe(cache.size * (bodyLength + 18));
    expect(await cache.cacheGet('company:7700019999')).not.toBeNull();
    expect(await cache.cacheGet('company:7700000000')).toBeNull();
  });

  it('does not keep the larger allocation a small entry was cut from', async () => {
    const cache = new MemoryCache(new ManualClock(), 64 * 1024 * 1024);
    const before = heap();
    for (let i = 0; i < 2_000; i++) {
      // 100 bytes of a fresh 8 KiB allocation whose rest is dropped (a pool slab's fate).
      const slab = Buffer.allocUnsafeSlow(8192);
      slab.fill(i % 256);
      await cache.cacheSet(`k:${i}`, slab.subarray(0, 100), { ttlMs: HOUR });
    }
    const grown = heap() - before;
    expect(cache.size).toBe(2_000);
    // Kept slabs would be 2,000 x 8 KiB = 16 MiB; own copies are 2,000 x 100 B plus objects.
    expect(grown).toBeLessThan(4 * 1024 * 1024);
    const got = await cache.cacheGet('k:1999');
    expect(got?.length).toBe(100);
    expect(got?.[0]).toBe(1999 % 256);
    expect(got?.buffer.byteLength).toBe(100);
  });

  it('reports body + key bytes as cacheBytes and keeps them right through replace, purge and eviction', async () => {
    const cache = new MemoryCache(new ManualClock(), 3 * (ENTRY_OVERHEAD_BYTES + 200));
    const same = Buffer.alloc(100, 7);
    await cache.cacheSet('a', same, { ttlMs: HOUR, tags: ['t'] });
    await cache.cacheSet('a', same, { ttlMs: HOUR, tags: ['t'] }); // the same Buffer again
    expect(await cache.cacheBytes()).toBe(101);
    await cache.cacheSet('b', Buffer.alloc(100), { ttlMs: HOUR });
    await cache.cacheSet('c', Buffer.alloc(100), { ttlMs: HOUR });
    await cache.cacheSet('d', Buffer.alloc(100), { ttlMs: HOUR }); // evicts 'a' (oldest)
    expect(cache.size).toBe(3);
    expect(await cache.cacheBytes()).toBe(303);
    expect(await cache.cachePurgeTag('t')).toBe(0);
    expect(await cache.cacheReplace('b', Buffer.alloc(4), Buffer.alloc(10))).toBe(true);
    expect(await cache.cacheBytes()).toBe(11 + 202);
    expect(cache.heapBytes()).toBe(
      entrySize('b', Buffer.alloc(10), undefined) + 2 * entrySize('c', Buffer.alloc(100), undefined),
    );
  });
});
