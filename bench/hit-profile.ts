// Where a cache HIT's CPU goes: one gateway (memory or Redis store) under `--cpu-prof`, in front
// of the emulator (the spec's 60/min key limit, as bench/cache-hits.ts), one cell of
// bench/cache-hits.ts loaded with wrk (one thread) for a bounded time, then stopped (SIGTERM: the
// profile is written on exit). The samples taken while wrk ran (the profile's clock is the
// system's monotonic clock, as this process's hrtime) are summed by function (self time) and
// by where the function lives (the gateway's dist/, a package, Node's own code, GC, idle).
// Prints the top functions and writes bench/results/hit-profile.json; the .cpuprofile is kept
// with --keep DIR (open it in Chrome DevTools).
//   node bin/run-ts.js bench/hit-profile.ts [--store memory|redis] [--target identity|gzip|br|bank]
//        [--connections 16] [--seconds 10] [--top 25] [--keep DIR]
// Redis: REDIS_URL, else redis://127.0.0.1:6379; a unique key prefix, only its keys deleted.
// Must never: FLUSHDB/FLUSHALL or touch Redis keys outside its own prefix, or leave a process running.
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { newToken, tokenHash } from '../src/auth/tokens.ts';
import { deleteKeysUnder } from '../test/helpers/redis.ts';
import { type Child, startCpgw, stopCpgw } from './cpgw-process.ts';
import { runWrk } from './wrk-load.ts';

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'memory' },
    target: { type: 'string', default: 'bank' },
    connections: { type: 'string', default: '16' },
    seconds: { type: 'string', default: '10' },
    top: { type: 'string', default: '25' },
    keep: { type: 'string' },
  },
});
const TARGETS: Record<string, { name: string; path: string; acceptEncoding: string }> = {
  identity: { name: 'dossier, identity', path: '/v1/companies/7707083893', acceptEncoding: 'identity' },
  gzip: { name: 'dossier, gzip', path: '/v1/companies/7707083893', acceptEncoding: 'gzip' },
  br: { name: 'dossier, br', path: '/v1/companies/7707083893', acceptEncoding: 'br' },
  bank: { name: 'bank record', path: '/v1/banks/044525225', acceptEncoding: 'identity' },
};
const target = TARGETS[values.target];
if (!target || (values.store !== 'memory' && values.store !== 'redis'))
  throw new Error('usage: --store memory|redis --target identity|gzip|br|bank');
const CONNECTIONS = Number(values.connections);
const SECONDS = Number(values.seconds);
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

const began = Date.now();
const loadAtStart = loadavg()[0]!;
const dir = await mkdtemp(join(tmpdir(), 'cpgw-bench-prof-'));
const profDir = join(dir, 'prof');
await mkdir(profDir);
const children: Child[] = [];
let wrk: Awaited<ReturnType<typeof runWrk>> | null = null;
let window: { from: number; to: number } | null = null;
try {
  const emu = await startCpgw(
    ['emulator', '--port', '0', '--api-key', `${UPSTREAM_KEY};name=bench`, '--key-limit', '60'],
    {},
    /http:\/\/127\.0\.0\.1:\d+/,
  );
  children.push(emu.child);
  const token = newToken();
  const configFile = join(dir, 'gateway.yaml');
  await writeFile(
    configFile,
    `log:\n  level: warn\napps:\n  - name: bench\n    tokenHash: "${tokenHash(token)}"\n    scopes: [read:companies, read:checks]\n`,
  );
  const env: Record<string, string> = {
    CPGW_CONFIG: configFile,
    CPGW_PORT: '0',
    CPGW_UPSTREAM_URL: emu.match[0],
    CPGW_UPSTREAM_API_KEY: UPSTREAM_KEY,
  };
  if (values.store === 'redis') Object.assign(env, { CPGW_REDIS_URL: REDIS_URL, CPGW_STORE_PREFIX: PREFIX });
  // --cpu-prof is refused in NODE_OPTIONS: a shell that execs node with it (same pid, so the
  // SIGTERM reaches node) is the launcher startCpgw runs node under.
  const profiled = ['sh', '-c', `exec "$0" --cpu-prof --cpu-prof-dir='${profDir}' "$@"`];
  const gw = await startCpgw(['start'], env, /listening on (http:\/\/[^\s)]+)/, 'bin/cpgw.js', profiled);
  children.push(gw.child);
  const url = gw.match[1]!;
  const headers = { authorization: `Bearer ${token}`, 'accept-encoding': target.acceptEncoding };
  const pool = new Pool(url, { connections: 1 });
  for (let i = 0; i < 20; i++) {
    const res = await pool.request({ method: 'GET', path: target.path, headers });
    await res.body.arrayBuffer();
    await new Promise((r) => setTimeout(r, 10));
  }
  await pool.close();
  await runWrk(`${url}${target.path}`, headers, CONNECTIONS, 2); // warm-up (JIT, the coding stored)
  const from = Number(process.hrtime.bigint() / 1000n);
  wrk = await runWrk(`${url}${target.path}`, headers, CONNECTIONS, SECONDS);
  window = { from, to: Number(process.hrtime.bigint() / 1000n) };
} finally {
  for (const child of children.reverse()) await stopCpgw(child);
  if (values.store === 'redis') await deleteKeysUnder(REDIS_URL, [PREFIX]);
}

