// Benchmark: what OpenTelemetry tracing costs a cache HIT (issue 31 item 7). Demo `cpgw start`
// processes (their own processes, compiled dist/, request log off) answer one company from the
// cache while this process keeps CONCURRENCY requests in flight for SECONDS per block; the blocks
// of the cases alternate, ROUNDS times, so each case gets the same stretches of a shared machine.
// Cases:
//   - tracing off: no OTEL_EXPORTER_OTLP_* set (the SDK is never loaded; the fast hit path answers)
//   - tracing on: OTEL_EXPORTER_OTLP_ENDPOINT at a receiver in this process that takes and
//     drops the batches (each HIT, still written by the fast path, gets one SERVER span)
//   - baseline, tracing off: with --baseline DIR, the same from a built checkout of the commit
//     before tracing (git archive <base> | tar -x -C DIR; ln -s node_modules; node bin/build.js)
// Per case: HIT req/s, and the gateway process's CPU per request (utime+stime from /proc, so
// the client's and the receiver's CPU are not counted), median over the rounds; the summary
// pairs the cases round by round (median of per-round differences and ratios). Every answer
// must be 200 X-Cache: HIT. Prints a table and writes bench/results/tracing-cost.json.
//   node bin/run-ts.js bench/tracing-cost.ts [--seconds 1] [--rounds 10] [--concurrency 8] [--baseline DIR]
// Must never: leave a process behind (every child is stopped, SIGKILL after 10 s).
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { Pool } from 'undici';
import { type Child, startCpgw } from './cpgw-process.ts';

const argValue = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const SECONDS = Number(argValue('--seconds') ?? 1);
const ROUNDS = Number(argValue('--rounds') ?? 10);
const CONCURRENCY = Number(argValue('--concurrency') ?? 8);
const BASELINE = argValue('--baseline');
const INN = '7707083893';
/** Clock ticks per second of /proc/<pid>/stat (USER_HZ; 100 on Linux). */
const TICKS = 100;

// The OTLP receiver: takes every batch, counts its spans, answers 200.
let spansReceived = 0;
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: Array<{ scopeSpans: Array<{ spans: unknown[] }> }>;
      };
      for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spansReceived += ss.spans.length;
    } catch {}
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

interface Gateway {
  name: string;
  url: string;
  token: string;
  child: Child;
  pool: Pool;
}

async function gateway(name: string, env: Record<string, string>, entry?: string): Promise<Gateway> {
  const { child, match } = await startCpgw(
    ['start'],
    { CPGW_PORT: '0', CPGW_LOG_REQUESTS: 'false', CPGW_LOG_LEVEL: 'warn', ...env },
    /Demo app token \(shown once\): (\S+)/,
    ...(entry ? [entry] : []),
  );
  const url = /Gateway: (http:\/\/\S+)/.exec(child.tail())![1]!;
  return { name, url, token: match[1]!, child, pool: new Pool(url, { connections: CONCURRENCY }) };
}

async function stop(g: Gateway): Promise<void> {
  await g.pool.close();
  const exited = new Promise((r) => g.child.process.once('exit', r));
  g.child.process.kill('SIGTERM');
  const kill = setTimeout(() => g.child.process.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(kill);
}

function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime, stime
}

async function read(g: Gateway): Promise<void> {
  const res = await g.pool.request({
    path: `/v1/companies/${INN}`,
    method: 'GET',
    headers: { authorization: `Bearer ${g.token}` },
  });
  await res.body.arrayBuffer();
  if (res.statusCode !== 200 || res.headers['x-cache'] !== 'HIT')
    throw new Error(`${g.name}: ${res.statusCode} X-Cache ${String(res.headers['x-cache'])}`);
}

