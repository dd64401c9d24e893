// The proof: a real Prometheus (Debian's `prometheus` binary) scrapes two gateway replicas on a
// real Redis under traffic against the emulator; then EVERY dashboard panel's query runs through
// Prometheus's HTTP API and must return data, the spend sum must equal the emulator's ledger,
// and the savings sum must equal the savings this test computes from what it sent (README
// "Savings"). The soft threshold's notice reaches a local receiver exactly once.
// Without the binary the test is skipped loudly, unless REQUIRE_PROMETHEUS=1 (CI), where it fails.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns, personInns } from '../emulator/emulator-harness.ts';
import { concrete, dashboardQueries } from '../helpers/dashboards.ts';
import { type ReplicaHarness, startRedisReplicas } from '../helpers/gateway-harness.ts';
import { msToNextMoscowNoon } from '../helpers/moscow-time.ts';
import { freePort } from '../helpers/redis.ts';

function prometheusBinary(): string | null {
  try {
    execFileSync('prometheus', ['--version'], { stdio: 'ignore' });
    return 'prometheus';
  } catch {
    return null;
  }
}

const binary = prometheusBinary();
if (!binary) {
  const message =
    'metrics-prometheus: no `prometheus` binary (apt-get install prometheus); proof test SKIPPED';
  if (process.env.REQUIRE_PROMETHEUS === '1') throw new Error(`${message} but REQUIRE_PROMETHEUS=1`);
  console.warn(`\n*** ${message} ***\n`);
}

let r: ReplicaHarness | null = null;
let prom: ChildProcess | null = null;
let promUrl = '';
let dir = '';
let receiver: Server;
const notices: Array<{ text: string; budget: { app: string; period: string } }> = [];

async function query(
  expr: string,
): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await res.json()) as { status: string; error?: string; data: { result: never[] } };
  if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
  return body.data.result;
}
const scalarOf = async (expr: string) => Number((await query(expr))[0]?.value[1] ?? Number.NaN);

async function until(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check().catch(() => false)) return;
    await new Promise((res) => setTimeout(res, 250));
  }
  throw new Error(`timed out waiting for ${what}`);
}

