// Where a cache HIT's CPU goes, against the node:http ceiling: one gateway (memory or Redis
// store) in front of the emulator (the spec's 60/min key limit, as bench/cache-hits.ts) and the
// ceiling (bench/node-ceiling-server.js, answering with the gateway's captured bytes for the
// cell), both under `--cpu-prof`, each loaded with wrk (one thread) for a bounded time, in
// alternating rounds, then stopped (SIGTERM: the profiles are written on exit). Only the samples
// taken while wrk loaded that process count (the profile's clock is the system's monotonic
// clock, as this process's hrtime). Self time is summed by function and by where the function
// lives (the gateway's dist/, a package, Node's own code, GC, idle), per request; the table of
// differences says what the gateway spends per HIT that the ceiling does not. Prints both and
// writes bench/results/hit-profile.json; the .cpuprofile files are kept with --keep DIR.
//   node bin/run-ts.js bench/hit-profile.ts [--store memory|redis] [--target identity|gzip|br|bank]
//        [--connections 16] [--seconds 5] [--rounds 2] [--top 25] [--keep DIR] [--ceiling-spin-us N]
// --ceiling-spin-us N: the ceiling spins N µs of CPU per answer (what a few µs of JavaScript per
// request cost here: on a 2-core machine shared with wrk a slower server also pays more per
// socket write, as the reader is asleep more often).
// Redis: REDIS_URL, else redis://127.0.0.1:6379; a unique key prefix, only its keys deleted.
// Must never: FLUSHDB/FLUSHALL or touch Redis keys outside its own prefix, or leave a process running.
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { deleteKeysUnder } from '../test/helpers/redis.ts';
import { type Child, startCpgw, stopCpgw } from './cpgw-process.ts';
import { hitCell } from './hit-cells.ts';
import { writeBenchGatewayConfig } from './pass-through-rig.ts';
import { captureSteady, differences, rawGet, startCeiling } from './raw-http.ts';
import { runWrk, type WrkRun } from './wrk-load.ts';

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'memory' },
    target: { type: 'string', default: 'bank' },
    connections: { type: 'string', default: '16' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '2' },
    'ceiling-spin-us': { type: 'string', default: '0' },
    top: { type: 'string', default: '25' },
    keep: { type: 'string' },
  },
});
const target = hitCell(values.target);
if (!target || (values.store !== 'memory' && values.store !== 'redis'))
  throw new Error('usage: --store memory|redis --target identity|gzip|br|bank');
const CONNECTIONS = Number(values.connections);
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const TOP = Number(values.top);
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = `cpgw-bench-prof-${randomBytes(4).toString('hex')}:`;
const UPSTREAM_KEY = 'bench-upstream-key';

interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  }>;
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Where a function lives, from its script URL. */
function placeOf(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native / V8 builtin)';
  if (url.startsWith('node:')) return 'node internals';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return `package ${pkg[1]}`;
  if (url.includes('/dist/')) return 'gateway (dist/)';
  return 'other';
}

function shortUrl(url: string): string {
  const m = /(dist\/.*|node_modules\/.*|node:.*)$/.exec(url);
  return m ? m[1]! : url;
}

/** `node --cpu-prof --cpu-prof-dir=DIR` as a launcher for startCpgw (refused in NODE_OPTIONS): a shell that execs node (same pid, so SIGTERM reaches node). */
const profiled = (profDir: string) => ['sh', '-c', `exec "$0" --cpu-prof --cpu-prof-dir='${profDir}' "$@"`];

interface Window {
  from: number;
  to: number;
}

/** Self time per function and per place, over the samples inside `windows` (µs). */
function summarise(profile: CpuProfile, windows: Window[]) {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const fns = new Map<string, { us: number; place: string }>();
  const places = new Map<string, number>();
  let t = profile.startTime;
  let inWindowUs = 0;
  let idleUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!;
    if (!windows.some((w) => t >= w.from && t <= w.to)) continue;
    const dt = profile.timeDeltas[i + 1] ?? 0; // a sample's time runs to the next one
    const frame = nodes.get(profile.samples[i]!)!;
    inWindowUs += dt;
    if (frame.functionName === '(idle)') {
      idleUs += dt;
      continue;
    }
    const key =
      `${frame.functionName || '(anonymous)'} ${frame.url ? `${shortUrl(frame.url)}:${frame.lineNumber + 1}` : ''}`.trim();
    const place = placeOf(frame.url, frame.functionName);
    const entry = fns.get(key) ?? { us: 0, place };
    entry.us += dt;
    fns.set(key, entry);
    places.set(place, (places.get(place) ?? 0) + dt);
  }
  return { inWindowUs, busyUs: inWindowUs - idleUs, fns, places };
}

