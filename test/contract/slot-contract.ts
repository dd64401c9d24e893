// The slot role's part of the Store contract (the rate limiter's sliding-window logs; see
// contract-harness.ts), run over every backend.
import { describe, expect, it } from 'vitest';
import type { LimitClassSpec } from '../../src/store/index.ts';
import { type ContractContext, SLACK_MS } from './contract-harness.ts';

export function describeSlotContract(t: ContractContext): void {
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

    it('a take with `read` answers, when granted, the states of the classes taken and read right after it', async () => {
      await t.store.takeSlots([cls('suggest', 9), cls('key', 5)], 'a');
      await t.store.pauseClass('suggest', 300);
      const taken = [cls('search', 2), cls('key', 5), cls('search', 2)];
      const read = [cls('suggest', 9), cls('check', 2)];
      const result = await t.store.takeSlots(taken, 'b', read);
      expect(result.ok).toBe(true);
      if (!result.ok) return;
      // A class named twice is taken once and answered once; this take is counted.
      const byName = Object.fromEntries((result.states ?? []).map((s) => [s.name, s]));
      expect(Object.keys(byName).sort()).toEqual(['check', 'key', 'search', 'suggest']);
      expect(result.states).toHaveLength(4);
      expect(byName.search).toEqual({ name: 'search', used: 1, pausedForMs: 0 });
      expect(byName.key).toEqual({ name: 'key', used: 2, pausedForMs: 0 });
      expect(byName.check).toEqual({ name: 'check', used: 0, pausedForMs: 0 });
      expect(byName.suggest).toMatchObject({ name: 'suggest', used: 1 });
      t.expectAbout(byName.suggest!.pausedForMs, 300);
      // The same as a read right after it.
      const states = await t.store.limiterState([cls('search', 2), cls('key', 5), cls('check', 2)]);
      expect(states).toEqual([byName.search, byName.key, byName.check]);
      // The same take again (a retry under the same id) counts its start once.
      const again = await t.store.takeSlots([cls('key', 5)], 'b', [cls('search', 2)]);
      expect(again.ok && again.states).toEqual([
        { name: 'key', used: 2, pausedForMs: 0 },
        { name: 'search', used: 1, pausedForMs: 0 },
      ]);
      // Without `read`, and when refused, there are none.
      expect(await t.store.takeSlots([cls('check', 2)], 'c')).toEqual({ ok: true });
      const refused = await t.store.takeSlots([cls('search', 1)], 'd', read);
      expect(refused).toMatchObject({ ok: false, name: 'search' });
      expect('states' in refused).toBe(false);
      expect(await t.store.limiterState([cls('search', 2)])).toEqual([
        { name: 'search', used: 1, pausedForMs: 0 },
      ]);
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
      // Real time: the sleeps between takes may run long on a loaded machine, so b's age is
      // bounded by what was measured around the two calls (the store decides between them).
      const around: Record<string, { before: number; after: number }> = {};
      for (const id of ['a', 'b', 'c', 'd']) {
        const before = performance.now();
        const result = await t.store.takeSlots([cls('key', id === 'd' ? 2 : 3)], id);
        around[id] = { before, after: performance.now() };
        if (id === 'd') {
          expect(result.ok).toBe(false);
          if (result.ok) return;
          if (t.h.exactTime)
            expect(result.retryAfterMs).toBe(W - 100); // until b (taken at +50) leaves
          else {
            const { b, d } = around as Record<'b' | 'd', { before: number; after: number }>;
            expect(result.retryAfterMs).toBeLessThanOrEqual(Math.ceil(W - (d.before - b.after)) + 2);
            expect(result.retryAfterMs).toBeGreaterThanOrEqual(Math.floor(W - (d.after - b.before)) - 2);
          }
        } else await t.h.pass(50);
      }
    });
  });
}
