// Store latency and throughput: the operations on a request's hot path (reserve + settle,
// takeSlots, cache get/set of a compressed ~20 KB body, ledger append, recordCharge), run with a
// given concurrency against the memory store and, when REDIS_URL is set, the Redis store, and
// the cache read again through the Redis store's in-process tier (unique prefix, own keys deleted
// afterwards; never FLUSHDB).
//   node bin/run-ts.js bench/store-ops.ts [--ops 5000] [--concurrency 32]   (writes bench/results/store-ops.json)
// Must never: touch Redis keys outside its own prefix.
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { systemClock } from '../src/clock.ts';
import { MemoryStore, RedisStore, type Store } from '../src/store/index.ts';
import { deleteKeysUnder } from '../test/helpers/redis.ts';

export interface OpResult {
  store: string;
  op: string;
  ops: number;
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
}

async function measure(
  label: string,
  store: { kind: string },
  ops: number,
  concurrency: number,
  op: (i: number) => Promise<unknown>,
): Promise<OpResult> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < ops) {
        const i = next++;
        const t = performance.now();
        await op(i);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = performance.now() - started;
  latencies.sort((a, b) => a - b);
  const at = (q: number) =>
    Number((latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0).toFixed(3));
  return {
    store: store.kind,
    op: label,
    ops,
    opsPerSec: Math.round((ops / elapsed) * 1000),
    p50Ms: at(0.5),
    p99Ms: at(0.99),
  };
}

export async function benchStore(store: Store, ops: number, concurrency: number): Promise<OpResult[]> {
  const windowUntil = systemClock.now() + 900_000;
  const body = Buffer.alloc(20_000, 7);
  const counters = [
    { key: 'bench:app:day', limitMinor: null, ttlMs: 60_000 },
    { key: 'bench:global:day', limitMinor: null, ttlMs: 60_000 },
  ];
  const keys = counters.map((c) => c.key);
  const classes = [
    { name: 'bench-search', limit: 1_000_000, windowMs: 60_000 },
    { name: 'bench-key', limit: 1_000_000, windowMs: 60_000 },
  ];
  return [
    await measure('reserve+settle', store, ops, concurrency, async (i) => {
      await store.reserve({ id: `r${i}`, amountMinor: 100, counters, holdMs: 30_000 });
      await store.settle(`r${i}`, keys, 100, 60_000);
    }),
    await measure('takeSlots(2 classes)', store, ops, concurrency, (i) => store.takeSlots(classes, `s${i}`)),
    await measure('cacheSet 20KB', store, ops, concurrency, (i) =>
      store.cacheSet(`bench:${i % 500}:7707083893`, body, { ttlMs: 60_000, tags: ['inn:7707083893'] }),
    ),
    await measure('cacheGet 20KB', store, ops, concurrency, (i) =>
      store.cacheGet(`bench:${i % 500}:7707083893`),
    ),
    await measure('appendLedger', store, ops, concurrency, (i) =>
      store.appendLedger({ at: systemClock.now(), app: 'bench', n: i }),
    ),
    await measure('recordCharge', store, ops, concurrency, (i) =>
      store.recordCharge({
        key: `bench-${i}`,
        amountMinor: 100,
        entry: { at: systemClock.now(), app: 'bench', amountMinor: 100, n: i },
        counters: keys,
        counterTtlMs: 60_000,
        window: { inn: String(7707083893 + (i % 100)), kind: 'dossier', until: windowUntil },
      }),
    ),
  ];
}

/** Cache reads of entries already cached: `redis+local` serves them from the in-process tier. */
export async function benchCacheRead(store: Store, label: string, ops: number, concurrency: number) {
  const body = Buffer.alloc(20_000, 7);
  for (let i = 0; i < 500; i++) await store.cacheSet(`bench:${i}:7707083893`, body, { ttlMs: 60_000 });
  return measure('cacheGet 20KB (warm)', { kind: label }, ops, concurrency, (i) =>
    store.cacheGet(`bench:${i % 500}:7707083893`),
  );
}

async function main(): Promise<void> {
  const arg = (name: string, fallback: number) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? Number(process.argv[i + 1]) : fallback;
  };
  const ops = arg('ops', 5000);
  const concurrency = arg('concurrency', 32);
  const results: OpResult[] = [];
  const memory = new MemoryStore({ clock: systemClock, cacheMaxBytes: 64 * 1024 * 1024 });
  results.push(...(await benchStore(memory, ops, concurrency)));
  const url = process.env.REDIS_URL;
  if (url) {
    const prefix = `cpgw-bench:${process.pid}:${Math.random().toString(36).slice(2, 8)}:`;
    const redis = new RedisStore({ url, prefix, clock: systemClock });
    const local = new RedisStore({ url, prefix, clock: systemClock, localCacheBytes: 64 * 1024 * 1024 });
    try {
      results.push(...(await benchStore(redis, ops, concurrency)));
      results.push(await benchCacheRead(redis, 'redis', ops, concurrency));
      results.push(await benchCacheRead(local, 'redis+local', ops, concurrency));
    } finally {
      await Promise.all([redis.close(), local.close()]);
      await deleteKeysUnder(url, [prefix]);
    }
  } else {
    console.warn('REDIS_URL not set: Redis store not benchmarked');
  }
  console.table(results);
  const out = { ops, concurrency, redis: Boolean(url), results };
  writeFileSync('bench/results/store-ops.json', `${JSON.stringify(out, null, 2)}\n`);
  console.log('wrote bench/results/store-ops.json');
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) await main();
