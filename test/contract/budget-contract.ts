// The budget role's part of the Store contract (see contract-harness.ts): declared against the
// harness the caller's beforeEach provides, run over every backend.
import { describe, expect, it } from 'vitest';
import { type ContractContext, SLACK_MS, TTL } from './contract-harness.ts';

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

    it('a hold of 0 is released, settled and expires without error', async () => {
      const counters = [counter('z', 250)];
      for (const id of ['z-release', 'z-settle', 'z-expire'])
        expect((await t.store.reserve({ id, amountMinor: 0, counters, holdMs: TTL })).ok).toBe(true);
      await t.store.release('z-release', ['z']);
      await t.store.settle('z-settle', ['z'], 0, 60_000);
      await t.h.pass(TTL + SLACK_MS);
      expect((await t.store.reserve({ id: 'n', amountMinor: 250, counters, holdMs: 60_000 })).ok).toBe(true);
      expect(await t.store.readCounters(['z'])).toEqual([{ key: 'z', spentMinor: 0, reservedMinor: 250 }]);
    });

    it('a hold of 0 (a read a window covers) still meets the caps and replaces an earlier hold', async () => {
      // Over its cap (spend of an unknown outcome settled late): even a free call is refused.
      await t.store.addSpend(['over'], 300, 60_000);
      expect(
        await t.store.reserve({ id: 'f', amountMinor: 0, counters: [counter('over', 250)], holdMs: 60_000 }),
      ).toEqual({ ok: false, key: 'over', limitMinor: 250, spentMinor: 300, reservedMinor: 0 });
      // Under the same id it replaces a hold of 200; under a new id it takes no room.
      const counters = [counter('room', 250), counter('free', null)];
      await t.store.reserve({ id: 'r', amountMinor: 200, counters, holdMs: 60_000 });
      expect((await t.store.reserve({ id: 'r', amountMinor: 0, counters, holdMs: 60_000 })).ok).toBe(true);
      expect((await t.store.reserve({ id: 'new', amountMinor: 0, counters, holdMs: 60_000 })).ok).toBe(true);
      expect(await t.store.readCounters(['room', 'free'])).toEqual([
        { key: 'room', spentMinor: 0, reservedMinor: 0 },
        { key: 'free', spentMinor: 0, reservedMinor: 0 },
      ]);
      expect((await t.store.reserve({ id: 'full', amountMinor: 250, counters, holdMs: 60_000 })).ok).toBe(
        true,
      );
      await t.store.settle('new', ['room', 'free'], 0, 60_000);
      await t.store.release('r', ['room', 'free']);
      expect(await t.store.readCounters(['room'])).toEqual([
        { key: 'room', spentMinor: 0, reservedMinor: 250 },
      ]);
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
