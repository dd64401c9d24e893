// Repeat reads are served from the shared cache: 1,000 reads of 50 companies by 3 apps cause
// exactly 50 upstream calls and 50 charges; a fresh entry avoids a charge after the window
// closed; only-if-cached never spends; a failing upstream is stood in for by a stale entry.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

describe('the shared cache', () => {
  it('1,000 reads of 50 companies by 3 apps: exactly 50 upstream calls and 50 charges', async () => {
    const inns = knownInns(50, 900);
    const apps = ['alpha', 'beta', 'gamma'];
    const callsBefore = ((await h.emu('/requests?route=company')) as { requests: unknown[] }).requests.length;
    const chargesBefore = (await h.ledger()).totals.count;
    const statuses: string[] = [];
    for (let batch = 0; batch < 10; batch++) {
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          h.call(apps[i % 3]!, `/v1/companies/${inns[(batch * 100 + i) % 50]}`),
        ),
      );
      for (const r of results) {
        expect(r.status).toBe(200);
        statuses.push(r.headers.get('x-cache') ?? 'none');
        await r.arrayBuffer();
      }
    }
    const calls =
      ((await h.emu('/requests?route=company')) as { requests: unknown[] }).requests.length - callsBefore;
    expect(calls).toBe(50);
    expect((await h.ledger()).totals.count - chargesBefore).toBe(50);
    expect(statuses.filter((s) => s === 'MISS')).toHaveLength(50);
    expect(statuses.filter((s) => s === 'HIT' || s === 'COALESCED')).toHaveLength(950);
  });

  it('a fresh entry avoids the charge after the window closed; no-cache goes upstream and pays', async () => {
    const [inn] = knownInns(1, 990);
    expect((await h.call('alpha', `/v1/companies/${inn}`)).headers.get('x-charged-minor')).toBe('9900');
    h.advance(20 * 60_000);
    const hit = await h.call('beta', `/v1/companies/${inn}`);
    expect(hit.headers.get('x-cache')).toBe('HIT');
    expect(hit.headers.get('x-charged-minor')).toBe('0');
    expect(Number(hit.headers.get('age'))).toBeGreaterThanOrEqual(1200);
    const forced = await h.call('beta', `/v1/companies/${inn}`, { headers: { 'cache-control': 'no-cache' } });
    expect(forced.headers.get('x-charged-minor')).toBe('9900');
  });

  it('only-if-cached never spends: a miss is 504 not_cached with no upstream call', async () => {
    const [inn] = knownInns(1, 995);
    const before = await h.upstreamCount();
    const res = await h.call('alpha', `/v1/companies/${inn}`, {
      headers: { 'cache-control': 'only-if-cached' },
    });
    expect(res.status).toBe(504);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_cached');
    expect(await h.upstreamCount()).toBe(before);
  });

  it('with the upstream failing (502) a stale entry is served and marked; with nothing cached the error passes through', async () => {
    expect((await h.call('alpha', '/v1/banks/044525225')).status).toBe(200);
    h.advance(25 * 3_600_000); // past the bank's 24 h max age
    await h.emu('/faults', { route: 'bank', count: 2, status: 502 });
    const stale = await h.call('alpha', '/v1/banks/044525225');
    expect(stale.status).toBe(200);
    expect(stale.headers.get('x-cache')).toBe('STALE');
    const nothing = await h.call('alpha', '/v1/banks/044525187');
    expect(nothing.status).toBe(502);
    expect(((await nothing.json()) as { error: { code: string } }).error.code).toBe('source_unavailable');
  });
});
