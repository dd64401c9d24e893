// GET /metrics against a real emulator: spend equals the emulator's ledger, and each saving
// reason (README "Savings") adds what the same call sent straight to the upstream would have
// cost: a cache HIT inside an open window saves nothing, after the window closed the dossier
// price; a coalesced follower the leader's charge; a read that waited at the charge gate the
// price; a derived-key idempotent replay the price. Refusals are counted by reason, and the
// request log line carries the upstream request id, error code, reason, cache and queue wait.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns, personInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { sumOf } from '../helpers/prom-text.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    apps: [
      { name: 'alpha' },
      { name: 'beta' },
      { name: 'gamma' },
      { name: 'capped', budgets: { day: { limitMinor: 100 } } },
      { name: 'nosearch', limits: { caps: { search: 0 } } },
    ],
  });
});
afterAll(() => h.close());

/** Kopecks the test itself spent straight at the emulator (not through the gateway). */
let directMinor = 0;
const scrape = async () => (await fetch(`${h.gateway.url}/metrics`)).text();
const saved = async (app: string, reason: string) =>
  sumOf(await scrape(), 'cpgw_saved_minor_total', { app, reason });
const logLines = () => h.logs.map((l) => JSON.parse(l) as Record<string, unknown>);

describe('spend and savings', () => {
  it('cache HIT saves nothing inside the open window and the dossier price after it closed', async () => {
    const [inn] = knownInns(1, 3100);
    const first = await h.call('alpha', `/v1/companies/${inn}`);
    expect(first.headers.get('x-charged-minor')).toBe('9900');
    const inWindow = await h.call('beta', `/v1/companies/${inn}`);
    expect(inWindow.headers.get('x-cache')).toBe('HIT');
    expect(await saved('beta', 'cache')).toBe(0);
    h.advance(16 * 60_000);
    const after = await h.call('beta', `/v1/companies/${inn}`);
    expect(after.headers.get('x-cache')).toBe('HIT');
    expect(await saved('beta', 'cache')).toBe(9900);
    // The saving is real: the same read sent straight to the emulator now costs the price.
    const direct = await fetch(`${h.emulator.url}/v1/companies/${inn}`, {
      headers: { authorization: 'Bearer emulator-upstream-key-0f3c9a' },
    });
    expect(direct.headers.get('x-charged-minor')).toBe('9900');
    directMinor += 9900;
  });

  it('coalesced followers save the leader charge, a gate waiter the price, a person HIT the person price', async () => {
    const [b, c] = knownInns(2, 3200);
    await h.emu('/faults', { route: 'company', count: 1, latency_ms: 300 });
    const burst = await Promise.all([0, 1, 2].map(() => h.call('gamma', `/v1/companies/${b}`)));
    const followers = burst.filter((r) => r.headers.get('x-cache') === 'COALESCED').length;
    expect(followers).toBeGreaterThan(0);
    expect(await saved('gamma', 'coalesced')).toBe(followers * 9900);

    await h.emu('/faults', { route: 'company', count: 1, latency_ms: 400 });
    const leader = h.call('alpha', `/v1/companies/${c}`);
    await new Promise((r) => setTimeout(r, 100));
    const waiter = await h.call('beta', `/v1/companies/${c}/founders`);
    expect(waiter.headers.get('x-charged-minor')).toBe('0');
    expect((await leader).headers.get('x-charged-minor')).toBe('9900');
    expect(await saved('beta', 'window')).toBe(9900);

    const [p] = personInns(1, 3300);
    expect((await h.call('alpha', `/v1/persons/${p}`)).headers.get('x-charged-minor')).toBe('4900');
    expect((await h.call('beta', `/v1/persons/${p}`)).headers.get('x-cache')).toBe('HIT');
    expect(await saved('beta', 'cache')).toBe(9900 + 4900);
    const line = logLines().find((l) => l.savedReason === 'cache' && l.route === 'person');
    expect(line).toMatchObject({ app: 'beta', saved: 4900, charged: 0, cache: 'HIT' });
  });

  it('cpgw_spend_minor_total equals the emulator ledger, per kind', async () => {
    const text = await scrape();
    const ledger = await h.ledger();
    expect(sumOf(text, 'cpgw_spend_minor_total')).toBe(ledger.totals.amount_minor - directMinor);
    for (const kind of ['dossier', 'person']) {
      const expected =
        ledger.entries.filter((e) => e.kind === kind).reduce((a, e) => a + e.amount_minor, 0) -
        (kind === 'dossier' ? directMinor : 0);
      expect(sumOf(text, 'cpgw_spend_minor_total', { kind })).toBe(expected);
    }
    expect(sumOf(text, 'cpgw_upstream_requests_total', { route: 'company', status: '200' })).toBeGreaterThan(
      0,
    );
    expect(sumOf(text, 'cpgw_requests_total', { app: 'beta', cache: 'HIT' })).toBe(3);
    expect(text).toContain('process_cpu_user_seconds_total');
  });
});

describe('refusals and the log line', () => {
  it('402 and 429 are counted by budget and by limit and reason, and logged with code and reason', async () => {
    const [inn] = knownInns(1, 3400);
    expect((await h.call('capped', `/v1/companies/${inn}`)).status).toBe(402);
    const limited = await h.call('nosearch', '/v1/search?q=bank', { headers: { 'x-max-wait-ms': '0' } });
    expect(limited.status).toBe(429);
    const text = await scrape();
    expect(sumOf(text, 'cpgw_budget_rejections_total', { app: 'capped', budget: 'app', period: 'day' })).toBe(
      1,
    );
    expect(
      sumOf(text, 'cpgw_ratelimit_rejections_total', { app: 'nosearch', limit: 'search', reason: 'app_cap' }),
    ).toBe(1);
    expect(sumOf(text, 'cpgw_errors_total', { app: 'capped', code: 'budget_exceeded' })).toBe(1);
    const lines = logLines().filter((l) => l.msg === 'request');
    expect(lines.find((l) => l.app === 'capped')).toMatchObject({
      status: 402,
      error: 'budget_exceeded',
      reason: 'app_day',
    });
    expect(lines.find((l) => l.app === 'nosearch')).toMatchObject({
      status: 429,
      error: 'rate_limited',
      reason: 'search_app_cap',
    });
    const paid = lines.find((l) => l.route === 'company' && l.charged === 9900);
    expect(paid?.upstreamRequestId).toMatch(/.+/);
    expect(paid?.queuedMs).toBeTypeOf('number');
    // Never an INN as a label value.
    expect(text).not.toContain(inn!);
  });

  it('an upstream error passed through is logged and counted with its code', async () => {
    await h.emu('/faults', { route: 'bank', count: 6, status: 502 });
    const res = await h.call('alpha', '/v1/banks/044525225', { headers: { 'cache-control': 'no-cache' } });
    expect(res.status).toBe(502);
    const text = await scrape();
    expect(
      sumOf(text, 'cpgw_upstream_failures_total', { route: 'bank', kind: 'status_5xx' }),
    ).toBeGreaterThan(0);
    expect(
      sumOf(text, 'cpgw_errors_total', { app: 'alpha', route: 'bank', code: 'source_unavailable' }),
    ).toBe(1);
  });
});
