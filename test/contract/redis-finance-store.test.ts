// The Redis FinanceStore against the shared finance contract, on a real Redis (REDIS_URL, or a
// private redis-server; REQUIRE_REDIS=1 fails when neither). Each test writes under its own
// prefix and deletes only that prefix's keys (the Redis may be shared: never FLUSHDB), and every
// key it writes carries the {finance} hash tag (Cluster-safe scripts).
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisFinanceStore } from '../../src/finance/redis-finance-store.ts';
import { deleteKeysUnder, startTestRedis, uniquePrefix } from '../helpers/redis.ts';
import { describeFinanceContract } from './finance-contract.ts';

const redis = await startTestRedis();
const prefixes: string[] = [];
const maybe = redis ? describe : describe.skip;

afterAll(async () => {
  if (!redis) return;
  await deleteKeysUnder(redis.url, prefixes);
  await redis.stop();
});

function open(prefix: string): RedisFinanceStore {
  return new RedisFinanceStore({ target: { url: redis!.url }, prefix });
}

maybe('RedisFinanceStore', () => {
  describeFinanceContract('redis', async () => {
    const prefix = uniquePrefix('finance');
    prefixes.push(prefix);
    const store = open(prefix);
    return {
      store,
      replica: async () => open(prefix),
      // The audit key holds a string: the script's stream step fails (WRONGTYPE) mid-script.
      breakAudit: async () => {
        const client = new Redis(redis!.url);
        await client.set(`${prefix}{finance}:audit`, 'not a stream');
        client.disconnect();
      },
      close: () => store.close(),
    };
  });

  it('keeps every key under its prefix and in the {finance} hash tag', async () => {
    const prefix = uniquePrefix('finance-keys');
    prefixes.push(prefix);
    const store = open(prefix);
    await store.writeBudget({
      budget: {
        scope: '_global',
        period: 'month',
        source: 'admin',
        limitMinor: 1,
        softMinor: null,
        version: 1,
        updatedBy: 'x',
        updatedAt: 1,
        reason: 'r',
      },
      expectVersion: 0,
      audit: {
        at: 1,
        actor: 'x',
        role: 'admin',
        client: '::1',
        requestId: 'r',
        action: 'budget_set',
        target: 'budget:_global:month',
        before: null,
        after: null,
        reason: 'r',
      },
    });
    await store.close();
    const client = new Redis(redis!.url);
    try {
      const keys = await client.keys(`${prefix}*`);
      expect(keys.sort()).toEqual(
        [`${prefix}{finance}:audit`, `${prefix}{finance}:budgets`, `${prefix}{finance}:version`].sort(),
      );
    } finally {
      client.disconnect();
    }
  });
});
