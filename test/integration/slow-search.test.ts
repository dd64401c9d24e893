// The gateway's search limits at the latency the spec calls typical ("up to 3 seconds";
// emulator --latency search=500-3000): a burst of the whole 20-a-minute search budget is
// answered without one upstream 429, the calls past the budget are refused by the gateway at
// once (never queued past their X-Max-Wait-Ms, never sent upstream), and a queued call's
// deadline holds while slow searches are in flight.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

let seq = 0;
const freshSearch = () => `/v1/search?q=${encodeURIComponent(`медленно ${++seq}`)}`;

describe('searches at 0.5-3 s upstream latency', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ emulator: { latency: { search: '500-3000' } } });
  });
  afterAll(() => h.close());

  const upstreamSearches = async () =>
    ((await h.emu('/requests?route=search')) as { requests: Array<{ status: number }> }).requests;

  it('20 concurrent searches all succeed, 0 upstream 429; the 21st is the gateway`s own 429 at once', async () => {
    const started = performance.now();
    const burst = await Promise.all(
      Array.from({ length: 20 }, () => h.call('alpha', freshSearch(), { headers: { 'x-max-wait-ms': '0' } })),
    );
    expect(burst.map((r) => r.status)).toEqual(Array(20).fill(200));
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(500); // the latency is real: no answer before 0.5 s
    const beforeRefusal = (await upstreamSearches()).length;
    const refusedAt = performance.now();
    const refused = await h.call('beta', freshSearch(), { headers: { 'x-max-wait-ms': '2000' } });
    expect(refused.status).toBe(429);
    expect(performance.now() - refusedAt).toBeLessThan(2500);
    const body = (await refused.json()) as { error: { code: string; details: { limit: string } } };
    expect(body.error).toMatchObject({ code: 'rate_limited', details: { limit: 'search' } });
    const log = await upstreamSearches();
    expect(log.length).toBe(beforeRefusal);
    expect(log.filter((e) => e.status === 429)).toHaveLength(0);
    expect(log.filter((e) => e.status === 200)).toHaveLength(20);
  });
});
