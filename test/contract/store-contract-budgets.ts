// The budget, rate-limit and ledger parts of the Store contract (see store-contract.ts). Each
// function declares its describe block against the harness the caller's beforeEach provides.
import { describe, expect, it } from 'vitest';
import type { LimitClassSpec } from '../../src/store/index.ts';
import type { ContractContext } from './store-contract.ts';

/** Real-time backends get this slack in timing assertions (room for a busy CI machine). */
export const SLACK_MS = 120;
/** A short TTL that real-time backends can still tell apart from "expired". */
export const TTL = 300;

export function describeBudgetContract(t: ContractContext): void {
  const counter = (key: string, limitMinor: number | null) => ({ key, limitMinor, ttlMs: 60_000 });

  describe('budgets', () => {
    it('reserves, shows the hold, settles with a different actual amount', async () => {
      const counters = [counter('app:crm:day:2026-01-15', 1000), counter('global:month:2026-01', 5000)];
      expect(await t.store.reserve({ id: 'r1', amountMinor: 300, counters, holdMs: 60_000 })).toEqual({
        ok: true,
      });
      expect(await t.store.readCounters(counters.map((c) => c.key))).toEqual([
        { key: 'app:crm:day:2026-01-15', spentMinor: 0, reservedMinor: 300 },
        { key: 'global:month:2026-01', spentMinor: 0, reservedMinor: 300 },
      ]);
      await t.store.settle(
        'r1',
        counters.map((c) => c.key),
        250,
        60_000,
      );
      expect(
        await t.store.readCounters(['app:crm:day:2026-01-15', 'global:month:2026-01', 'unknown']),
      ).toEqual([
        { key: 'app:crm:day:2026-01-15', spentMinor: 250, reservedMinor: 0 },
        { key: 'global:month:2026-01', spentMinor: 250, reservedMinor: 0 },
        { key: 'unknown', spentMinor: 0, reservedMinor: 0 },
      ]);
    });

    it('is all or nothing across counters and explains the refusal', async () => {
      await t.store.addSpend(['b'], 100, 60_000);
      const counters = [counter('a', 1000), counter('b', 250), counter('c', null)];
      await t.store.reserve({ id: 'x', amountMinor: 100, counters, holdMs: 60_000 });
      const refused = await t.store.reserve({ id: 'y', amountMinor: 100, counters, holdMs: 60_000 });
      expect(refused).toEqual({
        ok: false,
        key: 'b',
        limitMinor: 250,
        spentMinor: 100,
        reservedMinor: 100,
      });
      expect(await t.store.readCounters(['a', 'b', 'c'])).toEqual([
        { key: 'a', spentMinor: 0, reservedMinor: 100 },
        { key: 'b', spentMinor: 100, reservedMinor: 100 },
        { key: 'c', spentMinor: 0, reservedMinor: 100 },
      ]);
    });

    it('refuses an amount larger than the cap of an empty counter', async () => {
      const r = await t.store.reserve({
        id: 'z',
        amountMinor: 300,
        counters: [counter('e', 250)],
        holdMs: 60_000,
      });
      expect(r).toEqual({ ok: false, key: 'e', limitMinor: 250, spentMinor: 0, reservedMinor: 0 });
    });

    it('lets exactly 2 of 10 concurrent reservations of 100 through a cap of 250', async () => {
      const counters = [counter('global:day', 250), counter('app:x:day', null)];
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          t.store.reserve({ id: `c${i}`, amountMinor: 100, counters, holdMs: 60_000 }),
        ),
      );
      expect(results.filter((r) => r.ok)).toHaveLength(2);
      const [global, app] = await t.store.readCounters(['global:day', 'app:x:day']);
      expect(global?.reservedMinor).toBe(200);
      expect(app?.reservedMinor).toBe(200);
    });

    it('release drops the hold without spending', async () => {
      await t.store.reserve({ id: 'r', amountMinor: 200, counters: [counter('k', 250)], holdMs: 60_000 });
      await t.store.release('r', ['k']);
      await t.store.release('r', ['k']);
      await t.store.release('never', ['k', 'missing']);
      expect(await t.store.readCounters(['k'])).toEqual([{ key: 'k', spentMinor: 0, reservedMinor: 0 }]);
      expect(
        (
          await t.store.reserve({
            id: 's',
            amountMinor: 250,
            counters: [counter('k', 250)],
            holdMs: 60_000,
          })
        ).ok,
      ).toBe(true);
    });

    it('frees capacity of a hold never settled after holdMs; a late settle still spends', async () => {
      const counters = [counter('h', 250)];
      expect((await t.store.reserve({ id: 'dead', amountMinor: 200, counters, holdMs: TTL })).ok).toBe(true);
      expect((await t.store.reserve({ id: 'n1', amountMinor: 100, counters, holdMs: TTL })).ok).toBe(false);
      await t.h.pass(TTL + SLACK_MS);
      expect((await t.store.reserve({ id: 'n2', amountMinor: 100, counters, holdMs: 60_000 })).ok).toBe(true);
      expect(await t.store.readCounters(['h'])).toEqual([{ key: 'h', spentMinor: 0, reservedMinor: 100 }]);
      await t.store.settle('dead', ['h'], 200, 60_000);
      expect(await t.store.readCounters(['h'])).toEqual([{ key: 'h', spentMinor: 200, reservedMinor: 100 }]);
    });

    it('reserving again under the same id replaces that hold', async () => {
      const counters = [counter('same', 250)];
      await t.store.reserve({ id: 'r', amountMinor: 200, counters, holdMs: 60_000 });
      expect((await t.store.reserve({ id: 'r', amountMinor: 250, counters, holdMs: 60_000 })).ok).toBe(true);
      expect(await t.store.readCounters(['same'])).toEqual([
        { key: 'same', spentMinor: 0, reservedMinor: 250 },
      ]);
    });

    it('addSpend counts without a hold and later reservations respect it', async () => {
      await t.store.addSpend(['w', 'w'], 200, 60_000);
      expect(await t.store.readCounters(['w'])).toEqual([{ key: 'w', spentMinor: 200, reservedMinor: 0 }]);
      const r = await t.store.reserve({
        id: 'q',
        amountMinor: 100,
        counters: [counter('w', 250)],
        holdMs: 60_000,
      });
      expect(r).toEqual({ ok: false, key: 'w', limitMinor: 250, spentMinor: 200, reservedMinor: 0 });
    });

    it('drops a counter ttlMs after its last change', async () => {
      await t.store.addSpend(['p'], 100, TTL);
      await t.h.pass(TTL + SLACK_MS);
      expect(await t.store.readCounters(['p'])).toEqual([{ key: 'p', spentMinor: 0, reservedMinor: 0 }]);
    });
  });
}

