// Benchmark: what a cache HIT costs. Throughput (req/s at a fixed number of requests in
// flight) and p50/p99 latency of the gateway answering from its cache, for a ~100 KB dossier
// (identity, gzip and brotli as stored) and a bank record, with the memory store and with the
// Redis store, beside nginx proxy_cache in front of the emulator (bench/nginx-cache.ts, when
// nginx is installed), the upstream emulator answering the same requests directly, and the
// runtime's ceiling: a bare `node:http` server (bench/node-ceiling-server.js, its own process, on
// the gateways' Node: CPGW_BENCH_GATEWAY_NODE when set)
// writing, for each cell, exactly the bytes the gateway sent for it (status, headers with
// Content-Encoding, body; captured from the memory gateway once per run and checked equal on the
// wire but for Date and the headers that change per answer), all in the same run. The load comes
// from wrk (bench/wrk-load.ts; one thread) when it is installed, else from this process (undici);
// with wrk each cell is first checked by requests from this process. Emulators and gateways are
// their own processes (`cpgw emulator`, `cpgw start`), as in production; this process is only
// the client. The direct reads go to a twin emulator (same code, data and seed) whose key limit
// never refuses them; the gateways' own upstream keeps the spec's 60/min (or
// --upstream-key-limit), which the gateways follow. Every gateway answer must be 200 with
// X-Cache: HIT (and the expected Content-Encoding); anything else is counted as an error.
// Each round takes every cell once, the servers of a cell in an order rotated by one every round
// (so each server takes each place in turn); each figure is the median over the rounds. Ratios:
// each gateway's req/s over the ceiling's and over nginx's, Redis over memory, for the same
// target and connections (ratios of the medians; the JSON also has the median of the per-round
// ratios). Issue 33's HIT targets are checked and printed. Prints a table and writes
// bench/results/cache-hits.json and its chart, bench/results/cache-hits.svg (bench/chart.ts).
// With wrk, every server runs pinned to one CPU and this process with wrk to another
// (bench/cpu-pin.ts; --no-pin: as the scheduler places them, every figure before 2026-11-29 18:50).
//   node bin/run-ts.js bench/cache-hits.ts [--seconds 1] [--rounds 5] [--concurrency 16,64] [--upstream-key-limit 60] [--no-wrk] [--no-pin]
//        [--log-level warn|info]  (warn by default: no request log line; info is the gateway's default)
// Redis: REDIS_URL, else redis://127.0.0.1:6379; a unique key prefix, and only the keys under
// it are deleted at the end.
// Must never: FLUSHDB/FLUSHALL or touch Redis keys outside its own prefix.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { cacheHitsSvg } from './chart.ts';
import { type Child, chosenGatewayNode, startCpgw, stopCpgw } from './cpgw-process.ts';
import { pinBench, pinningJson, pinningText, pinProcess } from './cpu-pin.ts';
import { HIT_BIC as BIC, HIT_CELLS, type HitCell, HIT_INN as INN } from './hit-cells.ts';
import { ceilingCheck } from './machine-check.ts';
import { type NginxCache, startNginxCache } from './nginx-cache.ts';
import { writeBenchGatewayConfig } from './pass-through-rig.ts';
import { captureSteady, differences, type RawAnswer, rawGet, startCeiling } from './raw-http.ts';
import { runWrk, wrkAvailable } from './wrk-load.ts';

const argValue = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const SECONDS = Number(argValue('--seconds') ?? 1);
/** Default 5: one round per place in the rotation of the 5 servers. */
const ROUNDS = Number(argValue('--rounds') ?? 5);
const WARMUP_SECONDS = 0.3;
const CONCURRENCY = (argValue('--concurrency') ?? '16,64').split(',').map(Number);
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = `cpgw-bench-${randomBytes(4).toString('hex')}:`;
const UPSTREAM_KEY = 'bench-upstream-key';
/** The upstream's per-minute key limit the gateways see (the spec's 60 unless told). */
const UPSTREAM_KEY_LIMIT = Number(argValue('--upstream-key-limit') ?? 60);
const USE_WRK = !process.argv.includes('--no-wrk') && wrkAvailable();
/**
 * The gateways' log level: warn (no request log line; every figure before 2026-11-29) unless told,
 * e.g. `--log-level info`, the gateway's default, which writes one line per HIT.
 */
const LOG_LEVEL = argValue('--log-level') ?? 'warn';
/** Each server on a core of its own, wrk and this process on the other (bench/cpu-pin.ts), unless --no-pin. */
const PIN = !process.argv.includes('--no-pin');

type ServerName =
  | 'emulator (direct)'
  | 'nginx proxy_cache'
  | 'node:http ceiling'
  | 'gateway, memory'
  | 'gateway, redis';
