// Benchmark: A/B of the pass-through between builds, in ONE run. Each build given (a checkout
// of this repository with node_modules, e.g. a `git worktree`) runs its own gateway process on
// the same store kind, in front of one emulator; every round makes one direct call, then one
// call to each gateway (the order alternates every round), so all builds see the same machine
// state and the difference between them is not drowned by the ±10 % that separate runs of
// bench/gateway-latency.ts move by. Each client has its own upstream account (coverage windows
// are per account) and each Redis gateway its own key prefix (only its keys are deleted).
// Prints added p50/p99 per build and writes bench/results/pass-through-ab.json.
//   node bin/run-ts.js bench/pass-through-ab.ts [--store redis|memory] [--n 2000]
//        [--path /v1/companies/7707083893] <build dir> <build dir> ...
// Must never: FLUSHDB/FLUSHALL or touch Redis keys outside its own prefixes.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { deleteKeysUnder } from '../test/helpers/redis.ts';
import { startCpgw } from './cpgw-process.ts';
import { noCacheGet, quantileMs, startLiftedEmulator, writeLiftedGatewayConfig } from './pass-through-rig.ts';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    store: { type: 'string', default: 'redis' },
    n: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '300' },
    path: { type: 'string', default: '/v1/companies/7707083893' },
  },
});
const store = values.store === 'memory' ? 'memory' : 'redis';
const N = Number(values.n);
const WARMUP = Number(values.warmup);
const builds = positionals.map((p) => resolve(p));
if (builds.length < 1 || !Number.isInteger(N) || N < 1) {
  console.error('usage: bench/pass-through-ab.ts [--store redis|memory] [--n N] [--path P] <build dir>...');
  process.exit(2);
}
for (const dir of builds) {
  // Each build runs its own compiled dist/, built here when its src/ is newer.
  const run = spawnSync(process.execPath, [join(dir, 'bin/build.js'), '--if-stale'], { stdio: 'inherit' });
  if (run.status !== 0) throw new Error(`${dir}: bin/build.js failed`);
}

const DIRECT_KEY = 'ab-direct';
const gatewayKey = (i: number) => `ab-gateway-${i}`;
const emu = await startLiftedEmulator([DIRECT_KEY, ...builds.map((_, i) => gatewayKey(i))]);
const emuUrl = emu.url;
const { configFile, token } = await writeLiftedGatewayConfig();
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefixes = builds.map((_, i) => `cpgw-bench-ab-${randomBytes(4).toString('hex')}-${i}:`);
const gateways = [];
for (const [i, build] of builds.entries()) {
  const env: Record<string, string> = {
    CPGW_CONFIG: configFile,
    CPGW_PORT: '0',
    CPGW_UPSTREAM_URL: emuUrl,
    CPGW_UPSTREAM_API_KEY: gatewayKey(i),
  };
  if (store === 'redis') Object.assign(env, { CPGW_REDIS_URL: REDIS_URL, CPGW_STORE_PREFIX: prefixes[i] });
  gateways.push(
    await startCpgw(['start'], env, /listening on (http:\/\/[^\s)]+)/, join(build, 'bin/cpgw.js')),
  );
}

const direct = new Pool(emuUrl, { connections: 1 });
const pools = gateways.map((g) => new Pool(g.match[1]!, { connections: 1 }));
const once = async (pool: Pool, auth: string) => (await noCacheGet(pool, values.path, auth)).ms;

for (const pool of pools) await once(pool, token); // opens each gateway's window (one charge each)
const directMs: number[] = [];
const added = pools.map(() => [] as number[]);
for (let round = 0; round < WARMUP + N; round++) {
  const d = await once(direct, DIRECT_KEY);
  const order = round % 2 === 0 ? [...pools.keys()] : [...pools.keys()].reverse();
  const ms: number[] = [];
  for (const j of order) ms[j] = await once(pools[j]!, token);
  if (round < WARMUP) continue;
  directMs.push(d);
  for (const [j, x] of ms.entries()) added[j]!.push(x - d);
  if ((round - WARMUP + 1) % 500 === 0) console.error(`${round - WARMUP + 1}/${N} rounds`);
}
const q = quantileMs;
const rows = builds.map((build, j) => ({
  build,
  added_ms: { p50: q(added[j]!, 0.5), p99: q(added[j]!, 0.99) },
}));
console.log(`${store} ${values.path}: direct p50 ${q(directMs, 0.5)} ms`);
for (const r of rows) console.log(`  ${r.build}: added p50 ${r.added_ms.p50}, p99 ${r.added_ms.p99} ms`);

await direct.close();
for (const pool of pools) await pool.close();
for (const g of gateways) g.child.process.kill('SIGTERM');
emu.child.process.kill('SIGTERM');
if (store === 'redis') await deleteKeysUnder(REDIS_URL, prefixes);
await mkdir('bench/results', { recursive: true });
await writeFile(
  'bench/results/pass-through-ab.json',
  `${JSON.stringify({ bench: 'pass-through-ab', at: new Date().toISOString(), node: process.version, store, path: values.path, n: N, direct_ms: { p50: q(directMs, 0.5) }, rows }, null, 2)}\n`,
);
console.log('written bench/results/pass-through-ab.json');
