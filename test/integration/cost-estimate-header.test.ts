// X-Cost-Estimate-Minor is on every answer of a route that can charge (README "Headers on
// answers", issue 31 item 11): the estimate on a MISS, 0 on a cache HIT (the fast hit path and
// the stages alike), the refused call's estimate on a 402; never on a free route.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

describe('X-Cost-Estimate-Minor', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ apps: [{ name: 'capped', budgets: { day: { limitMinor: 9_900 } } }] });
  });
  afterAll(() => h.close());

  it('MISS: the estimate; HIT: 0 on both paths; 402: the refused estimate; free routes: none', async () => {
    const [a, b] = knownInns(2, 4242);
    const miss = await h.call('capped', `/v1/companies/${a}`);
    expect(miss.headers.get('x-cache')).toBe('MISS');
    expect(miss.headers.get('x-cost-estimate-minor')).toBe('9900');
    const hit = await h.call('capped', `/v1/companies/${a}`);
    expect(hit.headers.get('x-cache')).toBe('HIT');
    expect(hit.headers.get('x-cost-estimate-minor')).toBe('0');
    // X-Max-Wait-Ms takes the stages, not the fast hit path
    const staged = await h.call('capped', `/v1/companies/${a}`, { headers: { 'x-max-wait-ms': '1000' } });
    expect(staged.headers.get('x-cache')).toBe('HIT');
    expect(staged.headers.get('x-cost-estimate-minor')).toBe('0');
    const refused = await h.call('capped', `/v1/companies/${b}`);
    expect(refused.status).toBe(402);
    expect(refused.headers.get('x-cost-estimate-minor')).toBe('9900');
    const free = await h.call('capped', '/v1/banks/044525225');
    expect(free.status).toBe(200);
    expect(free.headers.get('x-cost-estimate-minor')).toBeNull();
  });
});
