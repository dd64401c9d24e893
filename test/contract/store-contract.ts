// One contract for every Store backend: each backend's test file calls runStoreContract with a
// factory. Durations are small so they also run in real time (Redis uses server time); with a
// manual clock `pass` just advances it and timing assertions become exact.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/index.ts';
import {
  describeBudgetContract,
  describeLedgerContract,
  describeLimiterContract,
  SLACK_MS,
  TTL,
} from './store-contract-budgets.ts';

export interface StoreHarness {
  store: Store;
  /** Lets `ms` pass for the store: advances a manual clock, or sleeps for real. */
  pass(ms: number): Promise<void>;
  /** True when pass() is exact, so retry-after values can be compared exactly. */
  exactTime: boolean;
  close(): Promise<void>;
}

export type StoreFactory = () => Promise<StoreHarness>;

/** What the split-out parts of the contract see of the current test. */
export interface ContractContext {
  readonly store: Store;
  readonly h: StoreHarness;
  /** `actual` is `expected`: exactly with a manual clock, within slack (never above) in real time. */
  expectAbout(actual: number, expected: number): void;
}

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

    const t: ContractContext = {
      get store() {
        return store;
      },
      get h() {
        return h;
      },
      expectAbout,
    };
    describeBudgetContract(t);
    describeLimiterContract(t);
    describeLedgerContract(t);
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
