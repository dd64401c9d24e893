// Benchmark: A/B of the pass-through between builds, in ONE run. Each build given (a checkout
// of this repository with node_modules, e.g. a `git worktree`) runs its own gateway process on
// the same store kind, in front of one emulator; every round makes one direct call, then one
// call to each gateway (the order alternates every round), so all builds see the same machine
// state and the difference between them is not drowned by the ±10 % that separate runs of
// bench/gateway-latency.ts move by. Each client has its own upstream account (coverage windows
// are per account) and each Redis gateway its own key prefix (only its keys are deleted).
// Prints added p50/p99 per build and the CPU each gateway process spent per call (all its
// threads, and its main thread alone: /proc, 10 ms ticks over the measured rounds, so work a
// call leaves for after its answer counts too), and writes bench/results/pass-through-ab.json.
// --paid: every call reads a company its client has not read (no Cache-Control), so each
// gateway call is a charged MISS (estimate, reserve, the company's lock, the upstream call,
// record, the cache write) and each direct call is charged too.
// --store: memory (money in memory, store.stateDir null), embedded (the default: money in
// SQLite under a state directory of its own), redis, postgres (money in a PostgreSQL database
// made for each gateway and dropped after, hot state in memory) or redis+postgres.
//   node bin/run-ts.js bench/pass-through-ab.ts [--store redis|memory|embedded|postgres|redis+postgres] [--n 2000]
//        [--paid] [--path /v1/companies/7707083893] <build dir>[=<node binary>] ...
// <dir>=<node binary>: that build's gateway runs on another Node release (the same build twice,
// on Node 20 and on the image's Node 24, compares the releases in one run).
// Must never: FLUSHDB/FLUSHALL or touch Redis keys outside its own prefixes, or drop a database it
// did not create.
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { createTestDatabase, type TestDatabase } from '../test/helpers/postgres.ts';
import { deleteKeysUnder } from '../test/helpers/redis.ts';
import { buildRuns, cpuTicks, startCpgw, stopCpgw } from './cpgw-process.ts';
import {
  freshInns,
  noCacheGet,
  paidGet,
  quantileMs,
  startLiftedEmulator,
  writeLiftedGatewayConfig,
} from './pass-through-rig.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    store: { type: 'string', default: 'redis' },
    n: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '300' },
    path: { type: 'string', default: '/v1/companies/7707083893' },
    paid: { type: 'boolean', default: false },
  },
});
const STORES = ['memory', 'embedded', 'redis', 'postgres', 'redis+postgres'] as const;
const store = STORES.find((s) => s === values.store) ?? 'redis';
const onRedis = store === 'redis' || store === 'redis+postgres';
const N = Number(values.n);
const WARMUP = Number(values.warmup);
if (positionals.length < 1 || !Number.isInteger(N) || N < 1) {
  console.error(
    'usage: bench/pass-through-ab.ts [--store redis|memory|embedded|postgres|redis+postgres] [--n N] [--paid] [--path P] <build dir>...',
  );
  process.exit(2);
}
/** Each build runs its own compiled dist/, built here when its src/ is newer. */
const runs = buildRuns(positionals);
const builds = runs.map((r) => r.dir);

const DIRECT_KEY = 'ab-direct';
const gatewayKey = (i: number) => `ab-gateway-${i}`;
// --paid: a wallet for every charge of the run (the default 10,000,000 kopecks pays ~1,000 dossiers).
const emu = await startLiftedEmulator(
  [DIRECT_KEY, ...builds.map((_, i) => gatewayKey(i))],
  values.paid ? ['--wallet', '1000000000000'] : [],
);
const emuUrl = emu.url;
const { configFile, token } = await writeLiftedGatewayConfig(
  store === 'memory' ? { extra: 'store:\n  stateDir: null\n' } : {},
);
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefixes = builds.map((_, i) => `cpgw-bench-ab-${randomBytes(4).toString('hex')}-${i}:`);
const gateways = [];
const databases: TestDatabase[] = [];
for (const [i, build] of builds.entries()) {
  const env: Record<string, string> = {
    CPGW_CONFIG: configFile,
    CPGW_PORT: '0',
    CPGW_UPSTREAM_URL: emuUrl,
    CPGW_UPSTREAM_API_KEY: gatewayKey(i),
    // /metrics on the main port (its GC counts, below); the metrics listener on a port of its own.
    CPGW_METRICS_ON_MAIN_PORT: 'true',
    CPGW_METRICS_PORT: '0',
  };
  if (onRedis) Object.assign(env, { CPGW_REDIS_URL: REDIS_URL, CPGW_STORE_PREFIX: prefixes[i] });
  if (store.includes('postgres')) {
    const db = await createTestDatabase(`bench_ab_${i}`);
    if (!db) throw new Error('--store postgres: no PostgreSQL answers (POSTGRES_URL)');
    databases.push(db);
    env.CPGW_POSTGRES_URL = db.url;
  }
  if (store === 'memory') env.CPGW_STATE_DIR = ''; // the config's stateDir null holds: money in memory
  gateways.push(
    await startCpgw(
      ['start'],
      env,
      /listening on (http:\/\/[^\s)]+)/,
      join(build, 'bin/cpgw.js'),
      [],
      20_000,
      runs[i]!.node,
    ),
  );
}