/** CONCURRENCY loops of HIT reads for `seconds`: requests done and the gateway's CPU ticks. */
async function block(g: Gateway, seconds: number): Promise<{ requests: number; ticks: number; ms: number }> {
  const pid = g.child.process.pid!;
  const t0 = performance.now();
  const c0 = cpuTicks(pid);
  const until = t0 + seconds * 1000;
  let requests = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < until) {
        await read(g);
        requests++;
      }
    }),
  );
  return { requests, ticks: cpuTicks(pid) - c0, ms: performance.now() - t0 };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const gateways: Gateway[] = [];
try {
  if (BASELINE)
    gateways.push(await gateway('baseline (before tracing), off', {}, resolve(BASELINE, 'bin/cpgw.js')));
  gateways.push(await gateway('tracing off', {}));
  gateways.push(
    await gateway('tracing on (OTLP/HTTP, batched)', {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
      OTEL_BSP_SCHEDULE_DELAY: '1000',
    }),
  );
  for (const g of gateways) {
    await read(g).catch(() => {}); // the first read fills the cache (MISS)
    await block(g, 0.5); // warm: JIT, memos
  }
  const perCase = new Map<string, Array<{ rps: number; cpuUs: number }>>();
  for (let round = 0; round < ROUNDS; round++) {
    // Each round starts with another case (no case always first after a pause).
    for (let i = 0; i < gateways.length; i++) {
      const g = gateways[(round + i) % gateways.length]!;
      const r = await block(g, SECONDS);
      const cell = { rps: (r.requests * 1000) / r.ms, cpuUs: ((r.ticks / TICKS) * 1e6) / r.requests };
      perCase.set(g.name, [...(perCase.get(g.name) ?? []), cell]);
    }
  }
  const results: Record<string, { reqPerSec: number; cpuUsPerRequest: number; rounds: number }> = {};
  for (const [name, cells] of perCase) {
    results[name] = {
      reqPerSec: Math.round(median(cells.map((c) => c.rps))),
      cpuUsPerRequest: Math.round(median(cells.map((c) => c.cpuUs)) * 10) / 10,
      rounds: cells.length,
    };
  }
  // Let the last batch go out, so the span count covers the on case's requests.
  await new Promise((r) => setTimeout(r, 1500));
  // Paired per round (the cases of one round ran on the same stretch of a shared machine):
  // the median of the per-round differences and ratios, less moved by the machine's load.
  const cellsOf = (name: string) => perCase.get(name) ?? [];
  const paired = (a: string, b: string, f: (x: number, y: number) => number) =>
    median(cellsOf(a).map((cell, i) => f(cell.cpuUs, cellsOf(b)[i]!.cpuUs)));
  const round1 = (x: number) => Math.round(x * 10) / 10;
  const ON = 'tracing on (OTLP/HTTP, batched)';
  const OFF = 'tracing off';
  const BASE = 'baseline (before tracing), off';
  const summary = {
    addedCpuUsPerHitWithTracingOn: round1(paired(ON, OFF, (x, y) => x - y)),
    addedCpuPercentWithTracingOn: round1(paired(ON, OFF, (x, y) => (x / y - 1) * 100)),
    ...(BASELINE ? { offVsBaselineCpuPercent: round1(paired(OFF, BASE, (x, y) => (x / y - 1) * 100)) } : {}),
    spansReceived,
  };
  for (const [name, r] of Object.entries(results))
    console.log(
      `${name.padEnd(36)} ${String(r.reqPerSec).padStart(6)} req/s  ${r.cpuUsPerRequest.toFixed(1).padStart(6)} µs CPU/request (gateway process)`,
    );
  console.log(summary);
  await mkdir('bench/results', { recursive: true });
  await writeFile(
    'bench/results/tracing-cost.json',
    `${JSON.stringify(
      {
        at: new Date().toISOString(),
        node: process.version,
        cpus: cpus().length,
        loadavg: loadavg(),
        seconds: SECONDS,
        rounds: ROUNDS,
        concurrency: CONCURRENCY,
        results,
        summary,
        cells: Object.fromEntries(perCase),
      },
      null,
      2,
    )}\n`,
  );
} finally {
  for (const g of gateways) await stop(g).catch(() => {});
  receiver.close();
}