const CEILING: ServerName = 'node:http ceiling';
/** Issue 33: every HIT cell >= 0.9x the ceiling; Redis >= 0.95x memory; p99 at 16 connections <= 2 ms. */
const TARGET_VS_CEILING = 0.9;
const TARGET_REDIS_VS_MEMORY = 0.95;
const TARGET_P99_MS = 2;
const TARGET_P99_CONCURRENCY = 16;

/** A cell's request and the Content-Encoding the gateway must answer with (hit-cells.ts). */
type Target = HitCell;

const TARGETS: Target[] = Object.values(HIT_CELLS);

interface Server {
  name: ServerName;
  url: string;
  token: string;
  /** The process answering (CPU accounting). */
  pid(): number | undefined;
}

/** CPU ms (user + system) a process has used so far, from /proc (Linux); null elsewhere. */
function cpuMsOf(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in USER_HZ (100)
  } catch {
    return null;
  }
}

async function redisCpuMs(redis: Redis | null): Promise<number | null> {
  if (!redis) return null;
  const info = await redis.info('cpu');
  const sec = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? Number.NaN);
  return (sec('used_cpu_user') + sec('used_cpu_sys')) * 1000;
}

interface Check {
  ok: boolean;
  why?: string;
}

interface Round {
  requests: number;
  errors: Record<string, number>;
  req_per_s: number;
  p50_ms: number;
  p99_ms: number;
  body_bytes: number;
  /** CPU the answering process used per request (ms). */
  server_cpu_ms_per_req: number | null;
  /** CPU of the whole Redis server per request (ms; anything else using it counts too). */
  redis_cpu_ms_per_req: number | null;
  /** Cores this client process kept busy (near 1.0: the client may be the limit). */
  client_cores: number;
}

interface Cell extends Round {
  target: string;
  server: ServerName;
  concurrency: number;
  /** req/s over nginx proxy_cache's for the same target and concurrency in this run (null without nginx). */
  vs_nginx: number | null;
  /** req/s over the node:http ceiling's (same target and concurrency, this run): ratio of the medians. */
  vs_ceiling: number | null;
  /** The median over the rounds of this round's req/s over the ceiling's in the same round. */
  vs_ceiling_paired: number | null;
  /** Redis gateway only: req/s over the memory gateway's (ratio of the medians). */
  vs_memory: number | null;
  /** Redis gateway only: the median over the rounds of the per-round ratio to the memory gateway. */
  vs_memory_paired: number | null;
  /** Requests and errors over all rounds; every other figure is its median over the rounds. */
  rounds: Array<Pick<Round, 'req_per_s' | 'p50_ms' | 'p99_ms' | 'client_cores'>>;
}

const quantile = (sorted: number[], q: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : Number.NaN;
const round = (x: number, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits;

function verdict(server: Server, target: Target, status: number, headers: Record<string, unknown>): Check {
  if (status !== 200) return { ok: false, why: `status ${status}` };
  const encoding = (headers['content-encoding'] as string | undefined) ?? null;
  if (server.name === 'emulator (direct)') {
    const charged = headers['x-charged-minor'];
    return charged === undefined || charged === '0' ? { ok: true } : { ok: false, why: `charged ${charged}` };
  }
  if (server.name === 'nginx proxy_cache') {
    if (headers['x-cache'] !== 'HIT') return { ok: false, why: `x-cache ${String(headers['x-cache'])}` };
    return encoding === target.encoding ? { ok: true } : { ok: false, why: `content-encoding ${encoding}` };
  }
  if (headers['x-cache'] !== 'HIT') return { ok: false, why: `x-cache ${String(headers['x-cache'])}` };
  if (encoding !== target.encoding) return { ok: false, why: `content-encoding ${encoding}` };
  return { ok: true };
}

/** Closed loop: `concurrency` workers each send the next request when the last one is fully read. */
async function load(
  pool: Pool,
  server: Server,
  target: Target,
  concurrency: number,
  seconds: number,
  record: boolean,
): Promise<{ latencies: number[]; elapsedMs: number; errors: Record<string, number>; bytes: number }> {
  const latencies: number[] = [];
  const errors: Record<string, number> = {};
  let bytes = 0;
  const headers = { authorization: `Bearer ${server.token}`, 'accept-encoding': target.acceptEncoding };
  const began = performance.now();
  const deadline = began + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        let check: Check;
        let size = 0;
        try {
          const res = await pool.request({ method: 'GET', path: target.path, headers });
          for await (const chunk of res.body) size += (chunk as Buffer).length;
          check = verdict(server, target, res.statusCode, res.headers);
        } catch (err) {
          check = { ok: false, why: (err as Error).message };
        }
        if (!record) continue;
        latencies.push(performance.now() - t0);
        bytes = size;
        if (!check.ok) errors[check.why!] = (errors[check.why!] ?? 0) + 1;
      }
    }),
  );
  return { latencies, elapsedMs: performance.now() - began, errors, bytes };
}

