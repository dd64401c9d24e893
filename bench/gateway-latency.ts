// Benchmark: latency the gateway adds over a direct call to the upstream, measured in the
// same run. The emulator and the gateway each run as their own process (`cpgw emulator`,
// `cpgw start`), as in production; this process is only the client. For each route it
// alternates direct and gateway calls (sequential, keep-alive) so both see the same machine
// state, then prints median/p99 of both and of the difference, and writes
// bench/results/gateway-latency.json. Run: node bin/run-ts.js bench/gateway-latency.ts [N]
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { newToken, tokenHash } from '../src/auth/tokens.ts';
import { startCpgw } from './cpgw-process.ts';

const N = Number(process.argv[2] ?? 2000);
const UPSTREAM_KEY = 'bench-upstream-key';

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const round = (x: number) => Math.round(x * 1000) / 1000;

const emu = await startCpgw(
  [
    'emulator',
    '--port',
    '0',
    '--api-key',
    `${UPSTREAM_KEY};name=bench`,
    '--key-limit',
    '100000000',
    '--suggest-limit',
    '100000000',
  ],
  {},
  /http:\/\/127\.0\.0\.1:\d+/,
);
const emuUrl = emu.match[0];
const token = newToken();
const dir = await mkdtemp(join(tmpdir(), 'cpgw-bench-'));
const configFile = join(dir, 'gateway.yaml');
await writeFile(
  configFile,
  // The emulator's limits are lifted, so the gateway's must be too (a ceiling over what the
  // upstream reports), or the bench would measure the rate queue instead of the gateway.
  `log:\n  level: warn\nlimits:\n  key: { limit: 1000000, burst: 1000000 }\n  suggest: { limit: 1000000, burst: 1000000 }\napps:\n  - name: bench\n    tokenHash: "${tokenHash(token)}"\n    scopes: [read:companies, read:checks]\n`,
);
const gw = await startCpgw(
  ['start'],
  { CPGW_CONFIG: configFile, CPGW_PORT: '0', CPGW_UPSTREAM_URL: emuUrl, CPGW_UPSTREAM_API_KEY: UPSTREAM_KEY },
  /listening on (http:\/\/[^\s)]+)/,
);
const gwUrl = gw.match[1]!;

const direct = new Pool(emuUrl, { connections: 1 });
const gateway = new Pool(gwUrl, { connections: 1 });

async function once(pool: Pool, path: string, auth: string): Promise<number> {
  const t0 = performance.now();
  // no-cache: every call goes upstream, so this measures the pass-through path, not the cache
  // (bench/cache-hits.ts measures hits).
  const res = await pool.request({
    method: 'GET',
    path,
    headers: { authorization: `Bearer ${auth}`, 'cache-control': 'no-cache' },
  });
  await res.body.arrayBuffer();
  const ms = performance.now() - t0;
  if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode}`);
  return ms;
}

const routes = [
  { name: 'dossier (inside its window, 100 KB)', path: '/v1/companies/7707083893' },
  { name: 'bank record', path: '/v1/banks/044525225' },
  { name: 'suggest', path: '/v1/suggest?q=%D0%A1%D0%B1%D0%B5%D1%80' },
];
const results: Record<string, unknown> = {};
for (const route of routes) {
  await once(gateway, route.path, token); // opens the window for the dossier (one charge)
  for (let i = 0; i < 200; i++) {
    await once(direct, route.path, UPSTREAM_KEY);
    await once(gateway, route.path, token);
  }
  const d: number[] = [];
  const g: number[] = [];
  for (let i = 0; i < N; i++) {
    d.push(await once(direct, route.path, UPSTREAM_KEY));
    g.push(await once(gateway, route.path, token));
  }
  const diff = g.map((x, i) => x - d[i]!).sort((a, b) => a - b);
  d.sort((a, b) => a - b);
  g.sort((a, b) => a - b);
  const row = {
    n: N,
    direct_ms: { p50: round(quantile(d, 0.5)), p99: round(quantile(d, 0.99)) },
    gateway_ms: { p50: round(quantile(g, 0.5)), p99: round(quantile(g, 0.99)) },
    added_ms: { p50: round(quantile(diff, 0.5)), p99: round(quantile(diff, 0.99)) },
  };
  results[route.name] = row;
  console.log(
    `${route.name.padEnd(38)} direct p50 ${row.direct_ms.p50} p99 ${row.direct_ms.p99} | gateway p50 ${row.gateway_ms.p50} p99 ${row.gateway_ms.p99} | added p50 ${row.added_ms.p50} p99 ${row.added_ms.p99} (ms)`,
  );
}
await direct.close();
await gateway.close();
gw.child.process.kill('SIGTERM');
emu.child.process.kill('SIGTERM');
await mkdir('bench/results', { recursive: true });
const report = {
  bench: 'gateway-latency',
  at: new Date().toISOString(),
  node: process.version,
  note: 'same run, alternating calls; gateway without cache (issue 5 not wired)',
  results,
};
await writeFile('bench/results/gateway-latency.json', `${JSON.stringify(report, null, 2)}\n`);
console.log('written bench/results/gateway-latency.json');
