// Benchmark: latency the gateway adds over a direct call to the upstream, measured in the
// same run. The emulator and the gateway each run as their own process (`cpgw emulator`,
// `cpgw start`), as in production; this process is only the client. For each route and each
// gateway it alternates direct and gateway calls (sequential, keep-alive) so both see the same
// machine state, then prints median/p99 of both and of the difference, and writes
// bench/results/gateway-latency.json.
//   node bin/run-ts.js bench/gateway-latency.ts [N] [--interleaved]
// With Redis reachable (REDIS_URL, else redis://127.0.0.1:6379) a second gateway on the Redis
// store is measured too (a unique key prefix; only its keys are deleted). Each gateway is called
// alone (direct, gateway, direct, gateway, ...), in blocks of 250 rounds taken in turn with the
// other gateway's blocks, so both see the same stretches of machine time. Were the two
// interleaved in one alternation (direct, memory, Redis; `--interleaved`, what this bench did
// until session 8), the one called second would be measured while the other still does the work
// it does after its answer (the cache write, the lock's release): on a 2-core machine that put
// 0.2-0.5 ms on the second gateway's figure, which is no cost of that gateway.
// Must never: FLUSHDB/FLUSHALL or touch Redis keys outside its own prefix.
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { deleteKeysUnder } from '../test/helpers/redis.ts';
import { startCpgw } from './cpgw-process.ts';
import { noCacheGet, quantileMs, startLiftedEmulator, writeLiftedGatewayConfig } from './pass-through-rig.ts';

const args = process.argv.slice(2);
const INTERLEAVED = args.includes('--interleaved');
const N = Number(args.find((a) => !a.startsWith('--')) ?? 2000);
/** Rounds per block; the gateways' blocks are taken in turn. */
const BLOCK = 250;
// One upstream account per client: the emulator keeps coverage windows per account, as the
// upstream does. Were the gateways to share the direct client's account, the first of them to
// read the dossier would open its window for all; the others, told "charged 0" without having
// seen a charge, would not know a window covers the company and would measure the path of a
// read that may be charged (estimate, hold, company lock) instead of the in-window one.
const UPSTREAM_KEY = 'bench-upstream-key';
const GATEWAY_KEYS = { memory: 'bench-gateway-memory', redis: 'bench-gateway-redis' } as const;

const emu = await startLiftedEmulator([UPSTREAM_KEY, GATEWAY_KEYS.memory, GATEWAY_KEYS.redis]);
const emuUrl = emu.url;
const { configFile, token } = await writeLiftedGatewayConfig();
const gw = await startCpgw(
  ['start'],
  {
    CPGW_CONFIG: configFile,
    CPGW_PORT: '0',
    CPGW_UPSTREAM_URL: emuUrl,
    CPGW_UPSTREAM_API_KEY: GATEWAY_KEYS.memory,
  },
  /listening on (http:\/\/[^\s)]+)/,
);
const gwUrl = gw.match[1]!;

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = `cpgw-bench-latency-${randomBytes(4).toString('hex')}:`;
let redis: Redis | null = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, lazyConnect: true });
redis.on('error', () => {});
try {
  await redis.connect();
} catch {
  console.warn(`no Redis at ${REDIS_URL}: the Redis-store gateway is not measured`);
  redis.disconnect();
  redis = null;
}
const gwRedis = redis
  ? await startCpgw(
      ['start'],
      {
        CPGW_CONFIG: configFile,
        CPGW_PORT: '0',
        CPGW_UPSTREAM_URL: emuUrl,
        CPGW_UPSTREAM_API_KEY: GATEWAY_KEYS.redis,
        CPGW_REDIS_URL: REDIS_URL,
        CPGW_STORE_PREFIX: PREFIX,
      },
      /listening on (http:\/\/[^\s)]+)/,
    )
  : null;

const direct = new Pool(emuUrl, { connections: 1 });
const gateways: Array<{ store: 'memory' | 'redis'; pool: Pool }> = [
  { store: 'memory', pool: new Pool(gwUrl, { connections: 1 }) },
  ...(gwRedis ? [{ store: 'redis' as const, pool: new Pool(gwRedis.match[1]!, { connections: 1 }) }] : []),
];

