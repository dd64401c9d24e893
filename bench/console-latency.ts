// Benchmark: how fast the console answers, idle and while the gateway serves cache hits. One
// gateway and emulator in this process (test/helpers/gateway-harness.ts); a finance session
// (POST /console/session); then 200 sequential requests each for the page, its module, the
// session, and the admin reads the pages make (/admin/budgets, /admin/ledger, /admin/audit),
// first idle, then with 16 loops of cache-hit calls running (same process, so the figures
// include the load's share of this one event loop: an upper bound). Prints p50/p99 per request
// and writes bench/results/console-latency.json.
//   node bin/run-ts.js bench/console-latency.ts
// Must never: print or write the admin token or the session id.
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { knownInns } from '../test/emulator/emulator-harness.ts';
import { startHarness } from '../test/helpers/gateway-harness.ts';

const SAMPLES = 200;
const LOAD_LOOPS = 16;
const PATHS = [
  '/console/',
  '/console/app.js',
  '/console/session',
  '/admin/budgets',
  '/admin/ledger',
  '/admin/audit?limit=20',
];

const h = await startHarness({ apps: [{ name: 'crm' }], adminTokens: [{ name: 'fin', role: 'finance' }] });
const base = h.gateway.url;
const signIn = await fetch(`${base}/console/session`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ token: h.adminTokens.fin }),
});
const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
const inns = knownInns(8, 300);
for (const inn of inns) await (await h.call('crm', `/v1/companies/${inn}`)).arrayBuffer(); // fill the cache

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
async function measure(): Promise<Record<string, { p50_ms: number; p99_ms: number }>> {
  const out: Record<string, { p50_ms: number; p99_ms: number }> = {};
  for (const path of PATHS) {
    const times: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const t0 = performance.now();
      const res = await fetch(`${base}${path}`, { headers: { cookie } });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    out[path] = { p50_ms: +pct(times, 0.5).toFixed(2), p99_ms: +pct(times, 0.99).toFixed(2) };
  }
  return out;
}

const idle = await measure();
let running = true;
let hits = 0;
const loops = Array.from({ length: LOAD_LOOPS }, async (_, i) => {
  while (running) {
    const res = await h.call('crm', `/v1/companies/${inns[i % inns.length]}`);
    await res.arrayBuffer();
    hits++;
  }
});
const loadStart = performance.now();
const loaded = await measure();
const loadSeconds = (performance.now() - loadStart) / 1000;
running = false;
await Promise.all(loops);
await h.close();

const result = {
  samples: SAMPLES,
  load: { loops: LOAD_LOOPS, cache_hits_per_second: Math.round(hits / loadSeconds) },
  idle,
  loaded,
};
console.log('request                   idle p50/p99 ms   loaded p50/p99 ms');
for (const path of PATHS)
  console.log(
    `${path.padEnd(25)} ${`${idle[path]!.p50_ms}/${idle[path]!.p99_ms}`.padEnd(17)} ${loaded[path]!.p50_ms}/${loaded[path]!.p99_ms}`,
  );
console.log(`load: ${result.load.cache_hits_per_second} cache hits/s from ${LOAD_LOOPS} loops`);
writeFileSync(
  new URL('./results/console-latency.json', import.meta.url),
  `${JSON.stringify(result, null, 2)}\n`,
);
