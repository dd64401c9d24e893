// The Redis store against the shared contract (real time, Redis server clock), plus what only it
// promises: replicas sharing one Redis share budgets, limiter slots and pub/sub, and a dead Redis
// fails fast with StoreUnavailableError. Every test writes under its own unique prefix and deletes
// only that prefix's keys afterwards: the Redis may be shared (never FLUSHDB here).
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

maybe('RedisStore', () => {
  const url = redis?.url ?? '';
  afterAll(async () => {
    if (!redis) return;
    await deleteOwnKeys(url);
    await redis.stop();
  });

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