const began = Date.now();
const loadAtStart = loadavg()[0]!;
const dir = await mkdtemp(join(tmpdir(), 'cpgw-bench-prof-'));
const profDirs = { gateway: join(dir, 'prof-gateway'), ceiling: join(dir, 'prof-ceiling') };
await mkdir(profDirs.gateway);
await mkdir(profDirs.ceiling);
const children: Child[] = [];
type Who = 'gateway' | 'ceiling';
const windows: Record<Who, Window[]> = { gateway: [], ceiling: [] };
const runs: Record<Who, WrkRun[]> = { gateway: [], ceiling: [] };
let loaded = false;
try {
  const emu = await startCpgw(
    ['emulator', '--port', '0', '--api-key', `${UPSTREAM_KEY};name=bench`, '--key-limit', '60'],
    {},
    /http:\/\/127\.0\.0\.1:\d+/,
  );
  children.push(emu.child);
  const { configFile, token } = await writeBenchGatewayConfig({ dir });
  const env: Record<string, string> = {
    CPGW_CONFIG: configFile,
    CPGW_PORT: '0',
    CPGW_UPSTREAM_URL: emu.match[0],
    CPGW_UPSTREAM_API_KEY: UPSTREAM_KEY,
  };
  if (values.store === 'redis') Object.assign(env, { CPGW_REDIS_URL: REDIS_URL, CPGW_STORE_PREFIX: PREFIX });
  const gw = await startCpgw(
    ['start'],
    env,
    /listening on (http:\/\/[^\s)]+)/,
    'bin/cpgw.js',
    profiled(profDirs.gateway),
  );
  children.push(gw.child);
  const urls: Record<Who, string> = { gateway: gw.match[1]!, ceiling: '' };
  const headers = { authorization: `Bearer ${token}`, 'accept-encoding': target.acceptEncoding };
  const pool = new Pool(urls.gateway, { connections: 1 });
  const miss = await pool.request({ method: 'GET', path: target.path, headers });
  await miss.body.arrayBuffer();
  await pool.close();
  const { first, varying } = await captureSteady(urls.gateway, target.path, headers, target.encoding);
  const ceiling = await startCeiling(
    dir,
    [{ path: target.path, acceptEncoding: target.acceptEncoding, answer: first }],
    profiled(profDirs.ceiling),
    { CEILING_SPIN_US: String(Number(values['ceiling-spin-us'])) },
  );
  children.push(ceiling.child);
  urls.ceiling = ceiling.url;
  const wire = differences(first, await rawGet(urls.ceiling, target.path, headers), varying);
  if (wire.length) throw new Error(`the ceiling's answer is not the gateway's: ${wire.join('; ')}`);
  for (const who of ['gateway', 'ceiling'] as const)
    await runWrk(`${urls[who]}${target.path}`, headers, CONNECTIONS, 2); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    for (const who of r % 2 === 0 ? (['gateway', 'ceiling'] as const) : (['ceiling', 'gateway'] as const)) {
      const from = Number(process.hrtime.bigint() / 1000n);
      runs[who].push(await runWrk(`${urls[who]}${target.path}`, headers, CONNECTIONS, SECONDS));
      windows[who].push({ from, to: Number(process.hrtime.bigint() / 1000n) });
    }
  }
  loaded = true;
} finally {
  for (const child of children.reverse()) await stopCpgw(child);
  if (values.store === 'redis') await deleteKeysUnder(REDIS_URL, [PREFIX]);
  if (!loaded) await rm(dir, { recursive: true, force: true });
}

const perServer = {} as Record<Who, ReturnType<typeof summarise> & { requests: number }>;
for (const who of ['gateway', 'ceiling'] as const) {
  const files = (await readdir(profDirs[who])).filter((f) => f.endsWith('.cpuprofile'));
  if (files.length !== 1) throw new Error(`${who}: expected one profile, found ${files.join(', ')}`);
  if (values.keep) {
    await mkdir(values.keep, { recursive: true });
    await copyFile(
      join(profDirs[who], files[0]!),
      join(values.keep, `hit-${who}-${values.store}-${values.target}.cpuprofile`),
    );
  }
  const profile = JSON.parse(await readFile(join(profDirs[who], files[0]!), 'utf8')) as CpuProfile;
  perServer[who] = {
    ...summarise(profile, windows[who]),
    requests: runs[who].reduce((n, x) => n + x.requests, 0),
  };
}
await rm(dir, { recursive: true, force: true });