async function measure(
  server: Server,
  target: Target,
  concurrency: number,
  redis: Redis | null,
): Promise<Round> {
  const pool = new Pool(server.url, { connections: concurrency, pipelining: 1 });
  try {
    if (USE_WRK) return await measureWrk(pool, server, target, concurrency, redis);
    await load(pool, server, target, concurrency, WARMUP_SECONDS, false);
    const pid = server.pid();
    const withRedis = server.name === 'gateway, redis';
    const cpu0 = cpuMsOf(pid);
    const redis0 = withRedis ? await redisCpuMs(redis) : null;
    const client0 = process.cpuUsage();
    const run = await load(pool, server, target, concurrency, SECONDS, true);
    const client = process.cpuUsage(client0);
    const cpu1 = cpuMsOf(pid);
    const redis1 = withRedis ? await redisCpuMs(redis) : null;
    const sorted = [...run.latencies].sort((a, b) => a - b);
    const n = sorted.length;
    return {
      requests: n,
      errors: run.errors,
      req_per_s: Math.round((n / run.elapsedMs) * 1000),
      p50_ms: round(quantile(sorted, 0.5)),
      p99_ms: round(quantile(sorted, 0.99)),
      body_bytes: run.bytes,
      server_cpu_ms_per_req: cpu0 !== null && cpu1 !== null && n ? round((cpu1 - cpu0) / n, 4) : null,
      redis_cpu_ms_per_req: redis0 !== null && redis1 !== null && n ? round((redis1 - redis0) / n, 4) : null,
      client_cores: round((client.user + client.system) / 1000 / run.elapsedMs, 2),
    };
  } finally {
    await pool.close();
  }
}

/** One cell with wrk: a few requests from here check the answers (status, X-Cache, coding), then wrk loads. */
async function measureWrk(
  pool: Pool,
  server: Server,
  target: Target,
  concurrency: number,
  redis: Redis | null,
): Promise<Round> {
  const errors: Record<string, number> = {};
  const headers = { authorization: `Bearer ${server.token}`, 'accept-encoding': target.acceptEncoding };
  for (let i = 0; i < 3; i++) {
    let check: Check;
    try {
      const res = await pool.request({ method: 'GET', path: target.path, headers });
      await res.body.arrayBuffer();
      check = verdict(server, target, res.statusCode, res.headers);
    } catch (err) {
      check = { ok: false, why: `${server.name}: ${(err as Error).message}` };
      console.error(check.why);
    }
    if (!check.ok && i > 0) errors[check.why!] = (errors[check.why!] ?? 0) + 1; // the first may be nginx's MISS
  }
  const pid = server.pid();
  const withRedis = server.name === 'gateway, redis';
  const cpu0 = cpuMsOf(pid);
  const redis0 = withRedis ? await redisCpuMs(redis) : null;
  const run = await runWrk(`${server.url}${target.path}`, headers, concurrency, SECONDS);
  const cpu1 = cpuMsOf(pid);
  const redis1 = withRedis ? await redisCpuMs(redis) : null;
  if (run.non2xx) errors['non-2xx (wrk)'] = run.non2xx;
  if (run.socket_errors) errors['socket errors (wrk)'] = run.socket_errors;
  const n = run.requests;
  return {
    requests: n,
    errors,
    req_per_s: run.req_per_s,
    p50_ms: round(run.p50_ms),
    p99_ms: round(run.p99_ms),
    body_bytes: Math.round(run.body_bytes_per_s / Math.max(1, run.req_per_s)),
    server_cpu_ms_per_req: cpu0 !== null && cpu1 !== null && n ? round((cpu1 - cpu0) / n, 4) : null,
    redis_cpu_ms_per_req: redis0 !== null && redis1 !== null && n ? round((redis1 - redis0) / n, 4) : null,
    client_cores: Number.NaN,
  };
}

/** The median of some numbers (the lower middle one for an even count: never flattering). */
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

function medianOrNull(values: Array<number | null>): number | null {
  const known = values.filter((v): v is number => v !== null);
  return known.length ? median(known) : null;
}