beforeAll(async () => {
  if (!binary) return;
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      notices.push(JSON.parse(body));
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((res) => receiver.listen(0, '127.0.0.1', res));
  r = await startRedisReplicas({
    apps: [
      { name: 'alpha', budgets: { day: { limitMinor: 1_000_000, softMinor: 5_000 } } },
      { name: 'beta' },
      { name: 'gamma' },
      { name: 'capped', budgets: { day: { limitMinor: 100 } } },
      { name: 'nosearch', limits: { caps: { search: 0 } } },
    ],
    config: {
      notices: { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` },
      metrics: { sharedReadMinIntervalMs: 0 },
    },
  });
  if (!r) return;
  dir = mkdtempSync(join(tmpdir(), 'cpgw-prom-'));
  const targets = [r.h.gateway.url, r.second.url].map((u) => u.replace('http://', ''));
  writeFileSync(
    join(dir, 'prometheus.yml'),
    [
      'global:',
      '  scrape_interval: 1s',
      '  evaluation_interval: 1s',
      'scrape_configs:',
      '  - job_name: cpgw',
      `    static_configs: [{ targets: [${targets.map((t) => `'${t}'`).join(', ')}] }]`,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  prom = spawn(
    binary,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: 'ignore' },
  );
  await until(
    'Prometheus to scrape both replicas',
    async () => (await scalarOf('sum(up{job="cpgw"})')) === 2,
  );
}, 60_000);

afterAll(async () => {
  prom?.kill('SIGTERM');
  await r?.close();
  receiver?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const at = (url: string, app: string, path: string, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, { headers: { authorization: `Bearer ${r!.h.tokens[app]}`, ...headers } });

describe.skipIf(!binary)('metrics on a real Prometheus', () => {
  it('every dashboard query returns data; spend equals the ledger, savings equal the computed savings', async (ctx) => {
    if (!r) return ctx.skip();
    const { h, second } = r;
    const one = h.gateway.url;
    const two = second.url;
    const dossier = 9900;
    let expectedSaved = 0;
    const [a, b, c2, c3] = knownInns(4, 4100);
    // Daily budgets roll over at midnight in Moscow: move every clock to the next noon there, so
    // the traffic below (which advances 16 minutes) stays inside one day whenever the test runs.
    h.advance(msToNextMoscowNoon(h.gateway.clock.now()));

    // Cache: a HIT inside the window saves nothing; after the window closed, the dossier price.
    expect((await at(one, 'alpha', `/v1/companies/${a}`)).headers.get('x-charged-minor')).toBe('9900');
    expect((await at(two, 'beta', `/v1/companies/${a}`)).headers.get('x-cache')).toBe('HIT');
    h.advance(16 * 60_000);
    expect((await at(two, 'beta', `/v1/companies/${a}`)).headers.get('x-cache')).toBe('HIT');
    expectedSaved += dossier;

    // Coalescing across replicas: three reads of a new company while the first is in flight cost
    // one dossier; each of the other two would have paid the price straight at the upstream.
    await h.emu('/faults', { route: 'company', count: 1, latency_ms: 500 });
    const burst = await Promise.all([one, one, two].map((u) => at(u, 'gamma', `/v1/companies/${b}`)));
    expect(burst.map((res) => Number(res.headers.get('x-charged-minor'))).sort()).toEqual([0, 0, dossier]);
    expectedSaved += 2 * dossier;

    // Ordinary paid and free traffic, refusals and an upstream failure, on both replicas.
    const fresh = { 'cache-control': 'no-cache' };
    for (const [i, inn] of [c2, c3].entries()) await at(i ? two : one, 'alpha', `/v1/companies/${inn}`);
    await at(one, 'alpha', `/v1/persons/${personInns(1, 4200)[0]}`);
    await at(one, 'beta', '/v1/search?q=bank');
    await at(two, 'beta', '/v1/suggest?q=ban');
    expect((await at(one, 'capped', `/v1/companies/${a}`, fresh)).status).toBe(402);
    expect((await at(two, 'nosearch', '/v1/search?q=invest', { 'x-max-wait-ms': '0' })).status).toBe(429);
    await h.emu('/faults', { route: 'bank', count: 6, status: 502 });
    expect((await at(one, 'beta', '/v1/banks/044525225', fresh)).status).toBe(502);

    const ledger = await h.ledger();
    await until(
      'the spend sum to reach the ledger total',
      async () => (await scalarOf('sum(cpgw_spend_minor_total)')) === ledger.totals.amount_minor,
    );
    // Rates need two samples of every series born with the traffic.
    await new Promise((res) => setTimeout(res, 3_000));

    expect(await scalarOf('sum(cpgw_spend_minor_total)')).toBe(ledger.totals.amount_minor);
    for (const row of await query('sum by (kind) (cpgw_spend_minor_total)')) {
      const kind = row.metric.kind;
      const fromLedger = ledger.entries
        .filter((e) => e.kind === kind)
        .reduce((s, e) => s + e.amount_minor, 0);
      expect({ kind, minor: Number(row.value[1]) }).toEqual({ kind, minor: fromLedger });
    }
    expect(await scalarOf('sum(cpgw_saved_minor_total)')).toBe(expectedSaved);
    expect(await scalarOf('sum(cpgw_saved_minor_total{reason="cache"})')).toBe(dossier);
    expect(await scalarOf('sum(cpgw_saved_minor_total{reason="coalesced"})')).toBe(2 * dossier);
    // Shared gauges: both replicas report the same budget, so max is the truth and sum doubles it.
    const alphaDay = await query('cpgw_budget_spent_minor{app="alpha",period="day"}');
    expect(alphaDay).toHaveLength(2);
    expect(new Set(alphaDay.map((s) => s.value[1])).size).toBe(1);
    expect(Number(alphaDay[0]!.value[1])).toBe(await scalarOf('sum(cpgw_spend_minor_total{app="alpha"})'));

    const empty: string[] = [];
    for (const q of dashboardQueries()) {
      const rows = await query(concrete(q.expr, '1m'));
      if (rows.length === 0) empty.push(`${q.dashboard} / ${q.panel}: ${q.expr}`);
    }
    expect(empty).toEqual([]);

    // One soft-threshold notice for alpha's day budget, however many charges and replicas.
    await until('the soft-limit notice', async () => notices.length > 0);
    expect(notices).toHaveLength(1);
    expect(notices[0]!.budget).toMatchObject({ app: 'alpha', period: 'day' });
    expect(notices[0]!.text).toContain('alpha');
    expect(await scalarOf('sum(cpgw_budget_soft_crossings_total{app="alpha",period="day"})')).toBe(1);
  }, 90_000);
});