export function describeLimiterContract(t: ContractContext): void {
  const W = 400;
  const cls = (name: string, limit: number, windowMs = W): LimitClassSpec => ({ name, limit, windowMs });

  describe('rate limits', () => {
    it('lets exactly N of 3N concurrent takes through', async () => {
      const results = await Promise.all(
        Array.from({ length: 15 }, (_, i) => t.store.takeSlots([cls('search', 5)], `t${i}`)),
      );
      expect(results.filter((r) => r.ok)).toHaveLength(5);
      const refused = results.find((r) => !r.ok);
      expect(refused).toMatchObject({ ok: false, name: 'search' });
      expect(await t.store.limiterState([cls('search', 5)])).toEqual([
        { name: 'search', used: 5, pausedForMs: 0 },
      ]);
    });

    it('takes every class or none', async () => {
      const search = [cls('search', 2), cls('key', 1)];
      expect(await t.store.takeSlots(search, 'a')).toEqual({ ok: true });
      const refused = await t.store.takeSlots(search, 'b');
      expect(refused).toMatchObject({ ok: false, name: 'key' });
      expect(await t.store.limiterState(search)).toEqual([
        { name: 'search', used: 1, pausedForMs: 0 },
        { name: 'key', used: 1, pausedForMs: 0 },
      ]);
      expect(await t.store.takeSlots([cls('suggest', 1)], 'c')).toEqual({ ok: true });
    });

    it('says when the oldest slot leaves the window, and frees it then', async () => {
      expect((await t.store.takeSlots([cls('check', 1)], 'a')).ok).toBe(true);
      await t.h.pass(100);
      const refused = await t.store.takeSlots([cls('check', 1)], 'b');
      expect(refused.ok).toBe(false);
      if (refused.ok) return;
      expect(refused.name).toBe('check');
      t.expectAbout(refused.retryAfterMs, W - 100);
      await t.h.pass(refused.retryAfterMs);
      expect(await t.store.takeSlots([cls('check', 1)], 'c')).toEqual({ ok: true });
    });

    it('slides: a slot counts for exactly one window after it was taken', async () => {
      const c = cls('key', 2);
      await t.store.takeSlots([c], 'a');
      await t.h.pass(W / 2);
      await t.store.takeSlots([c], 'b');
      await t.h.pass(W / 2 + 40);
      expect(await t.store.limiterState([c])).toEqual([{ name: 'key', used: 1, pausedForMs: 0 }]);
      expect(await t.store.takeSlots([c], 'c')).toEqual({ ok: true });
      const refused = await t.store.takeSlots([c], 'd');
      expect(refused.ok).toBe(false);
      if (!refused.ok) t.expectAbout(refused.retryAfterMs, W / 2 - 40);
    });

    it('returnSlots gives a slot back', async () => {
      await t.store.takeSlots([cls('search', 1), cls('key', 5)], 'a');
      await t.store.returnSlots(['search', 'key'], 'a');
      await t.store.returnSlots(['search'], 'never-taken');
      expect(await t.store.limiterState([cls('search', 1), cls('key', 5)])).toEqual([
        { name: 'search', used: 0, pausedForMs: 0 },
        { name: 'key', used: 0, pausedForMs: 0 },
      ]);
      expect(await t.store.takeSlots([cls('search', 1)], 'b')).toEqual({ ok: true });
    });

    it('pauseClass refuses for its duration, is never shortened, then lifts', async () => {
      await t.store.pauseClass('key', 300);
      await t.store.pauseClass('key', 50);
      await t.store.pauseClass('key', 0);
      await t.store.pauseClass('search', -5);
      const refused = await t.store.takeSlots([cls('suggest', 10), cls('key', 10)], 'a');
      expect(refused.ok).toBe(false);
      if (!refused.ok) {
        expect(refused.name).toBe('key');
        t.expectAbout(refused.retryAfterMs, 300);
      }
      expect((await t.store.limiterState([cls('search', 10)]))[0]!.pausedForMs).toBe(0);
      const [state] = await t.store.limiterState([cls('key', 10)]);
      t.expectAbout(state!.pausedForMs, 300);
      await t.store.pauseClass('key', 400); // a longer pause extends
      t.expectAbout((await t.store.limiterState([cls('key', 10)]))[0]!.pausedForMs, 400);
      await t.h.pass(400 + SLACK_MS);
      expect(await t.store.takeSlots([cls('key', 10)], 'b')).toEqual({ ok: true });
      expect(await t.store.limiterState([cls('key', 10), cls('suggest', 10)])).toEqual([
        { name: 'key', used: 1, pausedForMs: 0 },
        { name: 'suggest', used: 0, pausedForMs: 0 },
      ]);
    });

    it('reports the class that frees up last when several refuse', async () => {
      await t.store.takeSlots([cls('search', 1)], 'a');
      await t.store.pauseClass('key', 2000);
      const refused = await t.store.takeSlots([cls('search', 1), cls('key', 10)], 'b');
      expect(refused).toMatchObject({ ok: false, name: 'key' });
    });

    it('a limit lowered below the slots in use waits for enough of them to leave', async () => {
      for (const id of ['a', 'b', 'c']) {
        await t.store.takeSlots([cls('key', 3)], id);
        await t.h.pass(50);
      }
      const refused = await t.store.takeSlots([cls('key', 2)], 'd');
      expect(refused.ok).toBe(false);
      if (!refused.ok) t.expectAbout(refused.retryAfterMs, W - 100); // until b (taken at +50) leaves
    });
  });
}

