// A cold burst through real HTTP with the production rate defaults (issue #12): three apps read
// 50 companies nobody asked for before, 1,000 reads with 20 in flight, at one gateway in front of
// the emulator with the real upstream limits (60 key calls a minute) and a real upstream's
// latency (100-300 ms a dossier, so answers overlap and come back out of order). 50 charged calls
// are needed and the minute allows 60, so none may be refused and none may wait for pacing: the
// burst used to get 151-211 refusals (key pacing started 5 calls per 5 s with nobody else
// waiting). The emulator's request log and ledger are the truth; the governor's own wait figures
// (GET /admin/limits) say how long the calls were held.
import { afterEach, describe, expect, it } from 'vitest';
import { coldBurst } from '../helpers/cold-burst.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const APPS = ['alpha', 'beta', 'gamma'];
const COMPANIES = 50;
const READS = 1_000;
const IN_FLIGHT = 20;

describe('a cold burst with the production rate defaults', () => {
  it('1,000 reads of 50 new companies by 3 apps, 20 in flight: 0 refusals, 50 charges, no call held', async () => {
    // `limits: {}` replaces the harness's pacing-off limits: every class has its production default.
    h = await startHarness({
      apps: APPS.map((name) => ({ name })),
      config: { limits: {} },
      emulator: { latency: { company: '100-300' } },
    });
    const b = await coldBurst(h, {
      apps: APPS,
      companies: COMPANIES,
      reads: READS,
      inFlight: IN_FLIGHT,
      innsFrom: 40_000,
    });
    const { refusals, ledger, apps } = b;
    const at = b.upstream.at;
    const heldMs = Math.max(...apps.map((a) => a.wait_ms.max));
    console.log(
      `cold burst: ${READS} reads in ${b.tookMs} ms, statuses ${JSON.stringify(b.statuses)}; ` +
        `${at.length} upstream reads (${b.upstream.paths.size} companies) within ` +
        `${(at.at(-1) ?? 0) - (at[0] ?? 0)} ms, ${ledger.totals.count} charged; longest queue wait ${heldMs} ms`,
    );

    expect(refusals).toEqual([]);
    expect(b.statuses['200']).toBe(READS);
    expect(b.upstream.statuses.every((status) => status === 200)).toBe(true);
    expect(b.upstream.paths.size).toBe(COMPANIES);
    expect(ledger.entries.filter((e) => e.kind === 'dossier').length).toBe(COMPANIES);
    expect(ledger.totals.count).toBe(COMPANIES);
    // Every call started when asked: nobody was refused, and nobody was held for pacing (a
    // paced burst holds the 6th call 5 s; a wait for the upstream's minute cap to learn that the
    // calls in flight were counted lasts one upstream answer, here at most 300 ms).
    for (const a of apps) expect(a.denied).toMatchObject({ deadline: 0, paused: 0, app_cap: 0 });
    expect(heldMs).toBeLessThan(2_000);
    expect(apps.reduce((n, a) => n + a.granted, 0)).toBe(at.length);
  });
});