const us = (x: number) => Math.round(x * 100) / 100;
const perReq = (who: Who, x: number) => x / perServer[who].requests;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
function serverSummary(who: Who) {
  const p = perServer[who];
  return {
    req_per_s_per_round: runs[who].map((x) => x.req_per_s),
    req_per_s: median(runs[who].map((x) => x.req_per_s)),
    p50_ms: median(runs[who].map((x) => x.p50_ms)),
    p99_ms: median(runs[who].map((x) => x.p99_ms)),
    requests: p.requests,
    busy_share: Math.round((p.busyUs / p.inWindowUs) * 1000) / 1000,
    busy_us_per_request: us(perReq(who, p.busyUs)),
    by_place_us_per_request: Object.fromEntries(
      [...p.places.entries()].sort((a, b) => b[1] - a[1]).map(([place, x]) => [place, us(perReq(who, x))]),
    ),
    top_self_us_per_request: [...p.fns.entries()]
      .sort((a, b) => b[1].us - a[1].us)
      .slice(0, TOP)
      .map(([fn, v]) => ({ function: fn, place: v.place, us: us(perReq(who, v.us)) })),
  };
}
const servers = { gateway: serverSummary('gateway'), ceiling: serverSummary('ceiling') };
// What the gateway spends per request more than the ceiling, function by function.
const names = new Set([...perServer.gateway.fns.keys(), ...perServer.ceiling.fns.keys()]);
const diff = [...names]
  .map((fn) => {
    const g = perServer.gateway.fns.get(fn);
    const c = perServer.ceiling.fns.get(fn);
    return {
      function: fn,
      place: (g ?? c)!.place,
      gateway_us: us(perReq('gateway', g?.us ?? 0)),
      ceiling_us: us(perReq('ceiling', c?.us ?? 0)),
      extra_us: us(perReq('gateway', g?.us ?? 0) - perReq('ceiling', c?.us ?? 0)),
    };
  })
  .sort((a, b) => Math.abs(b.extra_us) - Math.abs(a.extra_us))
  .slice(0, TOP);
const placeNames = new Set([...perServer.gateway.places.keys(), ...perServer.ceiling.places.keys()]);
const placeDiff = [...placeNames]
  .map((place) => ({
    place,
    gateway_us: us(perReq('gateway', perServer.gateway.places.get(place) ?? 0)),
    ceiling_us: us(perReq('ceiling', perServer.ceiling.places.get(place) ?? 0)),
  }))
  .map((x) => ({ ...x, extra_us: us(x.gateway_us - x.ceiling_us) }))
  .sort((a, b) => b.extra_us - a.extra_us);
const report = {
  bench: 'hit-profile',
  at: new Date().toISOString(),
  machine: {
    cpus: cpus().length,
    node: process.version,
    loadavg_1m_at_start: Math.round(loadAtStart * 100) / 100,
    loadavg_1m_at_end: Math.round(loadavg()[0]! * 100) / 100,
  },
  cell: {
    store: values.store,
    target: target.name,
    connections: CONNECTIONS,
    seconds: SECONDS,
    rounds: ROUNDS,
  },
  ceiling_spin_us: Number(values['ceiling-spin-us']),
  note: 'both processes under --cpu-prof (which slows both); µs per request of the main thread: self time of the samples taken while wrk loaded that process, over the requests wrk completed; writev is the socket write syscall (on a loaded 2-core VM it includes waking the reader)',
  servers,
  vs_ceiling: Math.round((servers.gateway.req_per_s / servers.ceiling.req_per_s) * 1000) / 1000,
  extra_by_place_us_per_request: placeDiff,
  extra_by_function_us_per_request: diff,
  total_seconds: Math.round((Date.now() - began) / 100) / 10,
};
console.log(
  `hit-profile: ${values.store}, ${target.name}, ${CONNECTIONS} connections, ${ROUNDS} x ${SECONDS} s each, both under --cpu-prof${report.ceiling_spin_us ? `, the ceiling spinning ${report.ceiling_spin_us} µs per answer` : ''}; load ${report.machine.loadavg_1m_at_start} -> ${report.machine.loadavg_1m_at_end}`,
);
for (const who of ['gateway', 'ceiling'] as const)
  console.log(
    `  ${who}: ${servers[who].req_per_s} req/s (median), main thread busy ${servers[who].busy_us_per_request} µs per request`,
  );
console.log(`  gateway / ceiling req/s: ${report.vs_ceiling}`);
console.log('self time per request by place (gateway / ceiling / extra, µs):');
for (const p of placeDiff) console.log(`  ${p.gateway_us} / ${p.ceiling_us} / ${p.extra_us}  ${p.place}`);
console.log(`top ${TOP} differences by function (gateway / ceiling / extra, µs per request):`);
for (const f of diff)
  console.log(`  ${f.gateway_us} / ${f.ceiling_us} / ${f.extra_us}  ${f.function}  [${f.place}]`);
await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/hit-profile.json', `${JSON.stringify(report, null, 2)}\n`);
console.log('written bench/results/hit-profile.json');