/** `free`: the gateway must have judged the call free (an in-window read: estimate 0). */
async function once(pool: Pool, path: string, auth: string, free = false): Promise<number> {
  const { ms, estimate } = await noCacheGet(pool, path, auth);
  if (free && estimate !== undefined && estimate !== '0')
    throw new Error(`${path}: the gateway estimated ${estimate} for a read its window covers`);
  return ms;
}

const routes = [
  { name: 'dossier (inside its window, 100 KB)', path: '/v1/companies/7707083893' },
  { name: 'bank record', path: '/v1/banks/044525225' },
  { name: 'suggest', path: '/v1/suggest?q=%D0%A1%D0%B1%D0%B5%D1%80' },
];
const results: Record<string, unknown> = {};
/** One alternation: a direct call, then each of `pass`'s gateways, `rounds` times; the times of each. */
async function alternate(path: string, pass: typeof gateways, rounds: number) {
  const d: number[] = [];
  const per = new Map(pass.map((g) => [g.store, [] as number[]]));
  for (let i = 0; i < rounds; i++) {
    d.push(await once(direct, path, UPSTREAM_KEY));
    for (const g of pass) per.get(g.store)!.push(await once(g.pool, path, token, true));
  }
  return { d, per };
}
const summary = (xs: number[]) => ({ p50: quantileMs(xs, 0.5), p99: quantileMs(xs, 0.99) });
for (const route of routes) {
  for (const g of gateways) await once(g.pool, route.path, token); // opens the window for the dossier (one charge)
  const row: Record<string, unknown> = { n: N };
  // Each gateway alone, in blocks of BLOCK rounds taken in turn (memory, Redis, memory, ...), so
  // both sample the same stretches of machine time: on a shared VM the same pass can move by
  // tens of percent from one minute to the next.
  const passes = INTERLEAVED ? [gateways] : gateways.map((g) => [g]);
  for (const pass of passes) await alternate(route.path, pass, 200); // warm-up
  const times = new Map(gateways.map((g) => [g.store, { d: [] as number[], g: [] as number[] }]));
  for (let done = 0; done < N; done += BLOCK) {
    for (const pass of passes) {
      const { d, per } = await alternate(route.path, pass, Math.min(BLOCK, N - done));
      for (const [store, g] of per) {
        times.get(store)!.d.push(...d);
        times.get(store)!.g.push(...g);
      }
    }
  }
  for (const [store, t] of times) {
    row[store] = {
      gateway_ms: summary(t.g),
      added_ms: summary(t.g.map((x, i) => x - t.d[i]!)),
      direct_ms: summary(t.d),
    };
  }
  results[route.name] = row;
  const parts = gateways.map(({ store }) => {
    const r = row[store] as {
      gateway_ms: { p50: number };
      added_ms: { p50: number; p99: number };
      direct_ms: { p50: number };
    };
    return `${store}: direct p50 ${r.direct_ms.p50}, gateway p50 ${r.gateway_ms.p50}, added p50 ${r.added_ms.p50} p99 ${r.added_ms.p99}`;
  });
  console.log(`${route.name.padEnd(38)} ${parts.join(' | ')} (ms)`);
}
await direct.close();
for (const g of gateways) await g.pool.close();
gw.child.process.kill('SIGTERM');
gwRedis?.child.process.kill('SIGTERM');
emu.child.process.kill('SIGTERM');
if (redis) {
  redis.disconnect();
  await deleteKeysUnder(REDIS_URL, [PREFIX]);
}
await mkdir('bench/results', { recursive: true });
const report = {
  bench: 'gateway-latency',
  at: new Date().toISOString(),
  node: process.version,
  note: INTERLEAVED
    ? 'same run, alternating calls (direct, gateway memory, gateway Redis); Cache-Control: no-cache, so every call goes upstream'
    : 'same run, each gateway alone alternating with direct calls (direct, gateway), in blocks of 250 rounds taken in turn with the other gateway; Cache-Control: no-cache, so every call goes upstream',
  results,
};
await writeFile('bench/results/gateway-latency.json', `${JSON.stringify(report, null, 2)}\n`);
console.log('written bench/results/gateway-latency.json');
