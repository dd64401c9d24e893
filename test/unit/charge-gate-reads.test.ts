// When the charge gate reads a company's windows again under its lock (cost/charge-gate.ts): not
// when the caller has just read them and the lock was free at the first look (a paid miss then
// makes one windows read, the cache stage's, not two: one money-store round trip fewer); again
// after a wait, on a retry, without the caller's windows, and when this replica has learned of a
// covering window since the caller's read.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { ChargeGate } from '../../src/cost/charge-gate.ts';
import { WindowTracker } from '../../src/cost/window-tracker.ts';
import type { CompanyWindows } from '../../src/store/charge-store.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { FaultyStore } from '../helpers/faulty-store.ts';

const INN = '7707083893';
const CLOSED: CompanyWindows = { dossierUntil: 0, requisitesUntil: 0 };

function gateOn() {
  const clock = new ManualClock();
  const store = new FaultyStore(new MemoryStore({ clock, cacheMaxBytes: 1 << 20 }));
  const windows = new WindowTracker({ store, clock, windowMs: 900_000, safetyMarginMs: 30_000 });
  const gate = new ChargeGate({ store, clock, windows, pollMs: 25, leaseMs: 10_000 });
  const reads = () => store.methods.filter((m) => m === 'windows').length;
  return { clock, store, windows, gate, reads };
}

describe('the charge gate reads windows again under its lock only when they may have changed', () => {
  it("the caller's fresh windows and a free lock: charged, no read of its own", async () => {
    const { clock, gate, reads } = gateOn();
    const entered = await gate.enter(INN, 'dossier', clock.now() + 15_000, undefined, CLOSED);
    expect(entered.charged).toBe(true);
    expect(reads()).toBe(0);
    if (entered.charged) await entered.release();
  });

  it('no windows from the caller: read once before the lock and once under it', async () => {
    const { clock, gate, reads } = gateOn();
    const entered = await gate.enter(INN, 'dossier', clock.now() + 15_000);
    expect(entered.charged).toBe(true);
    expect(reads()).toBe(2);
    if (entered.charged) await entered.release();
  });

  it('a retry reads under the lock even with the caller’s windows', async () => {
    const { clock, gate, reads } = gateOn();
    const attempt = { owner: 'request-1', retry: true };
    const entered = await gate.enter(INN, 'dossier', clock.now() + 15_000, undefined, CLOSED, attempt);
    expect(entered.charged).toBe(true);
    expect(reads()).toBe(1);
    if (entered.charged) await entered.release();
  });

  it('a covering window this replica learned after the caller’s read: read again, and free', async () => {
    const { clock, windows, gate, reads } = gateOn();
    // Another request here recorded a charge for the company (and released its lock) between
    // the caller's read (CLOSED) and its turn at the gate.
    await windows.open(INN, 'dossier', clock.now());
    const before = reads();
    const entered = await gate.enter(INN, 'dossier', clock.now() + 15_000, undefined, CLOSED);
    expect(reads()).toBe(before + 1);
    expect(entered.charged).toBe(false);
  });

  it('after waiting for another holder: read again, and free once its window is recorded', async () => {
    const { clock, gate, store, reads } = gateOn();
    expect(await store.acquireLock(`charge:${INN}:dossier`, 'someone-else', 10_000)).toBe(true);
    const waiting = gate.enter(INN, 'dossier', clock.now() + 15_000, undefined, CLOSED);
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setImmediate(r));
      if (clock.pendingSleeps > 0) clock.advance(25);
    }
    // The holder (another replica: its window is not in this replica's memo) records and releases.
    await store.openWindow(INN, 'dossier', clock.now() + 900_000, clock.now());
    await store.releaseLock(`charge:${INN}:dossier`, 'someone-else');
    let entered: Awaited<typeof waiting> | undefined;
    void waiting.then((e) => {
      entered = e;
    });
    for (let i = 0; i < 20 && !entered; i++) {
      await new Promise((r) => setImmediate(r));
      if (clock.pendingSleeps > 0) clock.advance(25);
    }
    expect(entered?.charged).toBe(false);
    expect(reads()).toBeGreaterThanOrEqual(1);
  });
});