/** Rounds of one target x concurrency x server into a cell: totals, and each figure's median over the rounds. */
function cellOf(target: Target, server: ServerName, concurrency: number, rounds: Round[]): Cell {
  const errors: Record<string, number> = {};
  for (const r of rounds)
    for (const [why, count] of Object.entries(r.errors)) errors[why] = (errors[why] ?? 0) + count;
  return {
    target: target.name,
    server,
    concurrency,
    vs_nginx: null,
    vs_ceiling: null,
    vs_ceiling_paired: null,
    vs_memory: null,
    vs_memory_paired: null,
    requests: rounds.reduce((sum, r) => sum + r.requests, 0),
    errors,
    req_per_s: median(rounds.map((r) => r.req_per_s)),
    p50_ms: median(rounds.map((r) => r.p50_ms)),
    p99_ms: median(rounds.map((r) => r.p99_ms)),
    body_bytes: rounds.at(-1)!.body_bytes,
    server_cpu_ms_per_req: medianOrNull(rounds.map((r) => r.server_cpu_ms_per_req)),
    redis_cpu_ms_per_req: medianOrNull(rounds.map((r) => r.redis_cpu_ms_per_req)),
    client_cores: median(rounds.map((r) => r.client_cores)),
    rounds: rounds.map(({ req_per_s, p50_ms, p99_ms, client_cores }) => ({
      req_per_s,
      p50_ms,
      p99_ms,
      client_cores,
    })),
  };
}

const errorCount = (c: Pick<Round, 'errors'>) => Object.values(c.errors).reduce((sum, x) => sum + x, 0);

/** One line of the printed table: two text columns, then right-aligned figures. */
function row(columns: Array<string | number>): string {
  const widths = [18, 18, 4, 7, 30, 7, 7, 6, 7, 15, 6, 8, 7, 6];
  return columns
    .map((c, i) => (i < 2 ? String(c).padEnd(widths[i]!) : String(c).padStart(widths[i] ?? 8)))
    .join(' ');
}

/** One request, fully read: status, X-Cache, charge, time (warm-up and checks). */
async function once(
  server: Server,
  path: string,
): Promise<{ status: number; xCache: string | null; charged: string | null; ms: number }> {
  const t0 = performance.now();
  const pool = new Pool(server.url, { connections: 1 });
  try {
    const res = await pool.request({
      method: 'GET',
      path,
      headers: { authorization: `Bearer ${server.token}` },
    });
    await res.body.arrayBuffer();
    const h = res.headers;
    return {
      status: res.statusCode,
      xCache: (h['x-cache'] as string | undefined) ?? null,
      charged: (h['x-charged-minor'] as string | undefined) ?? null,
      ms: round(performance.now() - t0),
    };
  } finally {
    await pool.close();
  }
}