export function describeLedgerContract(t: ContractContext): void {
  describe('ledger', () => {
    const t0 = Date.UTC(2026, 0, 15, 9, 0, 0);
    it('appends time-ordered records and reads them back by time range and limit', async () => {
      const ids: string[] = [];
      ids.push(
        await t.store.appendLedger({ at: t0, app: 'crm', amountMinor: 300, inn: '7707083893', ok: true }),
      );
      ids.push(await t.store.appendLedger({ at: t0 + 10, app: 'erp', amountMinor: 0, note: null }));
      ids.push(await t.store.appendLedger({ at: t0 + 10, app: 'erp', amountMinor: 5 }));
      ids.push(await t.store.appendLedger({ at: t0 + 20, app: 'crm', amountMinor: 7, gone: undefined }));
      expect(new Set(ids).size).toBe(4);
      const all = await t.store.readLedger(t0, t0 + 21);
      expect(all.map((r) => r.id)).toEqual(ids);
      expect(all[0]).toEqual({
        id: ids[0],
        at: t0,
        app: 'crm',
        amountMinor: 300,
        inn: '7707083893',
        ok: true,
      });
      expect(all[1]).toEqual({ id: ids[1], at: t0 + 10, app: 'erp', amountMinor: 0, note: null });
      expect(all[3]).toEqual({ id: ids[3], at: t0 + 20, app: 'crm', amountMinor: 7 });
      expect((await t.store.readLedger(t0 + 10, t0 + 20)).map((r) => r.amountMinor)).toEqual([0, 5]);
      expect((await t.store.readLedger(t0, t0 + 100, 2)).map((r) => r.id)).toEqual(ids.slice(0, 2));
      expect(await t.store.readLedger(t0 + 21, t0 + 100)).toEqual([]);
      expect(await t.store.readLedger(t0 + 20, t0 + 20)).toEqual([]);
    });

    it('keeps a late record after the later one it follows', async () => {
      const a = await t.store.appendLedger({ at: t0 + 30, n: 1 });
      const b = await t.store.appendLedger({ at: t0 + 25, n: 2 });
      const records = await t.store.readLedger(t0, t0 + 31);
      expect(records.map((r) => r.id)).toEqual([a, b]);
      expect(records.map((r) => r.at)).toEqual([t0 + 30, t0 + 25]);
      expect(b.startsWith(`${t0 + 30}-`)).toBe(true);
    });
  });
}
