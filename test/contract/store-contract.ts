// One contract for every Store backend: each backend's test file calls runStoreContract with a
// factory. Durations are small so they also run in real time (Redis uses server time); with a
// manual clock `pass` just advances it and timing assertions become exact.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LimitClassSpec, Store } from '../../src/store/index.ts';

export interface StoreHarness {
  store: Store;
  /** Lets `ms` pass for the store: advances a manual clock, or sleeps for real. */
  pass(ms: number): Promise<void>;
  /** True when pass() is exact, so retry-after values can be compared exactly. */
  exactTime: boolean;
  close(): Promise<void>;
}

export type StoreFactory = () => Promise<StoreHarness>;

/** Real-time backends get this slack in timing assertions. */
const SLACK_MS = 60;
const TTL = 200;

export function runStoreContract(name: string, factory: StoreFactory): void {
  describe(`Store contract: ${name}`, () => {
    let h: StoreHarness;
    let store: Store;
    beforeEach(async () => {
      h = await factory();
      store = h.store;
    });
    afterEach(async () => {
      await h.close();
    });

    /** `actual` is `expected`, exactly with a manual clock, within slack (never above) in real time. */
    function expectAbout(actual: number, expected: number): void {
      if (h.exactTime) expect(actual).toBe(expected);
      else {
        expect(actual).toBeLessThanOrEqual(expected);
        expect(actual).toBeGreaterThan(expected - SLACK_MS);
      }
    }

    it('pings and names its kind', async () => {
      await store.ping();
      expect(['memory', 'redis']).toContain(store.kind);
    });

    describe('cache', () => {
      it('stores and returns buffers; a missing key is null', async () => {
        const body = Buffer.from([0, 1, 2, 255, 254]);
        await store.cacheSet('dossier:7707083893', body, { ttlMs: 60_000 });
        expect(await store.cacheGet('dossier:7707083893')).toEqual(body);
        expect(await store.cacheGet('dossier:0000000000')).toBeNull();
      });

      it('expires entries after their TTL', async () => {
        await store.cacheSet('search:q=abc', Buffer.from('x'), { ttlMs: TTL });
        await h.pass(TTL / 4);
        expect(await store.cacheGet('search:q=abc')).not.toBeNull();
        await h.pass(TTL + SLACK_MS);
        expect(await store.cacheGet('search:q=abc')).toBeNull();
      });

      it('deletes one entry', async () => {
        await store.cacheSet('a', Buffer.from('1'), { ttlMs: 60_000 });
        await store.cacheDelete('a');
        await store.cacheDelete('never-set');
        expect(await store.cacheGet('a')).toBeNull();
      });

      it('purges every entry carrying a tag and counts them', async () => {
        const opts = (tags: string[]) => ({ ttlMs: 60_000, tags });
        await store.cacheSet('dossier:7707083893', Buffer.from('d'), opts(['inn:7707083893']));
        await store.cacheSet('requisites:7707083893', Buffer.from('r'), opts(['inn:7707083893', 'kind:req']));
        await store.cacheSet('dossier:7736050003', Buffer.from('o'), opts(['inn:7736050003']));
        expect(await store.cachePurgeTag('inn:7707083893')).toBe(2);
        expect(await store.cacheGet('dossier:7707083893')).toBeNull();
        expect(await store.cacheGet('requisites:7707083893')).toBeNull();
        expect(await store.cacheGet('dossier:7736050003')).not.toBeNull();
        expect(await store.cachePurgeTag('inn:7707083893')).toBe(0);
        expect(await store.cachePurgeTag('kind:req')).toBe(0);
        expect(await store.cachePurgeTag('no-such-tag')).toBe(0);
      });

      it('does not count already-expired entries in a purge', async () => {
        await store.cacheSet('short', Buffer.from('s'), { ttlMs: TTL, tags: ['t'] });
        await store.cacheSet('long', Buffer.from('l'), { ttlMs: 60_000, tags: ['t'] });
        await h.pass(TTL + SLACK_MS);
        expect(await store.cachePurgeTag('t')).toBe(1);
      });

      it('tracks bytes (body + key) through set, overwrite, delete, purge and expiry', async () => {
        const base = await store.cacheBytes();
        expect(base).toBe(0);
        await store.cacheSet('k1', Buffer.alloc(100), { ttlMs: 60_000, tags: ['g'] });
        await store.cacheSet('k2', Buffer.alloc(50), { ttlMs: TTL });
        expect(await store.cacheBytes()).toBe(102 + 52);
        await store.cacheSet('k1', Buffer.alloc(10), { ttlMs: 60_000, tags: ['g'] });
        expect(await store.cacheBytes()).toBe(12 + 52);
        await store.cacheDelete('k2');
        expect(await store.cacheBytes()).toBe(12);
        await store.cachePurgeTag('g');
        expect(await store.cacheBytes()).toBe(0);
        await store.cacheSet('k3', Buffer.alloc(30), { ttlMs: TTL });
        expect(await store.cacheBytes()).toBe(32);
        await h.pass(TTL + SLACK_MS);
        expect(await store.cacheBytes()).toBe(0);
      });

      it('keeps cache and state apart even under the same logical key', async () => {
        await store.cacheSet('same', Buffer.from('cache'), { ttlMs: 60_000 });
        await store.set('same', 'state', 60_000);
        expect((await store.cacheGet('same'))?.toString()).toBe('cache');
        expect(await store.get('same')).toBe('state');
      });
    });

    describe('state', () => {
      it('sets, overwrites, reads and deletes', async () => {
        expect(await store.get('window:7707083893')).toBeNull();
        await store.set('window:7707083893', 'v1', 60_000);
        await store.set('window:7707083893', 'v2', 60_000);
        expect(await store.get('window:7707083893')).toBe('v2');
        await store.del('window:7707083893');
        expect(await store.get('window:7707083893')).toBeNull();
      });

      it('expires keys after their TTL', async () => {
        await store.set('ticket:abc', 'x', TTL);
        await h.pass(TTL / 4);
        expect(await store.get('ticket:abc')).toBe('x');
        await h.pass(TTL + SLACK_MS);
        expect(await store.get('ticket:abc')).toBeNull();
      });

      it('setIfAbsent: exactly one of 20 concurrent callers wins', async () => {
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => store.setIfAbsent('event:evt_1', `r${i}`, 60_000)),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
        expect(await store.get('event:evt_1')).toBe(`r${results.indexOf(true)}`);
      });

      it('setIfAbsent succeeds again once the key expired', async () => {
        expect(await store.setIfAbsent('dedup:1', 'a', TTL)).toBe(true);
        expect(await store.setIfAbsent('dedup:1', 'b', TTL)).toBe(false);
        await h.pass(TTL + SLACK_MS);
        expect(await store.setIfAbsent('dedup:1', 'c', TTL)).toBe(true);
        expect(await store.get('dedup:1')).toBe('c');
      });

      it('incrBy starts at 0, adds (also negative amounts and concurrently), refreshes the TTL', async () => {
        expect(await store.incrBy('n', 5, 60_000)).toBe(5);
        expect(await store.incrBy('n', -2, 60_000)).toBe(3);
        await Promise.all(Array.from({ length: 10 }, () => store.incrBy('n', 1, 60_000)));
        expect(await store.get('n')).toBe('13');
        await store.incrBy('short', 1, TTL);
        await h.pass(TTL / 2);
        await store.incrBy('short', 1, TTL);
        await h.pass(TTL / 2 + 20);
        expect(await store.get('short')).toBe('2');
        await h.pass(TTL + SLACK_MS);
        expect(await store.get('short')).toBeNull();
      });

      it('lists keys by logical prefix, bounded by limit, without expired ones', async () => {
        await store.set('window:7707083893', '1', 60_000);
        await store.set('window:7736050003', '1', 60_000);
        await store.set('window:other', '1', 60_000);
        await store.set('windowless', '1', 60_000);
        await store.set('lock:window:7707083893', '1', 60_000);
        await store.set('window:1234567890', '1', TTL);
        await h.pass(TTL + SLACK_MS);
        expect((await store.keys('window:')).sort()).toEqual([
          'window:7707083893',
          'window:7736050003',
          'window:other',
        ]);
        expect(await store.keys('window:', 2)).toHaveLength(2);
        expect(await store.keys('nothing:')).toEqual([]);
      });
    });

    describe('locks', () => {
      it('only the owner releases; then another can acquire', async () => {
        expect(await store.acquireLock('charge:7707083893', 'a', 60_000)).toBe(true);
        expect(await store.acquireLock('charge:7707083893', 'b', 60_000)).toBe(false);
        expect(await store.releaseLock('charge:7707083893', 'b')).toBe(false);
        expect(await store.releaseLock('charge:7707083893', 'a')).toBe(true);
        expect(await store.releaseLock('charge:7707083893', 'a')).toBe(false);
        expect(await store.acquireLock('charge:7707083893', 'b', 60_000)).toBe(true);
      });

      it('exactly one of 20 concurrent acquirers wins', async () => {
        const won = await Promise.all(
          Array.from({ length: 20 }, (_, i) => store.acquireLock('l', `o${i}`, 60_000)),
        );
        expect(won.filter(Boolean)).toHaveLength(1);
      });

      it('expires, and the late owner can no longer release the new holder', async () => {
        expect(await store.acquireLock('l2', 'a', TTL)).toBe(true);
        await h.pass(TTL + SLACK_MS);
        expect(await store.acquireLock('l2', 'b', 60_000)).toBe(true);
        expect(await store.releaseLock('l2', 'a')).toBe(false);
        expect(await store.get('l2')).toBe('b');
      });
    });

    describe('pub/sub', () => {
      it('delivers to every subscriber, asynchronously, until unsubscribed', async () => {
        const a: string[] = [];
        const b: string[] = [];
        const offA = await store.subscribe('done:req1', (m) => a.push(m));
        const offB = await store.subscribe('done:req1', (m) => b.push(m));
        const published = store.publish('done:req1', 'hello');
        expect(a).toEqual([]); // never inside publish()
        await published;
        await until(() => a.length === 1 && b.length === 1);
        expect(a).toEqual(['hello']);
        await offA();
        await store.publish('done:req1', 'second');
        await until(() => b.length === 2);
        expect(b).toEqual(['hello', 'second']);
        expect(a).toEqual(['hello']);
        await offB();
        await store.publish('done:req1', 'third');
        await settle(50);
        expect(b).toHaveLength(2);
      });

      it('does not deliver other channels', async () => {
        const got: string[] = [];
        const off = await store.subscribe('ch:a', (m) => got.push(m));
        await store.publish('ch:b', 'x');
        await store.publish('ch:a', 'y');
        await until(() => got.length === 1);
        await settle(30);
        expect(got).toEqual(['y']);
        await off();
      });
    });

    describeBudgets();
    describeLimiter();
    describeLedger();

    function describeBudgets(): void {
      const counter = (key: string, limitMinor: number | null) => ({ key, limitMinor, ttlMs: 60_000 });

      describe('budgets', () => {
        it('reserves, shows the hold, settles with a different actual amount', async () => {
          const counters = [counter('app:crm:day:2026-01-15', 1000), counter('global:month:2026-01', 5000)];
          expect(await store.reserve({ id: 'r1', amountMinor: 300, counters, holdMs: 60_000 })).toEqual({
            ok: true,
          });
          expect(await store.readCounters(counters.map((c) => c.key))).toEqual([
            { key: 'app:crm:day:2026-01-15', spentMinor: 0, reservedMinor: 300 },
            { key: 'global:month:2026-01', spentMinor: 0, reservedMinor: 300 },
          ]);
          await store.settle(
            'r1',
            counters.map((c) => c.key),
            250,
            60_000,
          );
          expect(
            await store.readCounters(['app:crm:day:2026-01-15', 'global:month:2026-01', 'unknown']),
          ).toEqual([
            { key: 'app:crm:day:2026-01-15', spentMinor: 250, reservedMinor: 0 },
            { key: 'global:month:2026-01', spentMinor: 250, reservedMinor: 0 },
            { key: 'unknown', spentMinor: 0, reservedMinor: 0 },
          ]);
        });

        it('is all or nothing across counters and explains the refusal', async () => {
          await store.addSpend(['b'], 100, 60_000);
          const counters = [counter('a', 1000), counter('b', 250), counter('c', null)];
          await store.reserve({ id: 'x', amountMinor: 100, counters, holdMs: 60_000 });
          const refused = await store.reserve({ id: 'y', amountMinor: 100, counters, holdMs: 60_000 });
          expect(refused).toEqual({
            ok: false,
            key: 'b',
            limitMinor: 250,
            spentMinor: 100,
            reservedMinor: 100,
          });
          expect(await store.readCounters(['a', 'b', 'c'])).toEqual([
            { key: 'a', spentMinor: 0, reservedMinor: 100 },
            { key: 'b', spentMinor: 100, reservedMinor: 100 },
            { key: 'c', spentMinor: 0, reservedMinor: 100 },
          ]);
        });

        it('refuses an amount larger than the cap of an empty counter', async () => {
          const r = await store.reserve({
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
              store.reserve({ id: `c${i}`, amountMinor: 100, counters, holdMs: 60_000 }),
            ),
          );
          expect(results.filter((r) => r.ok)).toHaveLength(2);
          const [global, app] = await store.readCounters(['global:day', 'app:x:day']);
          expect(global?.reservedMinor).toBe(200);
          expect(app?.reservedMinor).toBe(200);
        });

        it('release drops the hold without spending', async () => {
          await store.reserve({ id: 'r', amountMinor: 200, counters: [counter('k', 250)], holdMs: 60_000 });
          await store.release('r', ['k']);
          await store.release('r', ['k']);
          await store.release('never', ['k', 'missing']);
          expect(await store.readCounters(['k'])).toEqual([{ key: 'k', spentMinor: 0, reservedMinor: 0 }]);
          expect(
            (
              await store.reserve({
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
          expect((await store.reserve({ id: 'dead', amountMinor: 200, counters, holdMs: TTL })).ok).toBe(
            true,
          );
          expect((await store.reserve({ id: 'n1', amountMinor: 100, counters, holdMs: TTL })).ok).toBe(false);
          await h.pass(TTL + SLACK_MS);
          expect((await store.reserve({ id: 'n2', amountMinor: 100, counters, holdMs: 60_000 })).ok).toBe(
            true,
          );
          expect(await store.readCounters(['h'])).toEqual([{ key: 'h', spentMinor: 0, reservedMinor: 100 }]);
          await store.settle('dead', ['h'], 200, 60_000);
          expect(await store.readCounters(['h'])).toEqual([
            { key: 'h', spentMinor: 200, reservedMinor: 100 },
          ]);
        });

        it('reserving again under the same id replaces that hold', async () => {
          const counters = [counter('same', 250)];
          await store.reserve({ id: 'r', amountMinor: 200, counters, holdMs: 60_000 });
          expect((await store.reserve({ id: 'r', amountMinor: 250, counters, holdMs: 60_000 })).ok).toBe(
            true,
          );
          expect(await store.readCounters(['same'])).toEqual([
            { key: 'same', spentMinor: 0, reservedMinor: 250 },
          ]);
        });

        it('addSpend counts without a hold and later reservations respect it', async () => {
          await store.addSpend(['w', 'w'], 200, 60_000);
          expect(await store.readCounters(['w'])).toEqual([{ key: 'w', spentMinor: 200, reservedMinor: 0 }]);
          const r = await store.reserve({
            id: 'q',
            amountMinor: 100,
            counters: [counter('w', 250)],
            holdMs: 60_000,
          });
          expect(r).toEqual({ ok: false, key: 'w', limitMinor: 250, spentMinor: 200, reservedMinor: 0 });
        });

        it('drops a counter ttlMs after its last change', async () => {
          await store.addSpend(['p'], 100, TTL);
          await h.pass(TTL + SLACK_MS);
          expect(await store.readCounters(['p'])).toEqual([{ key: 'p', spentMinor: 0, reservedMinor: 0 }]);
        });
      });
    }

    function describeLimiter(): void {
      const W = 400;
      const cls = (name: string, limit: number, windowMs = W): LimitClassSpec => ({ name, limit, windowMs });

      describe('rate limits', () => {
        it('lets exactly N of 3N concurrent takes through', async () => {
          const results = await Promise.all(
            Array.from({ length: 15 }, (_, i) => store.takeSlots([cls('search', 5)], `t${i}`)),
          );
          expect(results.filter((r) => r.ok)).toHaveLength(5);
          const refused = results.find((r) => !r.ok);
          expect(refused).toMatchObject({ ok: false, name: 'search' });
          expect(await store.limiterState([cls('search', 5)])).toEqual([
            { name: 'search', used: 5, pausedForMs: 0 },
          ]);
        });

        it('takes every class or none', async () => {
          const search = [cls('search', 2), cls('key', 1)];
          expect(await store.takeSlots(search, 'a')).toEqual({ ok: true });
          const refused = await store.takeSlots(search, 'b');
          expect(refused).toMatchObject({ ok: false, name: 'key' });
          expect(await store.limiterState(search)).toEqual([
            { name: 'search', used: 1, pausedForMs: 0 },
            { name: 'key', used: 1, pausedForMs: 0 },
          ]);
          expect(await store.takeSlots([cls('suggest', 1)], 'c')).toEqual({ ok: true });
        });

        it('says when the oldest slot leaves the window, and frees it then', async () => {
          expect((await store.takeSlots([cls('check', 1)], 'a')).ok).toBe(true);
          await h.pass(100);
          const refused = await store.takeSlots([cls('check', 1)], 'b');
          expect(refused.ok).toBe(false);
          if (refused.ok) return;
          expect(refused.name).toBe('check');
          expectAbout(refused.retryAfterMs, W - 100);
          await h.pass(refused.retryAfterMs);
          expect(await store.takeSlots([cls('check', 1)], 'c')).toEqual({ ok: true });
        });

        it('slides: a slot counts for exactly one window after it was taken', async () => {
          const c = cls('key', 2);
          await store.takeSlots([c], 'a');
          await h.pass(W / 2);
          await store.takeSlots([c], 'b');
          await h.pass(W / 2 + 40);
          expect(await store.limiterState([c])).toEqual([{ name: 'key', used: 1, pausedForMs: 0 }]);
          expect(await store.takeSlots([c], 'c')).toEqual({ ok: true });
          const refused = await store.takeSlots([c], 'd');
          expect(refused.ok).toBe(false);
          if (!refused.ok) expectAbout(refused.retryAfterMs, W / 2 - 40);
        });

        it('returnSlots gives a slot back', async () => {
          await store.takeSlots([cls('search', 1), cls('key', 5)], 'a');
          await store.returnSlots(['search', 'key'], 'a');
          await store.returnSlots(['search'], 'never-taken');
          expect(await store.limiterState([cls('search', 1), cls('key', 5)])).toEqual([
            { name: 'search', used: 0, pausedForMs: 0 },
            { name: 'key', used: 0, pausedForMs: 0 },
          ]);
          expect(await store.takeSlots([cls('search', 1)], 'b')).toEqual({ ok: true });
        });

        it('pauseClass refuses for its duration, is never shortened, then lifts', async () => {
          await store.pauseClass('key', 300);
          await store.pauseClass('key', 50);
          const refused = await store.takeSlots([cls('suggest', 10), cls('key', 10)], 'a');
          expect(refused.ok).toBe(false);
          if (!refused.ok) {
            expect(refused.name).toBe('key');
            expectAbout(refused.retryAfterMs, 300);
          }
          const [state] = await store.limiterState([cls('key', 10)]);
          expectAbout(state!.pausedForMs, 300);
          await store.pauseClass('key', 400); // a longer pause extends
          expectAbout((await store.limiterState([cls('key', 10)]))[0]!.pausedForMs, 400);
          await h.pass(400 + SLACK_MS);
          expect(await store.takeSlots([cls('key', 10)], 'b')).toEqual({ ok: true });
          expect(await store.limiterState([cls('key', 10), cls('suggest', 10)])).toEqual([
            { name: 'key', used: 1, pausedForMs: 0 },
            { name: 'suggest', used: 0, pausedForMs: 0 },
          ]);
        });

        it('reports the class that frees up last when several refuse', async () => {
          await store.takeSlots([cls('search', 1)], 'a');
          await store.pauseClass('key', 2000);
          const refused = await store.takeSlots([cls('search', 1), cls('key', 10)], 'b');
          expect(refused).toMatchObject({ ok: false, name: 'key' });
        });

        it('a limit lowered below the slots in use waits for enough of them to leave', async () => {
          for (const id of ['a', 'b', 'c']) {
            await store.takeSlots([cls('key', 3)], id);
            await h.pass(50);
          }
          const refused = await store.takeSlots([cls('key', 2)], 'd');
          expect(refused.ok).toBe(false);
          if (!refused.ok) expectAbout(refused.retryAfterMs, W - 100); // until b (taken at +50) leaves
        });
      });
    }

    function describeLedger(): void {
      describe('ledger', () => {
        const t0 = Date.UTC(2026, 0, 15, 9, 0, 0);
        it('appends time-ordered records and reads them back by time range and limit', async () => {
          const ids: string[] = [];
          ids.push(
            await store.appendLedger({ at: t0, app: 'crm', amountMinor: 300, inn: '7707083893', ok: true }),
          );
          ids.push(await store.appendLedger({ at: t0 + 10, app: 'erp', amountMinor: 0, note: null }));
          ids.push(await store.appendLedger({ at: t0 + 10, app: 'erp', amountMinor: 5 }));
          ids.push(await store.appendLedger({ at: t0 + 20, app: 'crm', amountMinor: 7, gone: undefined }));
          expect(new Set(ids).size).toBe(4);
          const all = await store.readLedger(t0, t0 + 21);
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
          expect((await store.readLedger(t0 + 10, t0 + 20)).map((r) => r.amountMinor)).toEqual([0, 5]);
          expect((await store.readLedger(t0, t0 + 100, 2)).map((r) => r.id)).toEqual(ids.slice(0, 2));
          expect(await store.readLedger(t0 + 21, t0 + 100)).toEqual([]);
          expect(await store.readLedger(t0 + 20, t0 + 20)).toEqual([]);
        });

        it('keeps a late record after the later one it follows', async () => {
          const a = await store.appendLedger({ at: t0 + 30, n: 1 });
          const b = await store.appendLedger({ at: t0 + 25, n: 2 });
          const records = await store.readLedger(t0, t0 + 31);
          expect(records.map((r) => r.id)).toEqual([a, b]);
          expect(records.map((r) => r.at)).toEqual([t0 + 30, t0 + 25]);
          expect(b.startsWith(`${t0 + 30}-`)).toBe(true);
        });
      });
    }
  });
}

async function settle(ms: number): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
}

/** Waits (real time) until `check` holds, failing after 2 s. */
export async function until(check: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await settle(5);
  }
}
