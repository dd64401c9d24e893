// Benchmark: what the account pays for a day-like mix of reads, against computed minima (issue #14).
// A seeded synthetic trace (5 apps, a Zipf company mix, same-company bursts, dossier / section /
// requisites reads over --minutes of trace time) is replayed in scaled time (the harness moves
// the emulator's and the gateways' clocks between events) three ways: straight to the emulator,
// through one gateway on the memory store, and (--redis) through two gateway replicas sharing
// Redis, alternating. The Redis replicas' rate log runs on Redis server time, which the replay
// cannot move: the replay holds the trace still while that log is nearly full (bench/spend-replay-lib.ts),
// so the Redis run takes real minutes (about one per 45 upstream calls). Spend is the emulator's
// ledger. Minima are computed from the trace:
//   per-path  a gateway that caches each path (dossier, each section, requisites) on its own
//   shared    one cached copy per company: the dossier and every section it carries whole
//             (an oracle: which member is complete comes from the emulator's data); any
//             section read that is charged or inside a window brings that copy in free
// Both know the windows exactly (no safety margin) and never pay twice inside one.
// Prints a table and writes bench/results/spend-replay.json.
//   node bin/run-ts.js bench/spend-replay.ts [--seeds 1,2,3] [--minutes 120] [--redis]
// Must never: FLUSHDB/FLUSHALL (the Redis replicas use a unique prefix, deleted at the end).
import { mkdir, writeFile } from 'node:fs/promises';
import { startHarness, startRedisReplicas, UPSTREAM_KEY } from '../test/helpers/gateway-harness.ts';
import {
  APPS,
  COMPANIES,
  derivableOn,
  derivationCounters,
  gatewayLedgerTotal,
  generateTrace,
  keyRoomOf,
  minimum,
  pathOf,
  type Run,
  replay,
} from './spend-replay-lib.ts';

const arg = (name: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const SEEDS = (arg('--seeds') ?? '1,2,3').split(',').map(Number);
const MINUTES = Number(arg('--minutes') ?? 120);
const REDIS = process.argv.includes('--redis');

const apps = APPS.map((name) => ({ name }));

async function main() {
  const results: Record<string, unknown>[] = [];
  for (const seed of SEEDS) {
    const events = generateTrace(seed, MINUTES);
    const row: Record<string, unknown> = { seed, events: events.length };
    // Direct: every read straight to the emulator with the upstream key.
    {
      const h = await startHarness({ apps });
      const prices = h.emulator.config.prices as unknown as { dossier: number; requisites: number };
      const derivable = derivableOn(h);
      row.minPerPathMinor = minimum(events, prices, derivable, false);
      row.minSharedMinor = minimum(events, prices, derivable, true);
      row.direct = await replay(h, events, (e) =>
        fetch(`${h.emulator.url}${pathOf(e)}`, { headers: { authorization: `Bearer ${UPSTREAM_KEY}` } }),
      );
      await h.close();
    }
    {
      const h = await startHarness({ apps });
      const run = await replay(h, events, (e) => h.call(e.app, pathOf(e)), {
        keyRoom: keyRoomOf(h.gateway.url, h.adminToken),
      });
      run.ledgerMatches = (await gatewayLedgerTotal(h.gateway.url, h.adminToken)) === run.spendMinor;
      run.derivation = await derivationCounters([h.gateway.url], h.adminToken);
      row.memory = run;
      await h.close();
    }
    if (REDIS) {
      const r = await startRedisReplicas({ apps });
      if (!r) throw new Error('--redis: no Redis (set REDIS_URL or install redis-server)');
      const { h, second } = r;
      try {
        const run = await replay(
          h,
          events,
          (e, i) =>
            i % 2 === 0
              ? h.call(e.app, pathOf(e))
              : fetch(`${second.url}${pathOf(e)}`, {
                  headers: { authorization: `Bearer ${h.tokens[e.app]}` },
                }),
          { keyRoom: keyRoomOf(h.gateway.url, h.adminToken) },
        );
        run.ledgerMatches = (await gatewayLedgerTotal(second.url, h.adminToken)) === run.spendMinor;
        run.derivation = await derivationCounters([h.gateway.url, second.url], h.adminToken);
        row.redis2 = run;
      } finally {
        await r.close();
      }
    }
    const shared = row.minSharedMinor as number;
    const perPath = row.minPerPathMinor as number;
    const ratio = (x: unknown) => (x ? Number(((x as Run).spendMinor / shared).toFixed(3)) : null);
    row.ratios = {
      direct_vs_shared: ratio(row.direct),
      memory_vs_shared: ratio(row.memory),
      redis2_vs_shared: ratio(row.redis2),
      perPath_vs_shared: Number((perPath / shared).toFixed(3)),
    };
    results.push(row);
    for (const setup of ['direct', 'memory', 'redis2'] as const) {
      const run = row[setup] as Run | undefined;
      if (!run) continue;
      console.log(
        `seed ${seed} ${setup.padEnd(6)} ${events.length} reads  spend ${run.spendMinor}  per-path min ${perPath}  ` +
          `shared min ${shared}  ${ratio(run)}x shared  ${(run.spendMinor / perPath).toFixed(3)}x per-path  ` +
          `upstream 429 ${run.upstream429}  gateway 429 ${run.gateway429}  ledger ${run.ledgerMatches ?? '-'}  ` +
          `held ${run.pauses}x ${(run.pausedMs / 1000).toFixed(0)} s`,
      );
    }
  }
  await mkdir('bench/results', { recursive: true });
  await writeFile(
    'bench/results/spend-replay.json',
    `${JSON.stringify({ minutes: MINUTES, apps: APPS.length, companies: COMPANIES, results }, null, 2)}\n`,
  );
}

await main();