function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/** Deletes the keys under PREFIX (and only those); returns how many were deleted and how many are left. */
async function deleteOwnKeys(redis: Redis): Promise<{ deleted: number; left: number }> {
  let deleted = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${globEscape(PREFIX)}*`, 'COUNT', 1000);
    cursor = next;
    const own = keys.filter((k) => k.startsWith(PREFIX));
    if (own.length) deleted += await redis.unlink(...own);
  } while (cursor !== '0');
  const [, rest] = await redis.scan('0', 'MATCH', `${globEscape(PREFIX)}*`, 'COUNT', 100_000);
  return { deleted, left: rest.length };
}

async function connectRedis(): Promise<Redis | null> {
  const redis = new Redis(REDIS_URL, {
    maxRetriesPerRequest: 1,
    lazyConnect: true,
    retryStrategy: () => null,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    await redis.ping();
    return redis;
  } catch (err) {
    console.error(
      `Redis at ${redactUrl(REDIS_URL)} unavailable (${(err as Error).message}); Redis rows skipped`,
    );
    redis.disconnect();
    return null;
  }
}

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.hostname}:${u.port || '6379'}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return '(unparsable REDIS_URL)';
  }
}

// ---- run ----
const began = Date.now();
const LOAD_AT_START = round(loadavg()[0] ?? 0, 2);
const redis = await connectRedis();
const dir = await mkdtemp(join(tmpdir(), 'cpgw-bench-'));
const children: Child[] = [];
let pinning: ReturnType<typeof pinBench> = null;
let nginx: NginxCache | null = null;
const cells: Cell[] = [];
const warmup: Record<string, unknown> = {};
/** Per target: what the ceiling serves (the memory gateway's HIT) and how the others' bytes compare. */
const ceilingCapture: Array<Record<string, unknown>> = [];
let cleanup: { deleted: number; left: number } | null = null;
try {
  // Two emulators from the same code and data: the gateways' upstream keeps the spec's key limit
  // (60/min; the gateway follows the upstream's X-RateLimit-Limit, and its X-RateLimit-*
  // headroom work on every answer grows with that limit), the twin answers the direct reads
  // with limits high enough never to refuse one.
  // Each gateway has its own upstream account (coverage windows are per account, as upstream):
  // on a shared one the memory gateway's first dossier read opened the window for both, and the
  // Redis gateway, answered "charged 0" without seeing a charge, never learned it and served its
  // dossier HITs as reads outside a window (no X-Window-Expires, a saving counted per HIT).
  const emulatorArgs = ['emulator', '--port', '0', '--api-key', `${UPSTREAM_KEY};name=bench`];
  const gatewayKeys = { memory: `${UPSTREAM_KEY}-memory`, redis: `${UPSTREAM_KEY}-redis` };
  const emu = await startCpgw(
    [
      'emulator',
      '--port',
      '0',
      '--api-key',
      `${gatewayKeys.memory};name=memory;account=1`,
      '--api-key',
      `${gatewayKeys.redis};name=redis;account=2`,
      '--key-limit',
      String(UPSTREAM_KEY_LIMIT),
    ],
    {},
    /http:\/\/127\.0\.0\.1:\d+/,
  );
  children.push(emu.child);
  const emuUrl = emu.match[0];
  const twin = await startCpgw(
    [
      ...emulatorArgs,
      '--key-limit',
      '100000000',
      '--suggest-limit',
      '100000000',
      '--search-limit',
      '100000000',
    ],
    {},
    /http:\/\/127\.0\.0\.1:\d+/,
  );
  children.push(twin.child);
  const { configFile, token } = await writeBenchGatewayConfig({ dir });
  const gatewayEnv = {
    CPGW_CONFIG: configFile,
    CPGW_PORT: '0',
    CPGW_UPSTREAM_URL: emuUrl,
    CPGW_LOG_LEVEL: LOG_LEVEL,
  };
  const listening = /listening on (http:\/\/[^\s)]+)/;
  const servers: Server[] = [];
  const memory = await startCpgw(
    ['start'],
    { ...gatewayEnv, CPGW_UPSTREAM_API_KEY: gatewayKeys.memory },
    listening,
  );
  children.push(memory.child);
  servers.push({
    name: 'gateway, memory',
    url: memory.match[1]!,
    token,
    pid: () => memory.child.process.pid,
  });
  if (redis) {
    const shared = await startCpgw(
      ['start'],
      {
        ...gatewayEnv,
        CPGW_UPSTREAM_API_KEY: gatewayKeys.redis,
        CPGW_REDIS_URL: REDIS_URL,
        CPGW_STORE_PREFIX: PREFIX,
      },
      listening,
    );
    children.push(shared.child);
    servers.push({
      name: 'gateway, redis',
      url: shared.match[1]!,
      token,
      pid: () => shared.child.process.pid,
    });
  }
  // Warm each gateway's cache: one miss per cached answer (the dossier's first read pays and
  // opens the account's window, so the direct dossier reads below are free), then one HIT.
  for (const server of servers) {
    for (const path of [`/v1/companies/${INN}`, `/v1/banks/${BIC}`]) {
      const miss = await once(server, path);
      const hit = await once(server, path);
      warmup[`${server.name} ${path}`] = { miss, hit };
      if (miss.status !== 200 || miss.xCache !== 'MISS' || hit.xCache !== 'HIT')
        throw new Error(`warm-up of ${path} on ${server.name}: ${JSON.stringify({ miss, hit })}`);
      // Each gateway pays its own first dossier read (its own account), so it knows the window.
      if (path.startsWith('/v1/companies/') && (miss.charged === null || miss.charged === '0'))
        throw new Error(`warm-up: ${server.name}'s first dossier read was not charged (a shared account?)`);
    }
  }
  const direct: Server = {
    name: 'emulator (direct)',
    url: twin.match[0],
    token: UPSTREAM_KEY,
    pid: () => twin.child.process.pid,
  };
  // nginx proxy_cache in front of the twin (it sends the upstream key itself; the app token it
  // receives is ignored). Its first read per coding is a MISS that pays nothing (window open).
  nginx = await startNginxCache(join(dir, 'nginx'), twin.match[0], UPSTREAM_KEY);
  if (nginx) {
    const n = nginx;
    servers.unshift({ name: 'nginx proxy_cache', url: n.url, token, pid: () => n.workerPid() });
    for (const target of TARGETS) {
      const pool = new Pool(n.url, { connections: 1 });
      const res = await pool.request({
        method: 'GET',
        path: target.path,
        headers: { 'accept-encoding': target.acceptEncoding },
      });
      await res.body.arrayBuffer();
      await pool.close();
    }
  }
  const opening = await once(direct, `/v1/companies/${INN}`); // pays once and opens the twin's window
  const directCheck = await once(direct, `/v1/companies/${INN}`);
  warmup['emulator (direct)'] = { opening, check: directCheck };
  if (directCheck.status !== 200 || directCheck.charged !== '0')
    throw new Error(`direct dossier read not free: ${JSON.stringify(directCheck)}`);

  // The node:http ceiling. Each target's HIT as the memory gateway writes it in the steady state
  // (after the warm-up reads below: a coding the gateway has not stored yet is answered in
  // identity while it is made, and the first HITs after a MISS put their headers in another
  // order), read off the socket twice (what differs between the two answers, and Date, is
  // "varying": a request id, an age), then served by a bare node:http process; its answers must
  // be the gateway's bytes but for the varying values. The Redis gateway's answers are compared
  // too (reported, not required).
  const memoryServer = servers.find((x) => x.name === 'gateway, memory')!;
  const redisServer = servers.find((x) => x.name === 'gateway, redis');
  const answers: Array<{ target: Target; first: RawAnswer; varying: Set<string>; redis: RawAnswer | null }> =
    [];
  for (const target of TARGETS) {
    const headers = { authorization: `Bearer ${token}`, 'accept-encoding': target.acceptEncoding };
    const { first, varying } = await captureSteady(
      memoryServer.url,
      target.path,
      headers,
      target.encoding,
      redisServer ? [redisServer.url] : [],
    );
    // The Redis gateway's answer in the same warm state: its hit path needs the windows and the
    // rate headroom read from Redis within the last 200 ms, so a read after a pause takes the
    // full pipeline (other header order); three back to back, the last one kept.
    let redisAnswer: RawAnswer | null = null;
    if (redisServer)
      for (let i = 0; i < 3; i++) redisAnswer = await rawGet(redisServer.url, target.path, headers);
    answers.push({ target, first, varying, redis: redisAnswer });
  }
  const ceilingProcess = await startCeiling(
    dir,
    answers.map(({ target, first }) => ({
      path: target.path,
      acceptEncoding: target.acceptEncoding,
      answer: first,
    })),
  );
  children.push(ceilingProcess.child);
  const ceiling: Server = {
    name: CEILING,
    url: ceilingProcess.url,
    token,
    pid: () => ceilingProcess.child.process.pid,
  };
  servers.splice(nginx ? 1 : 0, 0, ceiling);
  for (const { target, first, varying, redis: redisAnswer } of answers) {
    const headers = { authorization: `Bearer ${token}`, 'accept-encoding': target.acceptEncoding };
    const fromCeiling = await rawGet(ceiling.url, target.path, headers);
    const wire = differences(first, fromCeiling, varying);
    if (wire.length) throw new Error(`the ceiling's ${target.name} is not the gateway's: ${wire.join('; ')}`);
    const redisWire = redisAnswer ? differences(first, redisAnswer, varying) : null;
    ceilingCapture.push({
      target: target.name,
      status: first.status,
      headers: first.headers.map(([k, v]) =>
        varying.has(k.toLowerCase()) ? `${k}: (varies)` : `${k}: ${v}`,
      ),
      body_bytes: first.body.length,
      wire_bytes:
        `HTTP/1.1 ${first.status} ${first.statusMessage}\r\n\r\n`.length +
        first.headers.reduce((n, [k, v]) => n + k.length + v.length + 4, 0) +
        first.body.length,
      ceiling_differences: wire,
      redis_gateway_differences: redisWire,
    });
  }

  // Every server started: each is pinned to the server CPU (only one is loaded at a time), this
  // process and the wrk it spawns from here on to the other.
  pinning = pinBench(PIN && USE_WRK);
  if (pinning)
    for (const server of [direct, ...servers]) {
      const pid = server.pid();
      if (pid === undefined) throw new Error(`${server.name}: no process to pin`);
      pinProcess(pid, pinning.serverCpu);
    }
  console.log(
    `cache-hits: ${cpus().length} CPUs, ${pinningText(pinning)}, node ${process.version}, load ${loadavg()[0]!.toFixed(2)}; gateways at log level ${LOG_LEVEL}${LOG_LEVEL === 'warn' ? ' (no request log line; the default, info, writes one per HIT)' : ''}; ${ROUNDS} rounds of ${SECONDS} s per cell (after ${WARMUP_SECONDS} s warm-up); req/s, p50, p99, CPU: medians over the rounds; CPU ms/req: the server process (+ the Redis server); client: cores this client used`,
  );
  console.log(
    row([
      'target',
      'server',
      'conc',
      'req/s',
      'req/s per round',
      'p50 ms',
      'p99 ms',
      'errors',
      'body B',
      'CPU ms/req',
      'client',
      'vs nginx',
      'vs ceil',
      'vs mem',
    ]),
  );
  // One unrecorded pass over every server and target first (JIT, heap sizing, connections).
  for (const server of [direct, ...servers])
    for (const target of TARGETS) await measure(server, target, CONCURRENCY[0]!, null);
  // Every round takes each cell once; a cell's servers run in an order rotated by one place every
  // round (round r starts at the r-th server), so over as many rounds as servers each one takes
  // each place, and a disturbance on this shared machine does not always land on the same one.
  // Each cell reports the median of its rounds.
  const plan: Array<{ target: Target; concurrency: number }> = [];
  for (const target of TARGETS) for (const concurrency of CONCURRENCY) plan.push({ target, concurrency });
  const rounds = new Map<string, Round[]>();
  const keyOf = (t: Target, c: number, s: ServerName) => `${t.name}|${c}|${s}`;
  const all = [direct, ...servers];
  for (let r = 0; r < ROUNDS; r++) {
    const shift = r % all.length;
    const order = [...all.slice(shift), ...all.slice(0, shift)];
    console.error(`round ${r + 1}/${ROUNDS}: ${order.map((x) => x.name).join(' -> ')}`);
    for (const { target, concurrency } of plan) {
      for (const server of order) {
        const key = keyOf(target, concurrency, server.name);
        rounds.set(key, [...(rounds.get(key) ?? []), await measure(server, target, concurrency, redis)]);
      }
    }
  }
  /** Median over the rounds of a's req/s over b's in the same round. */
  const paired = (a: Round[] | undefined, b: Round[] | undefined) =>
    a && b ? round(median(a.map((r, i) => r.req_per_s / b[i]!.req_per_s)), 3) : null;
  for (const { target, concurrency } of plan) {
    for (const server of all) {
      const own = rounds.get(keyOf(target, concurrency, server.name))!;
      const cell = cellOf(target, server.name, concurrency, own);
      const nginxCell = cells.find(
        (c) => c.server === 'nginx proxy_cache' && c.target === cell.target && c.concurrency === concurrency,
      );
      if (nginxCell) cell.vs_nginx = round(cell.req_per_s / nginxCell.req_per_s, 2);
      const ceilingCell = cells.find(
        (c) => c.server === CEILING && c.target === cell.target && c.concurrency === concurrency,
      );
      if (ceilingCell && server.name !== CEILING) {
        cell.vs_ceiling = round(cell.req_per_s / ceilingCell.req_per_s, 3);
        cell.vs_ceiling_paired = paired(own, rounds.get(keyOf(target, concurrency, CEILING)));
      }
      const memoryCell = cells.find(
        (c) => c.server === 'gateway, memory' && c.target === cell.target && c.concurrency === concurrency,
      );
      if (memoryCell && server.name === 'gateway, redis') {
        cell.vs_memory = round(cell.req_per_s / memoryCell.req_per_s, 3);
        cell.vs_memory_paired = paired(own, rounds.get(keyOf(target, concurrency, 'gateway, memory')));
      }
      cells.push(cell);
      const cpu =
        cell.server_cpu_ms_per_req === null
          ? 'n/a'
          : `${cell.server_cpu_ms_per_req}${cell.redis_cpu_ms_per_req !== null ? ` +${cell.redis_cpu_ms_per_req}` : ''}`;
      console.log(
        row([
          cell.target,
          cell.server,
          concurrency,
          cell.req_per_s,
          cell.rounds.map((r) => r.req_per_s).join('/'),
          cell.p50_ms.toFixed(2),
          cell.p99_ms.toFixed(2),
          errorCount(cell),
          cell.body_bytes,
          cpu,
          Number.isNaN(cell.client_cores) ? 'wrk' : cell.client_cores.toFixed(2),
          cell.vs_nginx === null ? '' : `${cell.vs_nginx}x`,
          cell.vs_ceiling === null ? '' : `${cell.vs_ceiling.toFixed(2)}x`,
          cell.vs_memory === null ? '' : `${cell.vs_memory.toFixed(2)}x`,
        ]),
      );
      if (errorCount(cell)) console.log(`    errors: ${JSON.stringify(cell.errors)}`);
    }
  }
} finally {
  await nginx?.stop();
  for (const child of children.reverse()) await stopCpgw(child);
  await rm(dir, { recursive: true, force: true });
  if (redis) {
    cleanup = await deleteOwnKeys(redis);
    redis.disconnect();
  }
}

