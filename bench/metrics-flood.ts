// Benchmark: what a flood of /metrics scrapes costs a normal client (issue 31 "metrics behind
// their own door"). A demo `cpgw start` (its own process); a client reading one company (a cache
// HIT) sequentially on keep-alive; and, in a third process, 16 concurrent loops scraping /metrics
// as fast as they are answered. The client's blocks alternate between no flood and each flood
// (same stretches of machine time); prints p50/p99 per case and writes
// bench/results/metrics-flood.json.
//   node bin/run-ts.js bench/metrics-flood.ts [ROUNDS_PER_BLOCK] [BLOCKS]
// Cases: the main port without a token (401, the default door), the main port opened
// (CPGW_METRICS_ON_MAIN_PORT=true: renders shared for 1 s), the metrics listener, and for
// reference a flood of the cheapest answer there is on the main port (GET /livez): what any
// flood of 16 connections costs a client sharing the event loop, whatever it asks.
// Must never: leave a process behind (every child is stopped, SIGKILL after 10 s).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { Pool } from 'undici';
import { freePort } from '../test/helpers/redis.ts';
import { startCpgw } from './cpgw-process.ts';

const [ROUNDS = 300, BLOCKS = 6] = process.argv.slice(2).map(Number);
const FLOODERS = 16;
const INN = '7707083893';

interface Gateway {
  url: string;
  metricsUrl: string;
  token: string;
  stop(): Promise<void>;
}

async function gateway(extra: Record<string, string>): Promise<Gateway> {
  const metricsPort = await freePort();
  const { child, match } = await startCpgw(
    ['start'],
    {
      CPGW_PORT: '0',
      CPGW_METRICS_PORT: String(metricsPort),
      CPGW_LOG_REQUESTS: 'false',
      CPGW_LOG_LEVEL: 'warn',
      ...extra,
    },
    /Demo app token \(shown once\): (\S+)/,
  );
  const url = /Gateway: (http:\/\/\S+)/.exec(child.tail())![1]!;
  const token = match[1]!;
  const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  return {
    url,
    metricsUrl,
    token,
    stop: async () => {
      const exited = new Promise((r) => child.process.once('exit', r));
      child.process.kill('SIGTERM');
      const kill = setTimeout(() => child.process.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(kill);
    },
  };
}

function flooder(target: string): ChildProcess {
  const script = `
    const target = ${JSON.stringify(target)};
    let stop = false;
    process.on('SIGTERM', () => { stop = true; setTimeout(() => process.exit(0), 200); });
    for (let i = 0; i < ${FLOODERS}; i++)
      (async () => { while (!stop) { try { const r = await fetch(target); await r.arrayBuffer(); } catch {} } })();
  `;
  return spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
}

async function block(pool: Pool, token: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    const res = await pool.request({
      path: `/v1/companies/${INN}`,
      method: 'GET',
      headers: { authorization: `Bearer ${token}` },
    });
    await res.body.arrayBuffer();
    if (res.statusCode !== 200) throw new Error(`client read: ${res.statusCode}`);
    out.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return out;
}

const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
};

const results: Record<string, { p50Ms: number; p99Ms: number; n: number }> = {};
for (const [name, env, target] of [
  ['main port, no token (401)', {}, 'main'],
  ['main port, onMainPort=true (renders shared 1 s)', { CPGW_METRICS_ON_MAIN_PORT: 'true' }, 'main'],
  ['metrics listener', {}, 'listener'],
  ['reference: main port, GET /livez', {}, 'livez'],
] as const) {
  const gw = await gateway(env);
  const pool = new Pool(gw.url, { connections: 1 });
  try {
    await block(pool, gw.token, 200); // warm: the first read fills the cache
    const quiet: number[] = [];
    const flooded: number[] = [];
    for (let b = 0; b < BLOCKS; b++) {
      quiet.push(...(await block(pool, gw.token, ROUNDS)));
      const f = flooder(
        target === 'main' ? `${gw.url}/metrics` : target === 'livez' ? `${gw.url}/livez` : gw.metricsUrl,
      );
      await new Promise((r) => setTimeout(r, 300)); // the flood under way
      flooded.push(...(await block(pool, gw.token, ROUNDS)));
      const gone = new Promise((r) => f.once('exit', r));
      f.kill('SIGTERM');
      await gone;
    }
    results[`${name}: quiet`] = { p50Ms: q(quiet, 0.5), p99Ms: q(quiet, 0.99), n: quiet.length };
    results[`${name}: flooded`] = { p50Ms: q(flooded, 0.5), p99Ms: q(flooded, 0.99), n: flooded.length };
  } finally {
    await pool.close();
    await gw.stop();
  }
}

for (const [k, v] of Object.entries(results))
  console.log(`${k.padEnd(62)} p50 ${v.p50Ms.toFixed(2)} ms  p99 ${v.p99Ms.toFixed(2)} ms  (n=${v.n})`);
await mkdir('bench/results', { recursive: true });
await writeFile(
  'bench/results/metrics-flood.json',
  `${JSON.stringify({ at: new Date().toISOString(), flooders: FLOODERS, results }, null, 2)}\n`,
);
