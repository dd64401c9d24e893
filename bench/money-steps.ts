// What the money steps add to a paid call: openCharge (hold + pending entry, before the upstream
// call) and recordCharge (claim + ledger + settle + window, after it), on PostgreSQL
// (synchronous_commit on) against today's Redis money path. Four capped budget counters per call,
// as an app with day and month caps under global ones. Sequential calls give the added latency
// of one call (p50/p99 of each step and of both); 16 concurrent callers give throughput. An
// in-window read's pair (openCharge of 0, then releaseCharge, as the gateway does for a read an
// open window covers; the release after the answer) is measured on its own, and again while 4
// callers make paid calls (openCharge + recordCharge) on the same counters at the same time.
//   node bin/run-ts.js bench/money-steps.ts [--calls 1000]   (writes bench/results/money-steps.json)
// PostgreSQL: POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres), a database created
// for the run and dropped after. Redis: REDIS_URL, or a private redis-server; own prefix only.
// Must never: touch a database or Redis keys it did not create.
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { systemClock } from '../src/clock.ts';
import type { BudgetCounterSpec, PendingCharge, Store } from '../src/store/index.ts';
import { MemoryStore, RedisStore } from '../src/store/index.ts';
import { PostgresMoney } from '../src/store/postgres/postgres-money.ts';
import { SplitStore } from '../src/store/split-store.ts';
import { createTestDatabase } from '../test/helpers/postgres.ts';
import { deleteKeysUnder, startTestRedis } from '../test/helpers/redis.ts';

interface StepStats {
  p50Ms: number;
  p99Ms: number;
}

interface BackendResult {
  backend: string;
  calls: number;
  openCharge: StepStats;
  recordCharge: StepStats;
  bothSteps: StepStats;
  concurrent16CallsPerSec: number;
  /** An in-window read: openCharge estimated 0, then releaseCharge. */
  inWindowOpen: StepStats;
  inWindowRelease: StepStats;
  /** The in-window open while 4 callers make paid calls on the same counters. */
  inWindowOpenBesidePaid: StepStats;
}

const LOAD_AT_START = Math.round(loadavg()[0]! * 100) / 100;

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};

function stats(samples: number[]): StepStats {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) =>
    Number((sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0).toFixed(3));
  return { p50Ms: at(0.5), p99Ms: at(0.99) };
}

const COUNTERS: BudgetCounterSpec[] = [
  { key: 'app:bench:day:2026-11-28', limitMinor: 1e12, ttlMs: 3 * 86_400_000 },
  { key: 'app:bench:month:2026-11', limitMinor: 1e12, ttlMs: 40 * 86_400_000 },
  { key: 'global:day:2026-11-28', limitMinor: 1e12, ttlMs: 3 * 86_400_000 },
  { key: 'global:month:2026-11', limitMinor: 1e12, ttlMs: 40 * 86_400_000 },
];

function pending(key: string, inn: string, estimateMinor = 9_900): PendingCharge {
  const now = systemClock.now();
  return {
    key,
    requestId: `req-${key}`,
    app: 'bench',
    operation: 'company',
    kind: 'dossier',
    inn,
    estimateMinor,
    at: now,
    method: 'GET',
    target: `/v1/company/${inn}`,
    body: null,
    opens: 'dossier',
    counters: COUNTERS.map((c) => c.key),
    counterTtlMs: 3 * 86_400_000,
    owner: 'bench',
    leaseUntil: now + 10_000,
    reconcileAttempts: 0,
  };
}

async function oneCall(store: Store, key: string, inn: string): Promise<[number, number]> {
  const t0 = performance.now();
  const opened = await store.openCharge(pending(key, inn), COUNTERS);
  if (!opened.ok) throw new Error('bench: refused');
  const t1 = performance.now();
  const now = systemClock.now();
  await store.recordCharge({
    key,
    amountMinor: 9_900,
    entry: {
      at: now,
      app: 'bench',
      operation: 'company',
      kind: 'dossier',
      inn,
      amountMinor: 9_900,
      upstreamRequestId: `up-${key}`,
      requestId: `req-${key}`,
      idempotencyKey: key,
    },
    counters: COUNTERS.map((c) => c.key),
    counterTtlMs: 3 * 86_400_000,
    window: { inn, kind: 'dossier', until: now + 900_000 },
  });
  return [t1 - t0, performance.now() - t1];
}

/** An in-window read's money steps: an entry of 0 opened, then released. */
async function inWindowPair(store: Store, key: string, inn: string): Promise<[number, number]> {
  const t0 = performance.now();
  const opened = await store.openCharge(pending(key, inn, 0), COUNTERS);
  if (!opened.ok) throw new Error('bench: refused');
  const t1 = performance.now();
  await store.releaseCharge(key);
  return [t1 - t0, performance.now() - t1];
}

