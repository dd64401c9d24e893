// X-RateLimit-* tell the truth (issue #12), through real HTTP on one gateway (memory store, the
// governor's state exact) with the clock moved by the test: before every call an app reads its
// headers from a cache HIT (which spends nothing), then asks for something new with
// X-Max-Wait-Ms: 0. Remaining > 0 must mean the call starts; Remaining 0 that it is refused at once
// (a deadline refusal, nothing sent upstream). Pacing is what the old headers left out: the issue
// saw Remaining: 2 followed by a 429 for pacing. Two apps alternate over a minute and a half of
// clock, so the run goes through bursts at once, the reserve paced, a saturated window, pacing
// under competition and the window freeing again, for company reads (key) and searches (search
// paced 1 per 3 s, and key).
import { afterEach, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('X-RateLimit-* tell the truth', () => {
  it('Remaining > 0: a call with X-Max-Wait-Ms: 0 starts; Remaining 0: it is refused at once', async () => {
    // key: 12 a minute, paced 2 per 10 s below a reserve of 2 or while apps compete; the other
    // classes at their production defaults.
    h = await startHarness({
      apps: [{ name: 'alpha' }, { name: 'beta' }],
      config: { limits: { key: { limit: 12, burst: 2 } } },
      emulator: { latency: {} },
    });
    const harness = h;
    const inns = knownInns(200, 60_000);
    let fresh = 0;
    // One company and one search every app may read from the cache, to see its headers.
    const cached = { company: `/v1/companies/${inns[fresh++]}`, search: '/v1/search?q=truth-cached' };
    for (const path of Object.values(cached)) expect((await harness.call('alpha', path)).status).toBe(200);
    harness.advance(10_000);

    const seen = { started: 0, refused: 0 };
    for (let step = 0; step < 60; step++) {
      const app = step % 2 === 0 ? 'alpha' : 'beta';
      const route = step % 3 === 0 ? 'search' : 'company';
      const probe = await harness.call(app, cached[route]);
      expect(probe.headers.get('x-cache')).toBe('HIT');
      await probe.arrayBuffer();
      const remaining = Number(probe.headers.get('x-ratelimit-remaining'));
      const path = route === 'search' ? `/v1/search?q=truth-${step}` : `/v1/companies/${inns[fresh++]}`;
      const before = await harness.upstreamCount();
      const res = await harness.call(app, path, { headers: { 'x-max-wait-ms': '0' } });
      const body = (await res.json()) as { error?: { code: string; details: { reason: string } } };
      const where = `step ${step}: ${app} ${route}, X-RateLimit-Remaining ${remaining}`;
      if (remaining > 0) {
        expect(res.status, where).toBe(200);
        seen.started++;
      } else {
        expect(res.status, where).toBe(429);
        expect(body.error, where).toMatchObject({ code: 'rate_limited', details: { reason: 'deadline' } });
        expect(await harness.upstreamCount(), where).toBe(before);
        seen.refused++;
      }
      harness.advance(1_500);
    }
    console.log(`headers truth: ${JSON.stringify(seen)}`);
    // The run went through both answers, many times each.
    expect(seen.started).toBeGreaterThan(15);
    expect(seen.refused).toBeGreaterThan(15);
  });
});
