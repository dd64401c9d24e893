// Real time, one replica (memory store), the production search class scaled 1:20 (20 per 3 s,
// paced 1 per 150 ms) so a minute's behaviour runs in seconds: one app floods search at 10x the
// allowance while another sends one search every 500 ms (every 10 s, scaled). Proves the window
// is never exceeded, the allowance is used, and the trickle app is not starved: its median wait
// stays under 5 s scaled, i.e. 250 ms.
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { RateGovernor } from '../../src/limits/rate-governor.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { maxInAnyInterval, median } from '../helpers/intervals.ts';

const WINDOW = 3000;
const LIMIT = 20;
const SCALE = WINDOW / 60_000;
const RUN_MS = 3 * WINDOW;

let governor: RateGovernor | null = null;
afterEach(async () => {
  await governor?.close();
});

describe('search under a flood (memory store, real time)', () => {
  it('never exceeds N per window, uses the allowance, and serves a trickle app promptly', async () => {
    const store = new MemoryStore({ clock: systemClock, cacheMaxBytes: 1 << 20 });
    governor = new RateGovernor({
      store,
      clock: systemClock,
      classes: {
        search: { limit: LIMIT, windowMs: WINDOW, burst: 1 },
        key: { limit: 1000, windowMs: WINDOW },
      },
      jitterMs: 2,
      apps: [{ name: 'flood' }, { name: 'trickle' }],
    });
    const g = governor;
    const grants: number[] = [];
    const trickleWaits: number[] = [];
    const pending: Promise<void>[] = [];
    const start = Date.now();
    const send = (app: string, maxWaitMs: number) =>
      pending.push(
        g.acquire({ app, route: 'search', maxWaitMs }).then(async (r) => {
          if (!r.ok) return;
          grants.push(Date.now());
          if (app === 'trickle') trickleWaits.push(r.waitedMs);
          await r.release(true);
        }),
      );
    const floodEvery = WINDOW / LIMIT / 10; // 10x the allowance
    const flood = setInterval(() => send('flood', 10_000 * SCALE), floodEvery);
    const trickle = setInterval(() => send('trickle', 10_000 * SCALE), 10_000 * SCALE);
    await new Promise((r) => setTimeout(r, RUN_MS));
    clearInterval(flood);
    clearInterval(trickle);
    await g.close();
    await Promise.all(pending);

    expect(maxInAnyInterval(grants, WINDOW)).toBeLessThanOrEqual(LIMIT);
    const inRun = grants.filter((t) => t < start + RUN_MS).length;
    expect(inRun / ((RUN_MS / WINDOW) * LIMIT)).toBeGreaterThanOrEqual(0.95);
    expect(trickleWaits.length).toBeGreaterThanOrEqual(15);
    expect(median(trickleWaits)).toBeLessThan(5000 * SCALE);
    const s = await g.state();
    console.log(
      `memory flood: grants=${grants.length} in-run=${inRun}/${(RUN_MS / WINDOW) * LIMIT} trickle n=${trickleWaits.length} median=${median(trickleWaits)}ms max=${Math.max(...trickleWaits)}ms flood denied=${JSON.stringify(s.apps.find((a) => a.name === 'flood')?.denied)}`,
    );
  });
});
