// The Redis store against the shared contract (real time, Redis server clock), plus what only it
// promises: replicas sharing one Redis share budgets, limiter slots and pub/sub, and a dead Redis
// fails fast with StoreUnavailableError. Every test writes under its own unique prefix and deletes
// only that prefix's keys afterwards: the Redis may be shared (never FLUSHDB here).
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManualClock, systemClock } from '../../src/clock.ts';
import { RedisStore, StoreUnavailableError } from '../../src/store/index.ts';
import {
  deleteKeysUnder,
  eventually,
  startPrivateRedis,
  startTestRedis,
  type TestRedis,
  uniquePrefix,
} from '../helpers/redis.ts';
import { runStoreContract, until } from './contract-harness.ts';

const redis: TestRedis | null = await startTestRedis();
const prefixes: string[] = [];

function newPrefix(): string {
  const prefix = uniquePrefix('store');
  prefixes.push(prefix);
  return prefix;
}

function open(url: string, prefix: string): RedisStore {
  return new RedisStore({ url, prefix, clock: systemClock, cacheMaxBytes: 10 * 1024 * 1024 });
}

const deleteOwnKeys = (url: string) => deleteKeysUnder(url, prefixes);

const maybe = redis ? describe : describe.skip;

// At file level: a private redis-server (no REDIS_URL) must outlive every describe below.
afterAll(async () => {
  if (!redis) return;
  await deleteOwnKeys(redis.url);
  await redis.stop();
});

maybe('RedisStore', () => {
  const url = redis?.url ?? '';

  runStoreContract('redis', async () => {
    const prefix = newPrefix();
    const store = open(url, prefix);
    return {
      store,
      pass: (ms) => new Promise((r) => setTimeout(r, ms)),
      exactTime: false,
      clock: new ManualClock(Date.now()),
      replica: async () => open(url, prefix),
      close: () => store.close(),
    };
  });

  describe('two replicas on one Redis', () => {
    let a: RedisStore;
    let b: RedisStore;
    beforeAll(() => {
      const prefix = newPrefix();
      a = open(url, prefix);
      b = open(url, prefix);
    });
    afterAll(async () => {
      await Promise.all([a.close(), b.close()]);
    });

    it('never let concurrent takes across both exceed the limit', async () => {
      const classes = [
        { name: 'search', limit: 7, windowMs: 60_000 },
        { name: 'key', limit: 60, windowMs: 60_000 },
      ];
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).takeSlots(classes, `take-${i}`)),
      );
      expect(results.filter((r) => r.ok)).toHaveLength(7);
      expect(await a.limiterState(classes)).toEqual(await b.limiterState(classes));
      expect((await b.limiterState(classes))[1]!.used).toBe(7);
    });

    it('share budget counters: concurrent reservations across both respect one cap', async () => {
      const counters = [{ key: 'global:day:shared', limitMinor: 250, ttlMs: 60_000 }];
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 ? a : b).reserve({ id: `r${i}`, amountMinor: 100, counters, holdMs: 60_000 }),
        ),
      );
      expect(results.filter((r) => r.ok)).toHaveLength(2);
      const winner = results.findIndex((r) => r.ok);
      await (winner % 2 ? b : a).settle(`r${winner}`, ['global:day:shared'], 120, 60_000);
      expect(await a.readCounters(['global:day:shared'])).toEqual([
        { key: 'global:day:shared', spentMinor: 120, reservedMinor: 100 },
      ]);
    });

    it('deliver a message published by one to subscribers of the other', async () => {
      const got: string[] = [];
      const off = await b.subscribe('coalesce:x', (m) => got.push(m));
      await a.publish('coalesce:x', 'done');
      await until(() => got.length === 1);
      expect(got).toEqual(['done']);
      await off();
    });

    it('measure the gateway clock against the Redis clock', async () => {
      expect(Math.abs(await a.serverTimeSkewMs())).toBeLessThan(5_000);
    });
  });

  it('keys carry the INN hash tag and the prefix', async () => {
    const prefix = newPrefix();
    const store = open(url, prefix);
    const raw = new Redis(url);
    try {
      await store.set('window:7707083893', '1', 60_000);
      await store.cacheSet('dossier:7707083893:full', Buffer.from('x'), { ttlMs: 60_000 });
      expect(await raw.exists(`${prefix}s:{7707083893}:window:7707083893`)).toBe(1);
      expect(await raw.exists(`${prefix}c:{7707083893}:dossier:7707083893:full`)).toBe(1);
    } finally {
      raw.disconnect();
      await store.close();
    }
  });
});

