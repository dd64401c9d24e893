// The fault-injection wrapper over the memory store: 'before' applies nothing, 'after' applies the
// call but loses its reply; calls are counted across roles (ping/close excluded).
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { MemoryStore, StoreUnavailableError } from '../../src/store/index.ts';
import { FaultyStore } from '../helpers/faulty-store.ts';

function fresh() {
  const clock = new ManualClock();
  const inner = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
  return { clock, inner, store: new FaultyStore(inner) };
}

const record = (at: number) => ({
  key: 'idem-1',
  amountMinor: 250,
  entry: { at, app: 'crm', amountMinor: 250, idempotencyKey: 'idem-1' },
  counters: ['app:crm:day:2026-01-15'],
  counterTtlMs: 60_000,
});

describe('FaultyStore', () => {
  it('passes calls through and counts them across roles, ping and close excluded', async () => {
    const { store } = fresh();
    await store.ping();
    await store.set('a', '1', 60_000);
    await store.cacheSet('c', Buffer.from('x'), { ttlMs: 60_000 });
    expect(await store.get('a')).toBe('1');
    expect((await store.cacheGet('c'))?.toString()).toBe('x');
    expect(store.calls).toBe(4);
    expect(store.methods).toEqual(['set', 'cacheSet', 'get', 'cacheGet']);
    expect(store.kind).toBe('memory');
  });

  it("'before' throws StoreUnavailableError and applies nothing", async () => {
    const { clock, inner, store } = fresh();
    store.failAt(2, 'before');
    expect((await store.recordCharge(record(clock.now()))).recorded).toBe(true); // call 1
    await expect(store.recordCharge({ ...record(clock.now()), key: 'idem-2' })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    expect(await inner.isRecorded('idem-2')).toBe(false);
    expect(await inner.readLedger(0, clock.now() + 1)).toHaveLength(1);
    expect(store.faults).toEqual([{ call: 2, method: 'recordCharge', mode: 'before' }]);
    expect(store.calls).toBe(2);
  });

  it("'after' applies the call, then throws: the reply is lost", async () => {
    const { clock, inner, store } = fresh();
    store.failAt(1, 'after');
    await expect(store.recordCharge(record(clock.now()))).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await inner.isRecorded('idem-1')).toBe(true);
    expect(await inner.readCounters(['app:crm:day:2026-01-15'])).toEqual([
      { key: 'app:crm:day:2026-01-15', spentMinor: 250, reservedMinor: 0 },
    ]);
    // The caller retries: the store answers "already recorded", nothing is counted twice.
    expect((await store.recordCharge(record(clock.now()))).recorded).toBe(false);
    expect(await inner.readLedger(0, clock.now() + 1)).toHaveLength(1);
  });

  it('counts subscribe and publish, and forgets everything on reset()', async () => {
    const { store } = fresh();
    const off = await store.subscribe('ch', () => {});
    await store.publish('ch', 'm');
    expect(store.calls).toBe(2);
    store.failAt(1, 'before');
    store.reset();
    await store.set('k', 'v', 1000);
    expect(store.calls).toBe(1);
    expect(store.faults).toEqual([]);
    await off();
    expect(() => store.failAt(0, 'before')).toThrow(RangeError);
  });
});