// Issue 33's HIT targets, cell by cell (gateway cells only).
interface TargetCheck {
  target: string;
  cells: number;
  missed: Array<{ cell: string; value: number | null }>;
}
const gatewayCells = cells.filter((c) => c.server === 'gateway, memory' || c.server === 'gateway, redis');
const label = (c: Cell) => `${c.target}, ${c.server.replace('gateway, ', '')}, ${c.concurrency}`;
const checkTarget = (
  name: string,
  of: Cell[],
  value: (c: Cell) => number | null,
  ok: (v: number) => boolean,
) => {
  const missed = of.filter((c) => {
    const v = value(c);
    return v === null || !ok(v);
  });
  return { target: name, cells: of.length, missed: missed.map((c) => ({ cell: label(c), value: value(c) })) };
};
const targets: TargetCheck[] = [
  checkTarget(
    `req/s >= ${TARGET_VS_CEILING}x the node:http ceiling (memory and Redis)`,
    gatewayCells,
    (c) => c.vs_ceiling,
    (v) => v >= TARGET_VS_CEILING,
  ),
  checkTarget(
    `Redis req/s >= ${TARGET_REDIS_VS_MEMORY}x memory`,
    cells.filter((c) => c.server === 'gateway, redis'),
    (c) => c.vs_memory,
    (v) => v >= TARGET_REDIS_VS_MEMORY,
  ),
  checkTarget(
    `p99 <= ${TARGET_P99_MS} ms at ${TARGET_P99_CONCURRENCY} connections`,
    gatewayCells.filter((c) => c.concurrency === TARGET_P99_CONCURRENCY),
    (c) => c.p99_ms,
    (v) => v <= TARGET_P99_MS,
  ),
];
if (cells.length) {
  console.log('issue 33 HIT targets (medians of the rounds):');
  for (const t of targets)
    console.log(
      `  ${t.target}: ${t.cells - t.missed.length} of ${t.cells} cells met${t.missed.length ? `; missed: ${t.missed.map((m) => `${m.cell} (${m.value})`).join(', ')}` : ''}`,
    );
}

