// Benchmark: cached dossier reads from the emulator over real HTTP with keep-alive.
// Starts the emulator in-process on port 0, warms one dossier (the first read charges and
// opens the window), then times N sequential reads. Prints median/p99/mean and writes
// bench/results/emulator-dossier.json. Run: node bin/run-ts.js bench/emulator-dossier.ts [N]
import { mkdir, writeFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { createEmulator } from '../src/emulator/emulator-server.ts';

const N = Number(process.argv[2] ?? 5000);
const WARMUP = 500;
const INN = '7707083893';
const KEY = 'bench-key';

const emulator = await createEmulator({ apiKeys: [KEY], limits: { keyPerMinute: 10_000_000 } });
const pool = new Pool(emulator.url, { connections: 1, pipelining: 1 });
const headers = { authorization: `Bearer ${KEY}` };

async function read(): Promise<{ ms: number; bytes: number; charged: string }> {
  const start = performance.now();
  const response = await pool.request({ method: 'GET', path: `/v1/companies/${INN}`, headers });
  if (response.statusCode !== 200)
    throw new Error(`status ${response.statusCode}: ${await response.body.text()}`);
  let bytes = 0;
  for await (const chunk of response.body) bytes += (chunk as Buffer).length;
  const ms = performance.now() - start;
  return { ms, bytes, charged: String(response.headers['x-charged-minor']) };
}

const first = await read();
for (let i = 0; i < WARMUP; i++) await read();
const samples: number[] = [];
let bytes = 0;
for (let i = 0; i < N; i++) {
  const r = await read();
  if (r.charged !== '0') throw new Error(`read ${i} was charged ${r.charged}`);
  samples.push(r.ms);
  bytes = r.bytes;
}
await pool.close();
await emulator.close();

samples.sort((a, b) => a - b);
const pick = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
const round = (ms: number) => Math.round(ms * 1000) / 1000;
const result = {
  benchmark: 'emulator-dossier',
  description:
    'Sequential cached dossier reads over HTTP keep-alive (undici Pool, 1 connection; body streamed and counted), inside the open window',
  date: new Date().toISOString(),
  node: process.version,
  n: N,
  warmup: WARMUP,
  body_bytes: bytes,
  first_read_ms: round(first.ms),
  first_read_charged_minor: Number(first.charged),
  median_ms: round(pick(0.5)),
  p90_ms: round(pick(0.9)),
  p99_ms: round(pick(0.99)),
  max_ms: round(samples.at(-1)!),
  mean_ms: round(samples.reduce((s, x) => s + x, 0) / samples.length),
  target_ms: 5,
};
result.description += `; target: well under ${result.target_ms} ms`;
await mkdir('bench/results', { recursive: true });
await writeFile('bench/results/emulator-dossier.json', `${JSON.stringify(result, null, 2)}\n`);
console.log(
  `emulator-dossier: n=${N} body=${(bytes / 1024).toFixed(1)} KiB  median ${result.median_ms} ms  ` +
    `p99 ${result.p99_ms} ms  mean ${result.mean_ms} ms  (first read ${result.first_read_ms} ms, charged ${first.charged})`,
);
if (result.median_ms >= result.target_ms) process.exitCode = 1;
