// The two memos the cache-hit path reads without waiting (WindowTracker.known, the rate
// governor's HeadroomMemo.peek) are renewed in the background once past half their age, so a
// key asked for steadily never lapses: before this, every lapse (each 200 ms) sent the HITs of the
// next store round trip down the full pipeline (issue #12; 614 of 137k Redis HITs in 4 s of wrk
// at 16 connections, 10 after). One read per key at a time; a renewal never replaces what a later
// read or write answered, nor a headroom value after a local change.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { WindowTracker } from '../../src/cost/window-tracker.ts';
import { HeadroomMemo } from '../../src/limits/headroom-memo.ts';
import type { CompanyWindows } from '../../src/store/store.ts';

const INN = '7707083893';

/** A windows store whose reads wait until the test lets them answer. */
function slowStore() {
  const reads: Array<(w: CompanyWindows) => void> = [];
  const store = {
    windows: (_inn: string) => new Promise<CompanyWindows>((resolve) => reads.push(resolve)),
    openWindow: async (_inn: string, _kind: unknown, until: number) => ({
      dossierUntil: until,
      requisitesUntil: 0,
    }),
    listWindows: async () => [],
  };
  return { store, reads };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('WindowTracker.known renews its memo', () => {
  it('past half its age reads once in the background and keeps answering; the renewal outlives the old read', async () => {
    const clock = new ManualClock();
    const { store, reads } = slowStore();
    const windows = new WindowTracker({ store, clock, windowMs: 900_000, safetyMarginMs: 0, memoMs: 200 });
    const first = windows.get(INN);
    reads.shift()!({ dossierUntil: clock.now() + 60_000, requisitesUntil: 0 });
    await first;

    clock.advance(99);
    expect(windows.known(INN)).toBeDefined();
    expect(reads).toHaveLength(0); // younger than half: no read

    clock.advance(21); // 120 ms
    for (let i = 0; i < 5; i++) expect(windows.known(INN)?.dossierUntil).toBeGreaterThan(0);
    expect(reads).toHaveLength(1); // one read for five asks
    reads.shift()!({ dossierUntil: clock.now() + 90_000, requisitesUntil: 0 });
    await settle();

    clock.advance(150); // 270 ms: the first read has lapsed, the renewal (at 120) has not
    expect(windows.known(INN)?.dossierUntil).toBe(clock.now() - 150 + 90_000);
  });

  it('a renewal that started before a window opened does not replace the opened window', async () => {
    const clock = new ManualClock();
    const { store, reads } = slowStore();
    const windows = new WindowTracker({ store, clock, windowMs: 900_000, safetyMarginMs: 0, memoMs: 200 });
    const first = windows.get(INN);
    reads.shift()!({ dossierUntil: 0, requisitesUntil: 0 });
    await first;
    clock.advance(150);
    windows.known(INN); // starts the renewal
    expect(reads).toHaveLength(1);
    clock.advance(5);
    const opened = await windows.open(INN, 'dossier', clock.now());
    reads.shift()!({ dossierUntil: 0, requisitesUntil: 0 }); // read before the open, answered after it
    await settle();
    expect(windows.known(INN)).toEqual(opened);
  });

  it('a failed renewal lets the memo lapse (the full pipeline reads then) and may be tried again', async () => {
    const clock = new ManualClock();
    let fail = false;
    let calls = 0;
    const store = {
      windows: async () => {
        calls++;
        if (fail) throw new Error('store down');
        return { dossierUntil: 1, requisitesUntil: 0 };
      },
      openWindow: async () => ({ dossierUntil: 0, requisitesUntil: 0 }),
      listWindows: async () => [],
    };
    const windows = new WindowTracker({ store, clock, windowMs: 900_000, safetyMarginMs: 0, memoMs: 200 });
    await windows.get(INN);
    fail = true;
    clock.advance(150);
    expect(windows.known(INN)).toBeDefined();
    await settle();
    expect(calls).toBe(2);
    clock.advance(10);
    expect(windows.known(INN)).toBeDefined(); // the failed read is over: tried again
    await settle();
    expect(calls).toBe(3);
    clock.advance(50); // 210 ms after the only good read
    expect(windows.known(INN)).toBeUndefined();
  });
});

describe('HeadroomMemo.peek renews its entry', () => {
  const value = (remaining: number) => ({
    limitClass: 'key' as const,
    limit: 60,
    remaining,
    resetAtMs: 0,
    nextSlotAtMs: 0,
  });

  it('past half its age reads once in the background and keeps the new value past the old one’s age', async () => {
    const memo = new HeadroomMemo(200);
    const epoch = memo.changed();
    memo.set('a', 1000, value(5), epoch);
    let reads = 0;
    let answer: (v: ReturnType<typeof value>) => void = () => {};
    const read = () => {
      reads++;
      return new Promise<ReturnType<typeof value>>((r) => {
        answer = r;
      });
    };
    expect(memo.peek('a', 1050, read)?.remaining).toBe(5);
    expect(reads).toBe(0);
    for (let i = 0; i < 3; i++) expect(memo.peek('a', 1120, read)?.remaining).toBe(5);
    expect(reads).toBe(1);
    answer(value(4));
    await settle();
    expect(memo.peek('a', 1250, read)?.remaining).toBe(4); // renewed at 1120
    expect(memo.peek('a', 1330)).toBeUndefined(); // and that one lapses at 1320
  });

  it('a renewal read across a local change is not kept', async () => {
    const memo = new HeadroomMemo(200);
    memo.set('a', 1000, value(5), memo.changed());
    let answer: (v: ReturnType<typeof value>) => void = () => {};
    memo.peek(
      'a',
      1150,
      () =>
        new Promise((r) => {
          answer = r;
        }),
    );
    memo.changed(); // a grant here while the read was out
    answer(value(9));
    await settle();
    expect(memo.peek('a', 1160)).toBeUndefined();
  });
});
