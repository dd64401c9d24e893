// The charge gate retried after a store fault (a Redis Cluster failover): a lock an earlier try of
// the same request took is its own, not waited out for a whole lease. Seen before the fix in
// bench/redis-cluster-failover: the lock taken, the window read after it failing (its master
// killed), and the retry, under a new owner, waiting 10 s (the lease) for the request's own lock.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { ChargeGate } from '../../src/cost/charge-gate.ts';
import { WindowTracker } from '../../src/cost/window-tracker.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { StoreUnavailableError } from '../../src/store/store.ts';
import { FaultyStore } from '../helpers/faulty-store.ts';

const INN = '7707083893';
const LOCK = `charge:${INN}:dossier`;

function gateOn(faults: (store: FaultyStore) => void) {
  const clock = new ManualClock();
  const inner = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
  const store = new FaultyStore(inner);
  faults(store);
  const windows = new WindowTracker({ store, clock, windowMs: 900_000, safetyMarginMs: 30_000 });
  const gate = new ChargeGate({ store, clock, windows, pollMs: 25, leaseMs: 10_000 });
  return { clock, inner, gate };
}

describe('the charge gate tried again after a store fault', () => {
  it('a lock taken whose reply was lost is the retry’s own at once', async () => {
    const { clock, inner, gate } = gateOn((s) => s.failOn('acquireLock', 1, 'after'));
    const attempt = { owner: 'request-1', retry: false };
    const deadline = clock.now() + 15_000;
    await expect(gate.enter(INN, 'dossier', deadline, undefined, undefined, attempt)).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    // Applied: the lock is held under the request's owner.
    expect(await inner.get(LOCK)).toBe('request-1');
    attempt.retry = true;
    const start = clock.now();
    const entered = await gate.enter(INN, 'dossier', deadline, undefined, undefined, attempt);
    expect(entered.charged).toBe(true);
    expect(clock.now()).toBe(start);
    if (entered.charged) await entered.release();
    expect(await inner.get(LOCK)).toBeNull();
  });

  it('a fault on the window read after the lock gives the lock back', async () => {
    // No windows from the caller: the gate reads them, takes the lock, and its read after taking
    // the lock (the second) fails. (With the caller's windows and a free lock there is no second
    // read: charge-gate-reads.test.ts.)
    const { clock, inner, gate } = gateOn((s) => s.failOn('windows', 2, 'before'));
    const deadline = clock.now() + 15_000;
    await expect(gate.enter(INN, 'dossier', deadline)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await inner.get(LOCK)).toBeNull();
    // Anyone (another request, another replica) takes it at once.
    const other = await gate.enter(INN, 'dossier', deadline);
    expect(other.charged).toBe(true);
    expect(clock.now()).toBe(deadline - 15_000);
  });

  it('another owner’s lock is still waited for: the retry does not take it', async () => {
    const { clock, inner, gate } = gateOn(() => {});
    expect(await inner.acquireLock(LOCK, 'someone-else', 10_000)).toBe(true);
    const waiting = gate.enter(INN, 'dossier', clock.now() + 15_000, undefined, undefined, {
      owner: 'request-2',
      retry: true,
    });
    let settled = false;
    waiting.then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setImmediate(r));
      if (clock.pendingSleeps > 0) clock.advance(25);
    }
    expect(settled).toBe(false);
    expect(await inner.get(LOCK)).toBe('someone-else');
    await inner.releaseLock(LOCK, 'someone-else');
    for (let i = 0; i < 20 && !settled; i++) {
      await new Promise((r) => setImmediate(r));
      if (clock.pendingSleeps > 0) clock.advance(25);
    }
    const entered = await waiting;
    expect(entered.charged).toBe(true);
    expect(await inner.get(LOCK)).toBe('request-2');
  });
});