async function bench(backend: string, store: Store, calls: number): Promise<BackendResult> {
  const run = `${process.pid}-${backend}`;
  for (let i = 0; i < 50; i++) await oneCall(store, `warm-${run}-${i}`, String(7_700_000_000 + i)); // warm-up
  const opens: number[] = [];
  const records: number[] = [];
  const both: number[] = [];
  for (let i = 0; i < calls; i++) {
    const [o, r] = await oneCall(store, `seq-${run}-${i}`, String(7_707_000_000 + (i % 500)));
    opens.push(o);
    records.push(r);
    both.push(o + r);
  }
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < calls) {
        const i = next++;
        await oneCall(store, `par-${run}-${i}`, String(7_708_000_000 + (i % 500)));
      }
    }),
  );
  const perSec = Math.round((calls / (performance.now() - started)) * 1000);
  const freeOpens: number[] = [];
  const freeReleases: number[] = [];
  for (let i = 0; i < calls; i++) {
    const [o, r] = await inWindowPair(store, `free-${run}-${i}`, String(7_709_000_000 + (i % 500)));
    freeOpens.push(o);
    freeReleases.push(r);
  }
  // The same in-window opens while 4 callers make paid calls on the same four counters.
  const besidePaid: number[] = [];
  let paying = true;
  let paid = 0;
  const payers = Array.from({ length: 4 }, async (_, w) => {
    while (paying) await oneCall(store, `busy-${run}-${w}-${paid++}`, String(7_710_000_000 + (paid % 500)));
  });
  for (let i = 0; i < calls; i++) {
    const [o] = await inWindowPair(store, `free2-${run}-${i}`, String(7_711_000_000 + (i % 500)));
    besidePaid.push(o);
  }
  paying = false;
  await Promise.all(payers);
  return {
    backend,
    calls,
    openCharge: stats(opens),
    recordCharge: stats(records),
    bothSteps: stats(both),
    concurrent16CallsPerSec: perSec,
    inWindowOpen: stats(freeOpens),
    inWindowRelease: stats(freeReleases),
    inWindowOpenBesidePaid: stats(besidePaid),
  };
}

async function main(): Promise<void> {
  const calls = arg('calls', 1000);
  const results: BackendResult[] = [];

  const redis = await startTestRedis();
  if (redis) {
    const prefix = `cpgw-bench-money:${process.pid}:`;
    const store = new RedisStore({ url: redis.url, prefix, clock: systemClock });
    try {
      results.push(await bench('redis', store, calls));
    } finally {
      await store.close();
      await deleteKeysUnder(redis.url, [prefix]);
      await redis.stop();
    }
  }

  const db = await createTestDatabase('bench');
  if (db) {
    // `postgres`: as the gateway runs it. `postgres-async` (synchronous_commit off, set on each
    // session here only, never by the gateway): the same steps without waiting for the WAL flush,
    // to show how much of the figure is this disk's fsync (pg_test_fsync prints it).
    for (const backend of ['postgres', 'postgres-async']) {
      const money = new PostgresMoney({ url: db.url, sweepMs: 0 });
      if (backend === 'postgres-async')
        money.link.pool.on('connect', (client) => void client.query('SET synchronous_commit = off'));
      const store = new SplitStore(new MemoryStore({ clock: systemClock, cacheMaxBytes: 1 << 20 }), money);
      try {
        await store.open();
        results.push(await bench(backend, store, calls));
      } finally {
        await store.close();
      }
    }
    await db.drop();
  }

  for (const r of results)
    console.log(
      `${r.backend.padEnd(14)} openCharge p50 ${r.openCharge.p50Ms} ms p99 ${r.openCharge.p99Ms} ms | ` +
        `recordCharge p50 ${r.recordCharge.p50Ms} ms p99 ${r.recordCharge.p99Ms} ms | ` +
        `both p50 ${r.bothSteps.p50Ms} ms p99 ${r.bothSteps.p99Ms} ms | ${r.concurrent16CallsPerSec} calls/s at 16 | ` +
        `in-window open 0 p50 ${r.inWindowOpen.p50Ms} ms, release p50 ${r.inWindowRelease.p50Ms} ms, ` +
        `open 0 beside 4 paid callers p50 ${r.inWindowOpenBesidePaid.p50Ms} ms p99 ${r.inWindowOpenBesidePaid.p99Ms} ms`,
    );
  const out = {
    calls,
    node: process.version,
    loadavg_1m_at_start: LOAD_AT_START,
    loadavg_1m_at_end: Math.round(loadavg()[0]! * 100) / 100,
    note: 'sequential calls: latency each step adds to one paid call; 16 concurrent callers: throughput',
    results,
  };
  writeFileSync('bench/results/money-steps.json', `${JSON.stringify(out, null, 2)}\n`);
  console.log('wrote bench/results/money-steps.json');
}

await main();
