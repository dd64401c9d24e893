// A cold burst through real HTTP with the production rate defaults (issue #12): three apps read
// 50 companies nobody asked for before, 1,000 reads with 20 in flight, at one gateway in front of
// the emulator with the real upstream limits (60 key calls a minute) and a real upstream's
// latency (100-300 ms a dossier, so answers overlap and come back out of order). 50 charged calls
// are needed and the minute allows 60, so none may be refused and none may wait for pacing: the
// burst used to get 151-211 refusals (key pacing started 5 calls per 5 s with nobody else
// waiting). The emulator's request log and ledger are the truth; the governor's own wait figures
// (GET /admin/limits) say how long the calls were held.
import { afterEach, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, json, startHarness } from '../helpers/gateway-harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const APPS = ['alpha', 'beta', 'gamma'];
const COMPANIES = 50;
const READS = 1_000;
const IN_FLIGHT = 20;

interface AppState {
  name: string;
  granted: number;
  denied: Record<string, number>;
  waitMs: { max: number };
}

describe('a cold burst with the production rate defaults', () => {
  it('1,000 reads of 50 new companies by 3 apps, 20 in flight: 0 refusals, 50 charges, no call held', async () => {
    // `limits: {}` replaces the harness's pacing-off limits: every class has its production default.
    h = await startHarness({
      apps: APPS.map((name) => ({ name })),
      config: { limits: {} },
      emulator: { latency: { company: '100-300' } },
    });
    const harness = h;
    const inns = knownInns(COMPANIES, 40_000);
    const statuses = new Map<number, number>();
    const refusals: string[] = [];
    const startedAt = performance.now();
    let next = 0;
    const worker = async () => {
      while (next < READS) {
        const i = next++;
        const res = await harness.call(APPS[i % APPS.length]!, `/v1/companies/${inns[i % COMPANIES]}`);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status !== 200) refusals.push(`${res.status} ${await res.text()}`);
        else await res.arrayBuffer();
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    const tookMs = Math.round(performance.now() - startedAt);

    const log = (await harness.emu('/requests?route=company')) as {
      requests: Array<{ at_ms: number; status: number; path: string }>;
    };
    const at = log.requests.map((r) => r.at_ms).sort((a, b) => a - b);
    const ledger = await harness.ledger();
    const admin = { headers: { authorization: `Bearer ${harness.adminToken}` } };
    const state = await json(await fetch(`${harness.gateway.url}/admin/limits`, admin));
    const apps = (state.apps as AppState[]).filter((a) => APPS.includes(a.name));
    const heldMs = Math.max(...apps.map((a) => a.waitMs.max));
    console.log(
      `cold burst: ${READS} reads in ${tookMs} ms, statuses ${JSON.stringify(Object.fromEntries(statuses))}; ` +
        `${at.length} upstream reads (${new Set(log.requests.map((r) => r.path)).size} companies) within ` +
        `${(at.at(-1) ?? 0) - (at[0] ?? 0)} ms, ${ledger.totals.count} charged; longest queue wait ${heldMs} ms`,
    );

    expect(refusals).toEqual([]);
    expect(statuses.get(200)).toBe(READS);
    expect(log.requests.every((r) => r.status === 200)).toBe(true);
    expect(new Set(log.requests.map((r) => r.path)).size).toBe(COMPANIES);
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
