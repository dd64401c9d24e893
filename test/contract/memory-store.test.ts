// The memory store against the shared contract (manual clock: exact timing), plus what only it
// promises: a byte-bounded cache that never pushes out state, and a capped ledger.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { MemoryStore } from '../../src/store/index.ts';
import { ENTRY_OVERHEAD_BYTES, TAG_OVERHEAD_BYTES } from '../../src/store/memory/memory-cache.ts';
import { runStoreContract } from './contract-harness.ts';

runStoreContract('memory', async () => {
  const clock = new ManualClock();
  return {
    store: new MemoryStore({ clock, cacheMaxBytes: 10 * 1024 * 1024 }),
    pass: async (ms) => clock.advance(ms),
    exactTime: true,
    clock,
    close: async () => {},
  };
});

describe('MemoryStore only', () => {
  it('never holds more cache bytes than its bound while 20,000 distinct ~1 KB entries are written', async () => {
    const bound = 256 * 1024;
    const store = new MemoryStore({ clock: new ManualClock(), cacheMaxBytes: bound });
    let max = 0;
    for (let i = 0; i < 20_000; i++) {
      await store.cacheSet(`dossier:${i}`, Buffer.alloc(1000 + (i % 50), i % 256), {
        ttlMs: 3_600_000,
        tags: [`inn:${i % 7}`],
      });
      max = Math.max(max, await store.cacheBytes());
    }
    expect(max).toBeLessThanOrEqual(bound);
    // It did fill up: the bound counts each entry's heap overhead beside its ~1,037 bytes.
    const perEntry = 1050 + ENTRY_OVERHEAD_BYTES + TAG_OVERHEAD_BYTES + 12;
    expect(max).toBeGreaterThan((bound / perEntry - 2) * 1037);
    expect(await store.cacheGet('dossier:0')).toBeNull(); // oldest evicted
    expect(await store.cacheGet('dossier:19999')).not.toBeNull();
    // The tag index forgot evicted entries: a purge counts only what is still cached.
    const purged = await store.cachePurgeTag('inn:3');
    expect(purged).toBeGreaterThan(0);
    expect(purged).toBeLessThan(bound / 1000 / 7 + 2);
  });

  it("lists the workers' prefixes from their index, which forgets keys that expired or were read after expiry", async () => {
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: 1024 * 1024 });
    for (let i = 0; i < 3_000; i++) await store.set(`window:${i}`, '1', 3_600_000);
    for (let i = 0; i < 500; i++) await store.set(`webhook:event:e${i}`, '{}', 1_000);
    await store.set('webhook:due:chk_1:crm', '5', 3_600_000);
    await store.acquireLock('webhook:out-lock:chk_1:crm', 'me', 3_600_000); // not a listed prefix
    await store.set('webhook:out:chk_1:crm', '{}', 3_600_000);
    expect(await store.keys('webhook:out:')).toEqual(['webhook:out:chk_1:crm']);
    expect(await store.keys('webhook:due:')).toEqual(['webhook:due:chk_1:crm']);
    expect(await store.keys('webhook:event:', 10_000)).toHaveLength(500);
    expect((await store.keys('webhook:event:e49', 10_000)).length).toBe(11); // e49, e490-e499
    clock.advance(2_000);
    expect(await store.get('webhook:event:e1')).toBeNull(); // read after expiry: dropped from state
    expect(store.stateListedSize).toBe(502);
    for (let i = 0; i < 1_100; i++) await store.set(`window:x${i}`, '1', 3_600_000); // a sweep runs
    expect(store.stateListedSize).toBe(2);
    expect(await store.keys('webhook:event:')).toEqual([]);
  });

  it('never evicts state, budgets, limiter slots or ledger records under cache pressure', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: 64 * 1024 });
    for (let i = 0; i < 500; i++) await store.set(`window:${i}`, `v${i}`, 3_600_000);
    await store.acquireLock('lock:x', 'me', 3_600_000);
    await store.reserve({
      id: 'r',
      amountMinor: 5,
      counters: [{ key: 'b', limitMinor: 10, ttlMs: 3_600_000 }],
      holdMs: 3_600_000,
    });
    await store.takeSlots([{ name: 'key', limit: 1, windowMs: 60_000 }], 'slot');
    await store.appendLedger({ at: clock.now(), app: 'crm' });
    for (let i = 0; i < 5_000; i++) await store.cacheSet(`c:${i}`, Buffer.alloc(2048), { ttlMs: 3_600_000 });
    expect(await store.keys('window:', 10_000)).toHaveLength(500);
    expect(await store.get('window:0')).toBe('v0');
    expect(await store.releaseLock('lock:x', 'me')).toBe(true);
    expect(await store.readCounters(['b'])).toEqual([{ key: 'b', spentMinor: 0, reservedMinor: 5 }]);
    expect((await store.limiterState([{ name: 'key', limit: 1, windowMs: 60_000 }]))[0]!.used).toBe(1);
    expect(await store.readLedger(0, clock.now() + 1)).toHaveLength(1);
  });

  it('does not store an entry larger than the whole bound', async () => {
    const store = new MemoryStore({ clock: new ManualClock(), cacheMaxBytes: 1024 });
    await store.cacheSet('big', Buffer.alloc(100), { ttlMs: 1000 });
    await store.cacheSet('big', Buffer.alloc(2000), { ttlMs: 1000, tags: ['t'] });
    expect(await store.cacheGet('big')).toBeNull();
    expect(await store.cacheBytes()).toBe(0);
    expect(await store.cachePurgeTag('t')).toBe(0);
  });

  it('drops the oldest ledger records beyond its cap and counts them', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: 1024, ledgerMaxRecords: 1000 });
    for (let i = 0; i < 5000; i++) await store.appendLedger({ at: clock.now() + i, n: i });
    expect(store.ledgerDropped).toBe(4000);
    const kept = await store.readLedger(0, clock.now() + 10_000, 10_000);
    expect(kept).toHaveLength(1000);
    expect(kept[0]!.n).toBe(4000);
    expect(kept[999]!.n).toBe(4999);
  });

  it('sweeps expired state without reads (memory stays bounded)', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: 1024 });
    for (let i = 0; i < 2000; i++) await store.set(`k:${i}`, 'x', 1000);
    clock.advance(2000);
    for (let i = 0; i < 2048; i++) await store.set('other', 'y', 1000);
    expect(store.stateSize).toBe(1);
  });

  it('a throwing subscriber does not stop the others and is reported', async () => {
    const errors: unknown[] = [];
    const store = new MemoryStore({
      clock: new ManualClock(),
      cacheMaxBytes: 1024,
      onError: (e) => errors.push(e),
    });
    const got: string[] = [];
    await store.subscribe('c', () => {
      throw new Error('boom');
    });
    await store.subscribe('c', (m) => got.push(m));
    await store.publish('c', 'm');
    await new Promise((r) => setImmediate(r));
    expect(got).toEqual(['m']);
    expect(errors).toHaveLength(1);
  });
});
