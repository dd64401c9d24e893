// The local outbox of money operations on its own, over the memory store behind a switch that
// makes every money call fail like an unreachable Redis: operations wait in order and reach the
// store once it answers; a shutdown with the store still down leaves them in the state
// directory, and the next process replays them exactly once.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { ChargeOutbox } from '../../src/cost/charge-outbox.ts';
import {
  type ChargeRecord,
  type ChargeStore,
  type PendingCharge,
  StoreUnavailableError,
} from '../../src/store/index.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';

const INN = '7707083893';

class Outage {
  down = false;
  constructor(readonly store: MemoryStore) {}
  readonly money: Pick<ChargeStore, 'recordCharge' | 'releaseCharge'> = {
    recordCharge: (r) =>
      this.down ? Promise.reject(new StoreUnavailableError('down')) : this.store.recordCharge(r),
    releaseCharge: (k) =>
      this.down ? Promise.reject(new StoreUnavailableError('down')) : this.store.releaseCharge(k),
  };
}

function pending(key: string, clock: ManualClock): PendingCharge {
  return {
    key,
    requestId: `req-${key}`,
    app: 'crm',
    operation: 'company',
    kind: 'dossier',
    inn: INN,
    estimateMinor: 9900,
    at: clock.now(),
    method: 'GET',
    target: `/v1/companies/${INN}`,
    body: null,
    opens: 'dossier',
    counters: ['app:crm:day:x'],
    counterTtlMs: 86_400_000,
    owner: 'r1',
    leaseUntil: clock.now() + 10_000,
    reconcileAttempts: 0,
  };
}

function record(key: string, amount: number, clock: ManualClock): ChargeRecord {
  return {
    key,
    amountMinor: amount,
    entry: {
      at: clock.now(),
      app: 'crm',
      kind: 'dossier',
      inn: INN,
      amountMinor: amount,
      idempotencyKey: key,
    },
    counters: ['app:crm:day:x'],
    counterTtlMs: 86_400_000,
    window: { inn: INN, kind: 'dossier', until: clock.now() + 900_000 },
  };
}

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

