// Benchmark: GET /admin/reconciliation as the console asks for it (the last 7 days) on a busy
// week: a wallet snapshot a minute (what a /v1/me refresh every 60 s keeps while charges move
// the balance) and N charges spread over the week (default 70,000, ~10,000 a day), in the
// gateway's store (memory). Reports the answer's time and the longest the gateway's event loop
// was held meanwhile (perf_hooks monitorEventLoopDelay): what any other request (a cache HIT)
// could wait behind the console. Checks that every interval and day is there and that the
// ledger's sum over the intervals is every charge's. Writes bench/results/reconciliation.json.
//   node bin/run-ts.js bench/reconciliation.ts [--charges 70000]
// Must never: report a figure it did not measure.
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { localDate } from '../src/cost/budget-periods.ts';
import { MemoryStore } from '../src/store/memory/memory-store.ts';
import { startHarness } from '../test/helpers/gateway-harness.ts';
import { loopHeldWhile } from './loop-hold.ts';

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : fallback;
};
const N = Number(arg('charges', '70000'));
const MINUTES = 7 * 1440;
const zone = 'Europe/Moscow';
const h = await startHarness({
  apps: [{ name: 'alpha' }],
  config: { cost: { timeZone: zone } },
  store: (clock) => new MemoryStore({ clock, cacheMaxBytes: 1 << 24, ledgerMaxRecords: N + 1000 }),
});
const now = h.gateway.clock.now();
const from = now - 7 * 86_400_000 + 60_000;
const snapshotsByDay = new Map<string, Array<{ asOf: number; balanceMinor: number }>>();
let balance = 100_000_000_000;
let charged = 0;
let total = 0;
for (let m = 0; m < MINUTES; m++) {
  const asOf = from + m * 60_000;
  const day = localDate(asOf, zone);
  const list = snapshotsByDay.get(day) ?? [];
  list.push({ asOf, balanceMinor: balance });
  snapshotsByDay.set(day, list);
  // This minute's share of the charges, each debited well inside the minute.
  const upTo = Math.round(((m + 1) * N) / MINUTES);
  for (let k = 0; charged < upTo; k++, charged++) {
    const amountMinor = 9_900;
    balance -= amountMinor;
    if (m < MINUTES - 1) total += amountMinor; // the last minute's charges follow the last snapshot
    await h.gateway.store.appendLedger({
      at: asOf + 20_000 + k * 7,
      app: 'alpha',
      operation: 'company',
      kind: 'dossier',
      inn: '7707083893',
      amountMinor,
    });
  }
}
for (const [day, list] of snapshotsByDay)
  await h.gateway.store.set(`wallet:day:${day}`, JSON.stringify(list), 400 * 86_400_000);

const held = await loopHeldWhile(async () => {
  const res = await fetch(`${h.gateway.url}/admin/reconciliation`, {
    headers: { authorization: `Bearer ${h.adminToken}` },
  });
  const body = (await res.json()) as {
    intervals: Array<{ ledger_minor: number; uncertain_minor: number }>;
    days: unknown[];
  };
  return { res, body };
});
const { res, body } = held.value;
const ledgerSum = body.intervals.reduce((n, r) => n + r.ledger_minor + r.uncertain_minor, 0);
const result = {
  bench: 'reconciliation',
  at: new Date().toISOString(),
  node: process.version,
  store: 'memory',
  snapshots: MINUTES,
  charges: N,
  status: res.status,
  intervals: body.intervals.length,
  days: body.days.length,
  answerMs: Math.round(held.ms),
  eventLoopDelayMs: { p99: held.p99, max: held.max },
};
await h.close();
// Every charge between the first and last snapshot is in an interval (once, as certain or
// uncertain: the lag is shorter than a minute's gap here).
const ok = res.status === 200 && result.intervals === MINUTES - 1 && result.days >= 7 && ledgerSum === total;
console.log(JSON.stringify(result, null, 2));
const out = resolve(import.meta.dirname, 'results', 'reconciliation.json');
writeFileSync(out, `${JSON.stringify({ ...result, ok }, null, 2)}\n`);
console.log(ok ? `ok: written ${out}` : `FAILED (ledger ${ledgerSum} against ${total}): written ${out}`);
process.exit(ok ? 0 : 1);
