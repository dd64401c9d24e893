// A cold burst at the upstream's real key limit (issue #12): three apps read 50 companies nobody
// asked for before, 1,000 reads with 20 in flight, through one gateway (memory store) in front of
// the emulator (60 key calls a minute, a dossier answered in 100-300 ms), both in this process on
// port 0. Run twice: with the production defaults (pacing only when apps compete or the window is
// down to its reserve) and with every key start paced (`reserve` = the limit: 5 starts per 5 s,
// what the defaults did before, with the upstream-minute cap as it is now).
//
// Printed and written to bench/results/limits-burst.json per run: the reads answered and refused
// (429, by reason), the upstream dossier calls and charges (the emulator's log and ledger), how
// long the 50 calls took to start (first to last at the emulator), the longest queue wait the
// governor recorded, and the whole run's time.
//
// Run: node bin/run-ts.js bench/limits-burst.ts
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { coldBurst } from '../test/helpers/cold-burst.ts';
import { startHarness } from '../test/helpers/gateway-harness.ts';

const APPS = ['alpha', 'beta', 'gamma'];
const COMPANIES = 50;
const READS = 1_000;
const IN_FLIGHT = 20;

async function run(name: string, limits: Record<string, unknown>, innsFrom: number) {
  const h = await startHarness({
    apps: APPS.map((app) => ({ name: app })),
    config: { limits },
    emulator: { latency: { company: '100-300' } },
  });
  try {
    const b = await coldBurst(h, {
      apps: APPS,
      companies: COMPANIES,
      reads: READS,
      inFlight: IN_FLIGHT,
      innsFrom,
    });
    const { statuses, reasons, tookMs, ledger, apps } = b;
    const at = b.upstream.at;
    const result = {
      name,
      limits,
      reads: READS,
      answered: statuses['200'] ?? 0,
      refused: statuses['429'] ?? 0,
      refusedBy: reasons,
      statuses,
      upstreamDossierCalls: at.length,
      companiesFetched: b.upstream.paths.size,
      upstream429: b.upstream.statuses.filter((status) => status === 429).length,
      charged: ledger.totals.count,
      burstStartedWithinMs: (at.at(-1) ?? 0) - (at[0] ?? 0),
      longestQueueWaitMs: Math.max(...apps.map((a) => a.wait_ms.max)),
      runMs: tookMs,
    };
    console.log(
      `${name}: ${result.answered}/${READS} answered, ${result.refused} refused ${JSON.stringify(reasons)}; ` +
        `${result.upstreamDossierCalls} dossier calls (${result.companiesFetched} companies, ${result.charged} charged) ` +
        `started within ${result.burstStartedWithinMs} ms; longest queue wait ${result.longestQueueWaitMs} ms; run ${tookMs} ms`,
    );
    return result;
  } finally {
    await h.close();
  }
}

const runs = [
  await run('production defaults', {}, 40_000),
  await run('every key start paced (reserve = limit, the old default)', { key: { reserve: 60 } }, 41_000),
];
const results = {
  at: new Date().toISOString(),
  machine: { cpus: cpus().length, node: process.version },
  setup: {
    apps: APPS.length,
    companies: COMPANIES,
    reads: READS,
    inFlight: IN_FLIGHT,
    upstream: 'emulator, 60 key calls a minute, dossier 100-300 ms',
  },
  runs,
};
await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/limits-burst.json', `${JSON.stringify(results, null, 2)}\n`);
const [now] = runs;
const targets: Array<[string, boolean]> = [
  ['0 refusals with the defaults', now!.refused === 0],
  ['exactly 50 charges', now!.charged === COMPANIES],
  ['no call held for pacing (longest queue wait < 1 s)', now!.longestQueueWaitMs < 1_000],
];
for (const [target, met] of targets) console.log(`${met ? 'met   ' : 'MISSED'} ${target}`);