const files = (await readdir(profDir)).filter((f) => f.endsWith('.cpuprofile'));
if (files.length !== 1 || !window || !wrk) throw new Error(`expected one profile, found ${files.join(', ')}`);
if (values.keep) {
  await mkdir(values.keep, { recursive: true });
  await copyFile(
    join(profDir, files[0]!),
    join(values.keep, `hit-${values.store}-${values.target}.cpuprofile`),
  );
}
const profile = JSON.parse(await readFile(join(profDir, files[0]!), 'utf8')) as CpuProfile;
await rm(dir, { recursive: true, force: true });

const nodes = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
const selfUs = new Map<string, { us: number; place: string }>();
const byPlace = new Map<string, number>();
let t = profile.startTime;
let inWindowUs = 0;
let idleUs = 0;
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i]!;
  if (t < window.from || t > window.to) continue;
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
  const entry = selfUs.get(key) ?? { us: 0, place };
  entry.us += dt;
  selfUs.set(key, entry);
  byPlace.set(place, (byPlace.get(place) ?? 0) + dt);
}
const busyUs = inWindowUs - idleUs;
const pct = (us: number) => Math.round((us / busyUs) * 1000) / 10;
const top = [...selfUs.entries()]
  .sort((a, b) => b[1].us - a[1].us)
  .slice(0, TOP)
  .map(([fn, v]) => ({
    function: fn,
    place: v.place,
    self_ms: Math.round(v.us / 100) / 10,
    pct_of_busy: pct(v.us),
  }));
const places = [...byPlace.entries()]
  .sort((a, b) => b[1] - a[1])
  .map(([place, us]) => ({ place, self_ms: Math.round(us / 100) / 10, pct_of_busy: pct(us) }));
const requests = wrk.requests;
const report = {
  bench: 'hit-profile',
  at: new Date().toISOString(),
  machine: {
    cpus: cpus().length,
    node: process.version,
    loadavg_1m_at_start: Math.round(loadAtStart * 100) / 100,
    loadavg_1m_at_end: Math.round(loadavg()[0]! * 100) / 100,
  },
  cell: { store: values.store, target: target.name, connections: CONNECTIONS, seconds: SECONDS },
  wrk: { req_per_s: wrk.req_per_s, p50_ms: wrk.p50_ms, p99_ms: wrk.p99_ms, requests, non2xx: wrk.non2xx },
  window_ms: Math.round(inWindowUs / 1000),
  gateway_busy_ms: Math.round(busyUs / 1000),
  gateway_busy_share: Math.round((busyUs / inWindowUs) * 1000) / 1000,
  gateway_cpu_us_per_request: Math.round((busyUs / requests) * 10) / 10,
  by_place: places,
  top_self: top,
  total_seconds: Math.round((Date.now() - began) / 100) / 10,
};
console.log(
  `hit-profile: ${values.store}, ${target.name}, ${CONNECTIONS} connections, ${SECONDS} s under --cpu-prof: ${wrk.req_per_s} req/s, p50 ${wrk.p50_ms} ms, p99 ${wrk.p99_ms} ms; load ${report.machine.loadavg_1m_at_start} -> ${report.machine.loadavg_1m_at_end}`,
);
console.log(
  `gateway main thread busy ${report.gateway_busy_ms} of ${report.window_ms} ms (${Math.round(report.gateway_busy_share * 100)} %), ${report.gateway_cpu_us_per_request} µs per request (profiled)`,
);
console.log('self time by place:');
for (const p of places) console.log(`  ${String(p.pct_of_busy).padStart(5)} %  ${p.self_ms} ms  ${p.place}`);
console.log(`top ${TOP} functions by self time (% of busy):`);
for (const f of top) console.log(`  ${String(f.pct_of_busy).padStart(5)} %  ${f.function}  [${f.place}]`);
await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/hit-profile.json', `${JSON.stringify(report, null, 2)}\n`);
console.log('written bench/results/hit-profile.json');