const direct = new Pool(emuUrl, { connections: 1 });
const pools = gateways.map((g) => new Pool(g.match[1]!, { connections: 1 }));
/** Each client's own never-read companies (--paid): client 0 direct, 1.. the gateways. */
const inns = [DIRECT_KEY, ...pools].map((_, i) => (values.paid ? freshInns(i, WARMUP + N + 1) : []));
const used = inns.map(() => 0);
const once = async (client: number, pool: Pool, auth: string) => {
  if (!values.paid) return (await noCacheGet(pool, values.path, auth)).ms;
  return paidGet(pool, inns[client]![used[client]!++]!, auth, client > 0);
};

const pids = gateways.map((g) => g.child.process.pid!);
/** The gateway's collector so far (its own /metrics: prom-client's nodejs_gc_duration_seconds). */
const gcOf = async (pool: Pool) => {
  const res = await pool.request({ method: 'GET', path: '/metrics' });
  const text = await res.body.text();
  const value = (name: string): Record<string, number> =>
    Object.fromEntries(
      [...text.matchAll(new RegExp(`^${name}\\{kind="(\\w+)"\\} ([\\d.e+-]+)$`, 'gm'))].map((m) => [
        m[1]!,
        Number(m[2]),
      ]),
    );
  return { count: value('nodejs_gc_duration_seconds_count'), sum: value('nodejs_gc_duration_seconds_sum') };
};

for (const [j, pool] of pools.entries()) await once(j + 1, pool, token); // opens each gateway's window (one charge each)
const directMs: number[] = [];
const added = pools.map(() => [] as number[]);
let cpuAt: { all: number; main: number }[] = [];
let gcAt: Awaited<ReturnType<typeof gcOf>>[] = [];
for (let round = 0; round < WARMUP + N; round++) {
  if (round === WARMUP) {
    gcAt = await Promise.all(pools.map(gcOf));
    cpuAt = pids.map(cpuTicks);
  }
  const d = await once(0, direct, DIRECT_KEY);
  const order = round % 2 === 0 ? [...pools.keys()] : [...pools.keys()].reverse();
  const ms: number[] = [];
  for (const j of order) ms[j] = await once(j + 1, pools[j]!, token);
  if (round < WARMUP) continue;
  directMs.push(d);
  for (const [j, x] of ms.entries()) added[j]!.push(x - d);
  if ((round - WARMUP + 1) % 500 === 0) console.error(`${round - WARMUP + 1}/${N} rounds`);
}
await new Promise((r) => setTimeout(r, 200)); // what the last calls left for after their answers
const cpuEnd = pids.map(cpuTicks);
const gcEnd = await Promise.all(pools.map(gcOf));
const q = quantileMs;
/** ms of CPU per call from 1/100 s ticks. */
const perCall = (t: number) => Math.round((t * 10_000) / N) / 1000;
const rows = builds.map((dir, j) => ({
  build: runs[j]!.node === process.execPath ? dir : `${dir} on ${runs[j]!.node}`,
  added_ms: { p50: q(added[j]!, 0.5), p99: q(added[j]!, 0.99) },
  /** Collections per 1,000 calls and ms of collector pause per call, by kind (major, minor, incremental). */
  gc: Object.fromEntries(
    Object.keys(gcEnd[j]!.count).map((kind) => [
      kind,
      {
        per_1000_calls:
          Math.round(((gcEnd[j]!.count[kind]! - (gcAt[j]!.count[kind] ?? 0)) * 10_000) / N) / 10,
        ms_per_call: Math.round(((gcEnd[j]!.sum[kind]! - (gcAt[j]!.sum[kind] ?? 0)) * 1e6) / N) / 1000,
      },
    ]),
  ),
  cpu_ms_per_call: {
    process: perCall(cpuEnd[j]!.all - cpuAt[j]!.all),
    main_thread: perCall(cpuEnd[j]!.main - cpuAt[j]!.main),
  },
}));
const what = values.paid ? 'paid miss (a new company per call)' : values.path;
console.log(`${store} ${what}: direct p50 ${q(directMs, 0.5)} ms`);
for (const r of rows)
  console.log(
    `  ${r.build}: added p50 ${r.added_ms.p50}, p99 ${r.added_ms.p99} ms; CPU per call ${r.cpu_ms_per_call.process} ms (main thread ${r.cpu_ms_per_call.main_thread}); GC per 1,000 calls: ${Object.entries(
      r.gc,
    )
      .map(([kind, g]) => `${kind} ${g.per_1000_calls} (${g.ms_per_call} ms a call)`)
      .join(', ')}`,
  );

await direct.close();
for (const pool of pools) await pool.close();
for (const g of gateways) await stopCpgw(g.child);
emu.child.process.kill('SIGTERM');
if (onRedis) await deleteKeysUnder(REDIS_URL, prefixes);
for (const db of databases) await db.drop(); // the gateways (their pools) have exited
await mkdir('bench/results', { recursive: true });
await writeFile(
  'bench/results/pass-through-ab.json',
  `${JSON.stringify({ bench: 'pass-through-ab', at: new Date().toISOString(), node: process.version, store, path: values.paid ? 'paid' : values.path, n: N, direct_ms: { p50: q(directMs, 0.5) }, rows }, null, 2)}\n`,
);
console.log('written bench/results/pass-through-ab.json');
