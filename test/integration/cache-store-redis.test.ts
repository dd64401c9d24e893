// The ResponseCache suite over a real RedisStore, plus what only Redis can show: a ~100 KB
// dossier takes under 20 KB on the server (STRLEN and MEMORY USAGE of the actual key), two
// gateway replicas share entries, and a purge on one replica is seen by the other.
// Every test writes under its own unique prefix and deletes only those keys (never FLUSHDB).
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveCacheConfig } from '../../src/cache/cache-config.ts';
import { ResponseCache } from '../../src/cache/response-cache.ts';
import { ManualClock } from '../../src/clock.ts';
import { RedisStore } from '../../src/store/index.ts';
import { RedisKeys } from '../../src/store/redis/keys.ts';
import { deleteKeysUnder, startTestRedis, type TestRedis, uniquePrefix } from '../helpers/redis.ts';
import { answer, dossierBody, INN, request } from '../unit/cache-fixtures.ts';
import { runResponseCacheSuite } from '../unit/cache-suite.ts';

const redis: TestRedis | null = await startTestRedis();
if (!redis)
  console.warn('\n!!! cache-store-redis: NO REDIS, the Redis response-cache tests are SKIPPED !!!\n');
const prefixes: string[] = [];

function newPrefix(): string {
  const prefix = uniquePrefix('cache');
  prefixes.push(prefix);
  return prefix;
}

function open(url: string, prefix: string, clock: ManualClock, localCacheBytes = 0): RedisStore {
  return new RedisStore({ url, prefix, clock, cacheMaxBytes: 10 * 1024 * 1024, localCacheBytes });
}

const maybe = redis ? describe : describe.skip;

maybe('ResponseCache over RedisStore', () => {
  const url = redis?.url ?? '';
  let client: Redis;

  beforeAll(() => {
    client = new Redis(url, { maxRetriesPerRequest: 1 });
  });

  afterAll(async () => {
    if (!redis) return;
    await deleteKeysUnder(url, prefixes);
    client.disconnect();
    await redis.stop();
  });

  for (const [name, localCacheBytes] of [
    ['RedisStore', 0],
    ['RedisStore with the in-process tier', 1 << 20],
  ] as const) {
    runResponseCacheSuite(
      name,
      async (clock) => {
        const prefix = newPrefix();
        const store = open(url, prefix, clock, localCacheBytes);
        return {
          store,
          close: async () => {
            await deleteKeysUnder(url, [prefix]);
            await store.close();
          },
        };
      },
      { clockDrivenTtl: false },
    );
  }

  it('stores a ~100 KB dossier in under 20 KB of Redis (STRLEN and MEMORY USAGE of the key)', async () => {
    const prefix = newPrefix();
    const clock = new ManualClock();
    const store = open(url, prefix, clock);
    try {
      const cache = new ResponseCache({ store, clock, config: resolveCacheConfig() });
      const body = dossierBody();
      expect(body.length).toBeGreaterThan(90_000);
      await cache.save(request('company'), answer(200, body));
      await cache.packed(); // stored as it came, then its brotli copy swapped in
      const key = new RedisKeys(prefix).cache(cache.keyOf(request('company'))!.key);
      expect(key).toContain(`{${INN}}`);
      const strlen = await client.strlen(key);
      const memory = Number(await client.call('MEMORY', 'USAGE', key));
      console.info(`dossier ${body.length} B -> STRLEN ${strlen} B, MEMORY USAGE ${memory} B`);
      expect(strlen).toBeGreaterThan(1000);
      expect(strlen).toBeLessThan(20_000);
      expect(memory).toBeLessThan(20_000);
      // The TTL Redis holds is max age plus max staleness (6 h + 24 h).
      const ttl = await client.pttl(key);
      expect(ttl).toBeGreaterThan(30 * 3_600_000 - 60_000);
      expect(ttl).toBeLessThanOrEqual(30 * 3_600_000);
    } finally {
      await deleteKeysUnder(url, [prefix]);
      await store.close();
    }
  });

  it('two replicas share entries, and a purge on one is seen by the other', async () => {
    const prefix = newPrefix();
    const clock = new ManualClock();
    const a = open(url, prefix, clock);
    const b = open(url, prefix, clock);
    try {
      const config = resolveCacheConfig();
      const replicaA = new ResponseCache({ store: a, clock, config });
      const replicaB = new ResponseCache({ store: b, clock, config });
      await replicaA.save(request('company', { app: 'crm' }), answer(200, dossierBody()));
      await replicaA.save(request('requisites', { app: 'crm' }), answer(200, Buffer.from('{}')));
      expect(await replicaB.lookup(request('company', { app: 'risk' }))).toMatchObject({ status: 'HIT' });
      expect(await replicaB.purgeInn(INN)).toBe(2);
      expect((await replicaA.lookup(request('company'))).action).toBe('fetch');
      expect((await replicaA.lookup(request('requisites'))).action).toBe('fetch');
    } finally {
      await deleteKeysUnder(url, [prefix]);
      await a.close();
      await b.close();
    }
  });
});
