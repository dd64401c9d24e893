// Redis outages (issue #10 "Store outage", issue #12): on a private redis-server that the test
// stops and starts (never the shared one), commands fail fast while it is gone, 'error' events
// never crash the process, the store is back within 1 s of Redis's return, and the in-process
// cache tier keeps serving what it holds, no longer than each entry's TTL, and drops what another
// replica purged (the purge arrives over pub/sub).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { RedisStore, StoreUnavailableError } from '../../src/store/index.ts';
import { RECONNECT_CAP_MS } from '../../src/store/redis/connection.ts';
import { eventually, type PrivateRedis, startPrivateRedis } from '../helpers/redis.ts';
import { until } from './contract-harness.ts';

const server: PrivateRedis | null = await startPrivateRedis();
const maybe = server ? describe : describe.skip;

maybe('Redis store during an outage', () => {
  const errors: unknown[] = [];
  let a: RedisStore;
  let b: RedisStore;
  beforeAll(() => {
    const open = () =>
      new RedisStore({
        url: server!.url,
        prefix: 'outage:',
        clock: systemClock,
        localCacheBytes: 1 << 20,
        onError: (e) => errors.push(e),
      });
    a = open();
    b = open();
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await server?.stop();
  });

  it('serves local-tier reads, fails the rest fast, drops purged and expired entries, recovers within 1 s', async () => {
    const opts = (tags: string[]) => ({ ttlMs: 60_000, tags });
    await a.cacheSet('dossier:7707083893', Buffer.from('d1'), opts(['inn:7707083893']));
    await a.cacheSet('dossier:7736050003', Buffer.from('d2'), opts(['inn:7736050003']));
    await a.cacheSet('requisites:7736050003', Buffer.from('short'), { ttlMs: 300 });
    // b reads them once (its tier fills from Redis); then a purges one INN.
    expect((await b.cacheGet('dossier:7707083893'))?.toString()).toBe('d1');
    expect((await b.cacheGet('dossier:7736050003'))?.toString()).toBe('d2');
    expect((await b.cacheGet('requisites:7736050003'))?.toString()).toBe('short');
    expect(await b.localTier!.localBytes()).toBeGreaterThan(0);
    expect(await a.cachePurgeTag('inn:7707083893')).toBe(1);
    await new Promise((r) => setTimeout(r, 100)); // the purge message reaches b

    await server!.stop();
    await until(() => errors.length > 0);
    const started = Date.now();
    // Served by b's local tier although Redis is gone.
    expect((await b.cacheGet('dossier:7736050003'))?.toString()).toBe('d2');
    // Purged by a: b's tier dropped it, so the read goes to Redis and fails (never the stale copy).
    await expect(b.cacheGet('dossier:7707083893')).rejects.toBeInstanceOf(StoreUnavailableError);
    // Everything else fails fast.
    await expect(b.get('ticket')).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(
      b.reserve({
        id: 'r',
        amountMinor: 1,
        counters: [{ key: 'x', limitMinor: 5, ttlMs: 1000 }],
        holdMs: 1000,
      }),
    ).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(b.cacheSet('new', Buffer.from('n'), { ttlMs: 1000 })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    expect(Date.now() - started).toBeLessThan(1_000);
    // An entry is never served past its own TTL, even from the local tier.
    await new Promise((r) => setTimeout(r, 350));
    await expect(b.cacheGet('requisites:7736050003')).rejects.toBeInstanceOf(StoreUnavailableError);

    await new Promise((r) => setTimeout(r, 2_500)); // let the reconnect backoff reach its cap
    await server!.start();
    const back = Date.now();
    await eventually(async () => {
      await a.ping();
      await b.ping();
    }, 5_000);
    expect(Date.now() - back).toBeLessThan(1_000);
    expect(RECONNECT_CAP_MS).toBeLessThan(1_000);
    // Redis came back empty: the tiers were dropped on reconnect, so nothing stale is served.
    await eventually(async () => {
      if ((await b.cacheGet('dossier:7736050003')) !== null) throw new Error('stale local entry');
    }, 1_000);
    await b.set('ticket', 'ok', 60_000);
    expect(await a.get('ticket')).toBe('ok');
  });

  it("a delete on one replica reaches the other replica's tier", async () => {
    await a.cacheSet('bank:044525225', Buffer.from('v1'), { ttlMs: 60_000 });
    expect((await b.cacheGet('bank:044525225'))?.toString()).toBe('v1');
    await a.cacheDelete('bank:044525225');
    await new Promise((r) => setTimeout(r, 100));
    await server!.stop();
    try {
      await expect(b.cacheGet('bank:044525225')).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      await server!.start();
      await eventually(() => b.ping(), 5_000);
    }
  });
});
