// Benchmark: GET /admin/statements/<this month> (open, computed on each read) with N charges
// spread over the month so far (default 300,000), in the gateway's store (memory). Reports the
// answer's time and the longest the gateway's event loop was held meanwhile (perf_hooks
// monitorEventLoopDelay): what any other request (a cache HIT) could wait behind a finance user
// opening the month. Checks the statement's total count and amount against the charges made and
// that every charge fell on a day of the month. Writes bench/results/statement.json.
//   node bin/run-ts.js bench/statement.ts [--charges 300000]
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
const N = Number(arg('charges', '300000'));
const ZONE = 'Europe/Moscow';
const AMOUNT = 9_900;
const h = await startHarness({
  apps: [{ name: 'alpha' }, { name: 'beta' }],
  config: { cost: { timeZone: ZONE } },
  store: (clock) => new MemoryStore({ clock, cacheMaxBytes: 1 << 24, ledgerMaxRecords: N + 1000 }),
});
const now = h.gateway.clock.now();
const month = localDate(now, ZONE).slice(0, 7);
const start = Date.parse(`${month}-01T00:00:00+03:00`); // Moscow has kept +03:00 since 2014
const step = (now - start) / N;
for (let i = 0; i < N; i++)
  await h.gateway.store.appendLedger({
    at: start + Math.floor(i * step),
    app: i % 2 ? 'alpha' : 'beta',
    operation: 'company',
    kind: 'dossier',
    inn: '7707083893',
    amountMinor: AMOUNT,
  });

const runs: Array<{ answerMs: number; eventLoopDelayMaxMs: number }> = [];
let total: { charges: { count: number; amount_minor: number } } | null = null;
let days: Array<{ charges_count: number }> = [];
let status = 0;
for (let run = 0; run < 3; run++) {
  const held = await loopHeldWhile(async () => {
    const res = await fetch(`${h.gateway.url}/admin/statements/${month}`, {
      headers: { authorization: `Bearer ${h.adminToken}` },
    });
    const body = (await res.json()) as {
      total: { charges: { count: number; amount_minor: number }; days: Array<{ charges_count: number }> };
    };
    return { res, body };
  });
  const { res, body } = held.value;
  status = res.status;
  total = body.total;
  days = body.total.days;
  runs.push({ answerMs: Math.round(held.ms), eventLoopDelayMaxMs: held.max });
}
await h.close();
const result = {
  bench: 'statement',
  at: new Date().toISOString(),
  node: process.version,
  store: 'memory',
  month,
  charges: N,
  status,
  runs,
};
const perDay = days.reduce((n, d) => n + d.charges_count, 0);
const ok =
  status === 200 && total?.charges.count === N && total.charges.amount_minor === N * AMOUNT && perDay === N;
console.log(JSON.stringify(result, null, 2));
const out = resolve(import.meta.dirname, 'results', 'statement.json');
writeFileSync(out, `${JSON.stringify({ ...result, ok }, null, 2)}\n`);
console.log(
  ok
    ? `ok: written ${out}`
    : `FAILED (total ${JSON.stringify(total?.charges)}, days ${perDay}): written ${out}`,
);
process.exit(ok ? 0 : 1);
