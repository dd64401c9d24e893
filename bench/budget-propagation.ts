// Benchmark: how fast a budget change made on one replica applies on another (issue 29: "within
// 1 s"), on a real Redis, through the same parts the gateway uses (RedisFinanceStore,
// BudgetOverrides, the RedisStore bus). Three replicas: A writes and announces; B hears the bus;
// C is deaf to the bus and only runs the reserve-path check (BudgetOverrides.fresh(), memo
// 250 ms) every 10 ms, as steady paid traffic would. Also the cost of that check per reserve.
// Prints medians and maxima, writes bench/results/budget-propagation.json.
// Run: node bin/run-ts.js bench/budget-propagation.ts [rounds=40]   (REDIS_URL, default local)
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { systemClock } from '../src/clock.ts';
import { BUDGETS_CHANNEL, BudgetOverrides } from '../src/finance/budget-overrides.ts';
import type { AuditRecord } from '../src/finance/finance-store.ts';
import { RedisFinanceStore } from '../src/finance/redis-finance-store.ts';
import { RedisStore } from '../src/store/index.ts';

const ROUNDS = Number(process.argv[2] ?? 40);
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `cpgw-bench:propagation:${process.pid}:`;
const stores = [0, 1].map(() => new RedisStore({ url, prefix, clock: systemClock, cacheMaxBytes: 1 << 20 }));
const finance = [0, 1, 2].map(() => new RedisFinanceStore({ target: { url }, prefix }));
const [b, c] = [finance[1]!, finance[2]!].map((store) => new BudgetOverrides({ store, clock: systemClock }));
await stores[1]!.subscribe(BUDGETS_CHANNEL, () => void b!.invalidate());
await b!.fresh();
await c!.fresh();
const deafTicker = setInterval(() => void c!.fresh(), 10);

const audit = (at: number): AuditRecord => ({
  at,
  actor: 'bench',
  role: 'finance',
  client: '127.0.0.1',
  requestId: `bench-${at}`,
  action: 'budget_set',
  target: 'budget:crm:day',
  before: null,
  after: null,
  reason: 'bench',
});
const until = async (ok: () => boolean) => {
  while (!ok()) await new Promise((r) => setImmediate(r));
};
const stat = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  const r = (v: number) => Math.round(v * 100) / 100;
  return {
    median: r(s[Math.floor(s.length / 2)]!),
    p95: r(s[Math.floor(s.length * 0.95)]!),
    max: r(s.at(-1)!),
  };
};

const bus: number[] = [];
const deaf: number[] = [];
for (let i = 1; i <= ROUNDS; i++) {
  const started = performance.now();
  const result = await finance[0]!.writeBudget({
    budget: {
      scope: 'crm',
      period: 'day',
      source: 'admin',
      limitMinor: i,
      softMinor: null,
      version: i,
      updatedBy: 'bench',
      updatedAt: Date.now(),
      reason: 'bench',
    },
    expectVersion: i - 1,
    audit: audit(Date.now()),
  });
  if (!result.ok) throw new Error('bench: write refused');
  await stores[0]!.publish(BUDGETS_CHANNEL, String(result.settingsVersion));
  await Promise.all([
    until(() => b!.get('crm', 'day')?.limitMinor === i).then(() => bus.push(performance.now() - started)),
    until(() => c!.get('crm', 'day')?.limitMinor === i).then(() => deaf.push(performance.now() - started)),
  ]);
  await new Promise((r) => setTimeout(r, 20 + Math.random() * 100));
}
clearInterval(deafTicker);

// The reserve-path check itself: memoized (most calls) and when the memo has expired (one read).
const memo = new BudgetOverrides({ store: finance[2]!, clock: systemClock, memoMs: 60_000 });
await memo.fresh();
let t = performance.now();
for (let i = 0; i < 100_000; i++) await memo.fresh();
const memoizedUs = ((performance.now() - t) / 100_000) * 1000;
const cold = new BudgetOverrides({ store: finance[2]!, clock: systemClock, memoMs: 0 });
await cold.fresh();
t = performance.now();
for (let i = 0; i < 500; i++) await cold.fresh();
const versionReadUs = ((performance.now() - t) / 500) * 1000;

const results = {
  rounds: ROUNDS,
  redis: url.replace(/\/\/[^@]*@/, '//'),
  busMs: stat(bus),
  deafReplicaMs: stat(deaf),
  reserveCheckMemoizedUs: Math.round(memoizedUs * 1000) / 1000,
  reserveCheckVersionReadUs: Math.round(versionReadUs),
  at: new Date().toISOString(),
};
console.log(JSON.stringify(results, null, 2));
writeFileSync('bench/results/budget-propagation.json', `${JSON.stringify(results, null, 2)}\n`);

for (const s of stores) await s.close();
for (const f of finance) await f.close();
const client = new Redis(url);
const keys = await client.keys(`${prefix}*`);
if (keys.length) await client.unlink(...keys);
client.disconnect();