const ceilingBank = cells.find(
  (c) => c.server === 'node:http ceiling' && c.target === 'bank record' && c.concurrency === 16,
);
const machineCheck = ceilingBank ? ceilingCheck(ceilingBank.req_per_s) : null;
if (machineCheck) console.log(machineCheck.text);

const report = {
  bench: 'cache-hits',
  at: new Date().toISOString(),
  machine: {
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model ?? null,
    node: process.version,
    // CPGW_BENCH_GATEWAY_NODE (cpgw-process.ts): what ran the gateways when not the bench's node.
    gateway_node: chosenGatewayNode(),
    log_level: LOG_LEVEL,
    // bench/cpu-pin.ts: the servers' CPU and the CPU of wrk and this client; null: not pinned.
    pinning: pinningJson(pinning),
    platform: `${process.platform} ${process.arch}`,
    loadavg_1m_at_start: LOAD_AT_START,
    loadavg_1m_at_end: round(loadavg()[0] ?? 0, 2),
  },
  setup:
    'gateway (memory store) and gateway (Redis store) each their own process (cpgw start, log level log_level: warn unless --log-level) in front of one emulator with the key limit upstream_key_limit_per_minute (the spec 60/min by default; the gateways follow it); direct reads go to a twin emulator process (same code, data, seed) with limits that never refuse; nginx proxy_cache (one worker) in front of the twin; the node:http ceiling (bench/node-ceiling-server.js, its own process, on the Node the gateways run on) answers each cell with the bytes the memory gateway sent for it (captured once, checked equal on the wire but for Date and the headers that changed between two gateway answers: see ceiling). Load: wrk, one thread (without wrk: this process, undici Pool, one connection per request in flight, closed loop). Every gateway answer checked: 200, X-Cache HIT, Content-Encoding as expected; direct answers: 200 and X-Charged-Minor 0 (inside the window the first direct read opened). Each round takes every cell once, its servers in an order rotated by one place every round; req_per_s, p50/p99 and CPU are medians over the rounds (the lower middle for an even count), rounds lists each. vs_ceiling / vs_nginx / vs_memory: ratios of the medians; *_paired: median of the per-round ratios. Redis runs on the same machine; redis_cpu_ms_per_req is the whole Redis server CPU.',
  settings: {
    upstream_key_limit_per_minute: UPSTREAM_KEY_LIMIT,
    rounds: ROUNDS,
    seconds_per_round: SECONDS,
    warmup_seconds_per_round: WARMUP_SECONDS,
    concurrency: CONCURRENCY,
    redis: redis ? redactUrl(REDIS_URL) : null,
    redis_prefix: PREFIX,
  },
  warmup,
  ceiling: ceilingCapture,
  targets,
  machine_check: machineCheck,
  redis_cleanup: cleanup,
  total_seconds: round((Date.now() - began) / 1000, 1),
  results: cells,
};
await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/cache-hits.json', `${JSON.stringify(report, null, 2)}\n`);
if (cleanup) console.log(`redis: deleted ${cleanup.deleted} keys under ${PREFIX}; ${cleanup.left} left`);
console.log(`written bench/results/cache-hits.json (${report.total_seconds} s)`);
await writeFile('bench/results/cache-hits.svg', cacheHitsSvg(report));
console.log('written bench/results/cache-hits.svg (bench/chart.ts)');
const failed = cells.filter((c) => errorCount(c) > 0).length;
if (failed) {
  console.error(`${failed} cells had errors (non-HIT or unexpected answers)`);
  process.exitCode = 1;
}
