// The account pays once per company per window: concurrent requests from several apps for a
// new company cost one dossier price; requisites then dossier cost both; a read after the
// window costs again; reads inside it are free. The emulator's ledger is the truth.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

// These tests price windows, so they ask past the cache (which would make every repeat free).
const fresh = { headers: { 'cache-control': 'no-cache' } };
const chargesFor = async (inn: string) => (await h.ledger()).entries.filter((e) => e.inn === inn);

describe('coverage windows', () => {
  it('20 concurrent requests from 3 apps, dossier and sections mixed, cost exactly one dossier price', async () => {
    const [inn] = knownInns(1, 100);
    const paths = ['', '/arbitration', '/founders', '/management', '/financials'];
    const apps = ['alpha', 'beta', 'gamma'];
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        h.call(apps[i % 3]!, `/v1/companies/${inn}${paths[i % paths.length]}`),
      ),
    );
    for (const r of results) expect(r.status).toBe(200);
    const charged = results.map((r) => Number(r.headers.get('x-charged-minor')));
    expect(charged.filter((c) => c > 0)).toEqual([9900]);
    const charges = await chargesFor(inn!);
    expect(charges).toHaveLength(1);
    expect(charges[0]).toMatchObject({ kind: 'dossier', amount_minor: 9900 });
    const expires = results.map((r) => r.headers.get('x-window-expires')).filter(Boolean);
    expect(expires.length).toBeGreaterThan(0);
  });

  it('requisites then dossier cost both prices (no credit), and requisites inside a dossier window are free', async () => {
    const [inn] = knownInns(1, 200);
    const req = await h.call('alpha', `/v1/requisites/${inn}`, fresh);
    expect(req.headers.get('x-charged-minor')).toBe('1500');
    const req2 = await h.call('beta', `/v1/requisites/${inn}`, fresh);
    expect(req2.headers.get('x-charged-minor')).toBe('0');
    expect(req2.headers.get('x-cost-estimate-minor')).toBe('0');
    const dossier = await h.call('beta', `/v1/companies/${inn}`, fresh);
    expect(dossier.headers.get('x-cost-estimate-minor')).toBe('9900');
    expect(dossier.headers.get('x-charged-minor')).toBe('9900');
    const req3 = await h.call('gamma', `/v1/requisites/${inn}`, fresh);
    expect(req3.headers.get('x-charged-minor')).toBe('0');
    expect((await chargesFor(inn!)).map((c) => [c.kind, c.amount_minor])).toEqual([
      ['requisites', 1500],
      ['dossier', 9900],
    ]);
  });

  it('inside the window every read is free; after it ends a read costs again', async () => {
    const [inn] = knownInns(1, 300);
    expect((await h.call('alpha', `/v1/companies/${inn}`)).headers.get('x-charged-minor')).toBe('9900');
    h.advance(10 * 60_000);
    for (const path of ['/arbitration', '/taxes', '/founders']) {
      const r = await h.call('beta', `/v1/companies/${inn}${path}`, fresh);
      expect(r.headers.get('x-charged-minor')).toBe('0');
    }
    h.advance(6 * 60_000);
    const after = await h.call('gamma', `/v1/companies/${inn}`, fresh);
    expect(after.headers.get('x-cost-estimate-minor')).toBe('9900');
    expect(after.headers.get('x-charged-minor')).toBe('9900');
    expect((await chargesFor(inn!)).length).toBe(2);
  });

  it('records every charge in the gateway ledger, matching the emulator ledger', async () => {
    const res = await fetch(`${h.gateway.url}/admin/ledger?format=json`, {
      headers: { authorization: `Bearer ${h.adminToken}` },
    });
    const ours = (await res.json()) as {
      total_minor: number;
      count: number;
      entries: Array<{ app: string }>;
    };
    const truth = await h.ledger();
    expect(ours.count).toBe(truth.totals.count);
    expect(ours.total_minor).toBe(truth.totals.amount_minor);
    const csv = await (
      await fetch(`${h.gateway.url}/admin/ledger?format=csv&app=alpha`, {
        headers: { authorization: `Bearer ${h.adminToken}` },
      })
    ).text();
    expect(csv.split('\n')[0]).toBe(
      'time,app,operation,kind,inn,amount_minor,upstream_request_id,request_id,idempotency_key,reconciled,at_ms',
    );
    expect(csv.trim().split('\n').length - 1).toBe(ours.entries.filter((e) => e.app === 'alpha').length);
  });
});
