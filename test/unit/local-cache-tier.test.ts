// The Redis store's in-process tier while a write to Redis is in flight: a read on this replica
// finds the new entry at once (a pass-through's entry is written just after its answer, and the
// next read of the same key often comes within that round trip); a failed write leaves no copy
// here, and a purge seen meanwhile drops it. Redis is stood in for by a gated stub.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { MemoryBus } from '../../src/store/memory/memory-bus.ts';
import { LocalCacheTier } from '../../src/store/redis/local-cache-tier.ts';
import type { RedisCache } from '../../src/store/redis/redis-cache.ts';

function setup() {
  const remote = new Map<string, Buffer>();
  let gate: Promise<void> = Promise.resolve();
  let open: () => void = () => {};
  let fail = false;
  const askedMany: string[][] = [];
  const stub = {
    async cacheGetMany(keys: readonly string[]) {
      askedMany.push([...keys]);
      return keys.map((key) => remote.get(key) ?? null);
    },
    async cacheSet(key: string, value: Buffer) {
      await gate;
      if (fail) throw new Error('Redis write failed');
      remote.set(key, value);
    },
    async cacheGetWithTtl(key: string) {
      const value = remote.get(key);
      return value ? { value, ttlMs: 60_000 } : null;
    },
    async cacheDelete(key: string) {
      remote.delete(key);
    },
  } as unknown as RedisCache;
  const bus = new MemoryBus(() => {});
  const tier = new LocalCacheTier(stub, bus, new ManualClock(), 1 << 20, () => {});
  const hold = () => {
    gate = new Promise<void>((resolve) => {
      open = resolve;
    });
  };
  return { tier, remote, askedMany, hold, open: () => open(), failWrites: () => (fail = true) };
}

describe('LocalCacheTier.cacheSet', () => {
  it('serves the new entry here while Redis is still writing it', async () => {
    const t = setup();
    await t.tier.cacheSet('k', Buffer.from('old'), { ttlMs: 60_000 });
    t.hold();
    const writing = t.tier.cacheSet('k', Buffer.from('new'), { ttlMs: 60_000 });
    expect(t.tier.peek('k')?.toString()).toBe('new');
    expect((await t.tier.cacheGet('k'))?.toString()).toBe('new');
    expect(t.remote.get('k')?.toString()).toBe('old'); // Redis not written yet
    t.open();
    await writing;
    expect(t.remote.get('k')?.toString()).toBe('new');
    expect(t.tier.peek('k')?.toString()).toBe('new');
  });

  it('a failed write to Redis leaves no copy here', async () => {
    const t = setup();
    t.failWrites();
    await expect(t.tier.cacheSet('k', Buffer.from('new'), { ttlMs: 60_000 })).rejects.toThrow(
      'Redis write failed',
    );
    expect(t.tier.peek('k')).toBeNull();
  });

  it('a purge seen while Redis writes drops the copy here', async () => {
    const t = setup();
    t.hold();
    const writing = t.tier.cacheSet('k', Buffer.from('new'), { ttlMs: 60_000 });
    await t.tier.cacheDelete('other'); // a purge of any key bumps the tier's generation
    t.open();
    await writing;
    expect(t.tier.peek('k')).toBeNull();
  });
});

describe('LocalCacheTier.cacheGetMany', () => {
  it('answers what this tier holds itself and asks Redis only for the rest, in one call', async () => {
    const t = setup();
    await t.tier.cacheSet('a', Buffer.from('A'), { ttlMs: 60_000 });
    t.remote.set('b', Buffer.from('B')); // another replica's entry: only Redis has it
    const got = await t.tier.cacheGetMany(['b', 'a', 'none']);
    expect(got.map((v) => v?.toString() ?? null)).toEqual(['B', 'A', null]);
    expect(t.askedMany).toEqual([['b', 'none']]);
    expect(t.tier.peek('b')).toBeNull(); // a batch read is not kept here
    expect(await t.tier.cacheGetMany(['a'])).toEqual([Buffer.from('A')]);
    expect(t.askedMany).toHaveLength(1); // nothing left to ask Redis
  });
});