describe('RedisStore state keys the gateway lists every second', () => {
  const url = redis?.url ?? '';
  const scans = (store: RedisStore) => {
    const client = (store as unknown as { link: { client: Redis } }).link.client;
    return vi.spyOn(client, 'scan');
  };

  (redis ? it : it.skip)(
    'are listed from their index: after the first listing, no SCAN of the keyspace',
    async () => {
      const prefix = newPrefix();
      const store = open(url, prefix);
      try {
        await store.set('check-pending:7707083893:contract', 'chk_1', 60_000);
        await store.setIfAbsent('webhook:out:chk_1:crm', '{}', 60_000);
        await store.set('webhook:out:chk_2:crm', '{}', 60_000);
        expect(await store.keys('webhook:out:')).toHaveLength(2); // the first listing also backfills
        const scan = scans(store);
        expect((await store.keys('webhook:out:')).sort()).toEqual([
          'webhook:out:chk_1:crm',
          'webhook:out:chk_2:crm',
        ]);
        expect(await store.keys('webhook:out:chk_2')).toEqual(['webhook:out:chk_2:crm']);
        expect(await store.keys('check-pending:')).toEqual(['check-pending:7707083893:contract']);
        // Its first listing scanned for keys written without the index (an older version's).
        expect(scan.mock.calls.some(([, , pattern]) => String(pattern).includes('check-pending'))).toBe(true);
        scan.mockClear();
        expect(await store.keys('check-pending:')).toEqual(['check-pending:7707083893:contract']);
        expect(await store.keys('webhook:out:', 1)).toHaveLength(1);
        expect(scan).not.toHaveBeenCalled();
        // A prefix nobody lists every second (admin listings) is still scanned.
        await store.set('window:7707083893', '1', 60_000);
        expect(await store.keys('window:')).toEqual(['window:7707083893']);
        expect(scan).toHaveBeenCalled();
      } finally {
        await store.close();
      }
    },
  );

  (redis ? it : it.skip)(
    'written by an older version without the index are found by the first listing',
    async () => {
      const prefix = newPrefix();
      const raw = new Redis(url);
      const store = open(url, prefix);
      try {
        await raw.set(`${prefix}s:webhook:out:chk_old:crm`, '{}', 'PX', 60_000);
        await raw.set(`${prefix}s:{7707083893}:check-pending:7707083893:old`, 'chk_old', 'PX', 60_000);
        await store.set('webhook:out:chk_new:crm', '{}', 60_000);
        expect((await store.keys('webhook:out:')).sort()).toEqual([
          'webhook:out:chk_new:crm',
          'webhook:out:chk_old:crm',
        ]);
        expect(await store.keys('check-pending:')).toEqual(['check-pending:7707083893:old']);
        // Their entries expire with them: the index holds nothing past a key's TTL.
        const ttl = await raw.zscore(`${prefix}si:webhook:out:`, 'webhook:out:chk_old:crm');
        expect(Number(ttl)).toBeGreaterThan(Date.now() + 50_000);
        expect(Number(ttl)).toBeLessThanOrEqual(Date.now() + 60_000);
      } finally {
        raw.disconnect();
        await store.close();
      }
    },
  );
});

describe('RedisStore when Redis is down', () => {
  it('fails fast with StoreUnavailableError when nothing listens', async () => {
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    const store = new RedisStore({ url: 'redis://127.0.0.1:1', clock: systemClock, onError: () => {} });
    const started = Date.now();
    await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.get('x')).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(Date.now() - started).toBeLessThan(5_000);
    await store.close();
  });

  it('fails fast while Redis is gone and reconnects by itself when it is back', async () => {
    const server = await startPrivateRedis();
    if (!server) return;
    const errors: unknown[] = [];
    const store = new RedisStore({ url: server.url, clock: systemClock, onError: (e) => errors.push(e) });
    try {
      await store.set('k', 'v', 60_000);
      await server.stop();
      await until(() => errors.length > 0);
      const started = Date.now();
      await expect(store.get('k')).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(store.takeSlots([{ name: 'key', limit: 1, windowMs: 1000 }], 'a')).rejects.toBeInstanceOf(
        StoreUnavailableError,
      );
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(errors).toHaveLength(1); // one report per outage, not one per reconnect attempt
      await server.start();
      await eventually(() => store.ping(), 10_000);
      await store.set('k', 'v2', 60_000); // scripts are reloaded after the restart (NOSCRIPT fallback)
      expect((await store.takeSlots([{ name: 'key', limit: 1, windowMs: 1000 }], 'a')).ok).toBe(true);
    } finally {
      await store.close();
      await server.stop();
    }
  });
});
