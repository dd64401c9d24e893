// The ResponseCache suite over the in-process MemoryStore, plus the byte bound: 20,000
// distinct dossier-like answers through a small cache never push it past its bound, and the
// bytes the store counts are exactly the bytes the entries hold.
import { describe, expect, it } from 'vitest';
import { resolveCacheConfig } from '../../src/cache/cache-config.ts';
import { ResponseCache } from '../../src/cache/response-cache.ts';
import { ManualClock } from '../../src/clock.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { answer, dossierLike, request } from './cache-fixtures.ts';
import { runResponseCacheSuite } from './cache-suite.ts';

runResponseCacheSuite(
  'MemoryStore',
  async (clock) => {
    const store = new MemoryStore({ clock, cacheMaxBytes: 64 * 1024 * 1024 });
    return { store, close: () => store.close() };
  },
  { clockDrivenTtl: true },
);

describe('ResponseCache byte bound (MemoryStore)', () => {
  it('20,000 distinct dossier-like answers never take the cache past its bound; sizes are honest', async () => {
    const bound = 2 * 1024 * 1024;
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: bound });
    const cache = new ResponseCache({ store, clock, config: resolveCacheConfig() });
    const count = 20_000;
    const innOf = (i: number): string => String(7_700_000_000 + i);
    let written = 0;
    let identityBytes = 0;
    const batch = 100; // saves in flight at once, as concurrent requests would be
    for (let start = 0; start < count; start += batch) {
      const saves: Promise<unknown>[] = [];
      for (let i = start; i < start + batch; i++) {
        const body = dossierLike(i);
        identityBytes += body.length;
        const req = request('company', { params: { inn: innOf(i) } });
        saves.push(cache.save(req, answer(200, body)));
      }
      const saved = await Promise.all(saves);
      written += saved.filter((e) => (e as { encoding?: string } | null)?.encoding === 'br').length;
      expect(await store.cacheBytes()).toBeLessThanOrEqual(bound);
      clock.advance(10);
    }
    expect(written).toBe(count);
    const bytes = await store.cacheBytes();
    expect(bytes).toBeLessThanOrEqual(bound);
    expect(identityBytes).toBeGreaterThan(50 * bound); // the bound really was under pressure

    // Every surviving entry owns exactly its bytes, and the store's count is their exact sum.
    let present = 0;
    let sum = 0;
    for (let i = 0; i < count; i++) {
      const key = `company:${innOf(i)}`;
      const value = await store.cacheGet(key);
      if (!value) continue;
      present++;
      expect(value.buffer.byteLength).toBe(value.length);
      sum += value.length + Buffer.byteLength(key);
    }
    expect(present).toBeGreaterThan(100);
    expect(present).toBeLessThan(written);
    expect(sum).toBe(bytes);
    // The most recent entries survive (LRU), the oldest are gone.
    expect(await cache.peek(request('company', { params: { inn: innOf(count - 1) } }))).not.toBeNull();
    expect(await cache.peek(request('company', { params: { inn: innOf(0) } }))).toBeNull();
    await store.close();
  });
});