describe('ChargeOutbox', () => {
  it('applies at once while the store answers', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    await store.openCharge(pending('a', clock), [
      { key: 'app:crm:day:x', limitMinor: null, ttlMs: 86_400_000 },
    ]);
    const outbox = new ChargeOutbox({ store, clock, stateDir: null });
    expect(await outbox.submit({ op: 'record', record: record('a', 9900, clock) })).toMatchObject({
      recorded: true,
    });
    expect(outbox.depth).toBe(0);
    expect((await store.readCounters(['app:crm:day:x']))[0]).toMatchObject({
      spentMinor: 9900,
      reservedMinor: 0,
    });
  });

  it('keeps operations in order while the store is down and applies them when it returns', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    const outage = new Outage(store);
    const spec = [{ key: 'app:crm:day:x', limitMinor: null, ttlMs: 86_400_000 }];
    for (const k of ['a', 'b', 'c']) await store.openCharge(pending(k, clock), spec);
    const applied: string[] = [];
    const outbox = new ChargeOutbox({
      store: outage.money,
      clock,
      stateDir: null,
      retryMs: 1_000,
      onApplied: (op) => applied.push(op.op === 'record' ? op.record.key : `release:${op.key}`),
    });
    outage.down = true;
    expect(await outbox.submit({ op: 'record', record: record('a', 9900, clock) })).toBeNull();
    expect(await outbox.submit({ op: 'release', key: 'b' })).toBeNull();
    expect(await outbox.submit({ op: 'record', record: record('c', 4900, clock) })).toBeNull();
    expect(outbox.depth).toBe(3);
    clock.advance(5_000); // retries fail while the store is down
    await new Promise((r) => setImmediate(r));
    expect(outbox.depth).toBe(3);
    outage.down = false;
    for (let i = 0; i < 20 && outbox.depth > 0; i++) {
      clock.advance(1_000);
      await new Promise((r) => setImmediate(r));
    }
    expect(outbox.depth).toBe(0);
    expect(applied).toEqual(['a', 'release:b', 'c']);
    expect((await store.readCounters(['app:crm:day:x']))[0]).toMatchObject({
      spentMinor: 14_800,
      reservedMinor: 0,
    });
    expect(await store.pendingCharges()).toEqual([]);
    expect(await store.readLedger(0, Number.MAX_SAFE_INTEGER)).toHaveLength(2);
  });

  it('a shutdown with the store down writes the operations to the state directory; the next start replays them once', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cpgw-outbox-'));
    dirs.push(dir);
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    await store.openCharge(pending('a', clock), [
      { key: 'app:crm:day:x', limitMinor: null, ttlMs: 86_400_000 },
    ]);
    const outage = new Outage(store);
    outage.down = true;
    const first = new ChargeOutbox({ store: outage.money, clock, stateDir: dir, retryMs: 1_000 });
    await first.submit({ op: 'record', record: record('a', 9900, clock) });
    const closing = first.close(0);
    const left = await closing;
    expect(left.flushed).toBe(false);
    expect(left.savedTo).toMatch(/outbox-.*\.jsonl$/);
    expect(await readdir(dir)).toHaveLength(1);

    outage.down = false;
    const second = new ChargeOutbox({ store: outage.money, clock, stateDir: dir, retryMs: 1_000 });
    expect(await second.loadSaved()).toBe(1);
    for (let i = 0; i < 20 && second.depth > 0; i++) await new Promise((r) => setImmediate(r));
    expect(second.depth).toBe(0);
    await second.close(0);
    expect(await readdir(dir)).toEqual([]);
    expect(await store.readLedger(0, Number.MAX_SAFE_INTEGER)).toHaveLength(1);
    // A third start finds nothing to replay.
    const third = new ChargeOutbox({ store: outage.money, clock, stateDir: dir });
    expect(await third.loadSaved()).toBe(0);
  });

  it('a shutdown waits for an operation its caller did not wait for; one that fails meanwhile is saved', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cpgw-outbox-'));
    dirs.push(dir);
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    const counters = [{ key: 'app:crm:day:x', limitMinor: null, ttlMs: 86_400_000 }];
    await store.openCharge(pending('a', clock), counters);
    await store.openCharge(pending('b', clock), counters);
    let letGo: (fail: boolean) => void = () => {};
    const slow: Pick<ChargeStore, 'recordCharge' | 'releaseCharge'> = {
      recordCharge: (r) => store.recordCharge(r),
      releaseCharge: (k) =>
        new Promise<void>((resolve) => {
          letGo = () => resolve();
        }).then(() => store.releaseCharge(k)),
    };
    const outbox = new ChargeOutbox({ store: slow, clock, stateDir: dir, retryMs: 1_000 });
    void outbox.submit({ op: 'release', key: 'a' }); // the release of a free call, not awaited
    let closed = false;
    const closing = outbox.close(0).then((r) => {
      closed = true;
      return r;
    });
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(closed).toBe(false); // still applying 'a'
    letGo(false);
    expect((await closing).flushed).toBe(true);
    expect((await store.pendingCharges()).map((p) => p.key)).toEqual(['b']);

    // The store fails under a release nobody waits for: the shutdown saves it for the next start.
    const outage = new Outage(store);
    const second = new ChargeOutbox({ store: outage.money, clock, stateDir: dir });
    outage.down = true;
    void second.submit({ op: 'release', key: 'b' });
    const left = await second.close(0);
    expect(left.flushed).toBe(false);
    expect(left.savedTo).toMatch(/outbox-.*\.jsonl$/);
  });

  it('an operation submitted for later is applied after this turn, and a shutdown right away still applies it', async () => {
    const clock = new ManualClock();
    const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    const counters = [{ key: 'app:crm:day:x', limitMinor: null, ttlMs: 86_400_000 }];
    await store.openCharge(pending('a', clock), counters);
    await store.openCharge(pending('b', clock), counters);
    const outbox = new ChargeOutbox({ store: new Outage(store).money, clock, stateDir: null });
    outbox.submitLater({ op: 'release', key: 'a' });
    // Not applied while this turn's work (the answer being written) goes on.
    await Promise.resolve();
    expect((await store.pendingCharges()).map((p) => p.key).sort()).toEqual(['a', 'b']);
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect((await store.pendingCharges()).map((p) => p.key)).toEqual(['b']);
    outbox.submitLater({ op: 'release', key: 'b' });
    expect((await outbox.close(0)).flushed).toBe(true);
    expect(await store.pendingCharges()).toEqual([]);
  });
});
