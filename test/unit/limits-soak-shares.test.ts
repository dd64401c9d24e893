// The soak benchmark's load (bench/limits-soak.ts) in simulated time: three replicas (three
// RateGovernors on one MemoryStore), the production classes (60 key calls, 20 searches a minute),
// five apps flooding searches and dossier reads from 8 workers each over every replica, and one
// app sending a search every 10 s. A ManualClock moves from one sleeper to the next, every store
// call costs 1 ms, a granted call holds its permit 5-30 ms: four minutes run in about a second,
// the same way every time.
//
// Proves that the key class is used to its limit once pacing and shares hold (minutes 3 and 4),
// never above it. Before an app counted as waiting only for the class that holds it back, an app
// whose search waited for the search class (or its own search share) still counted as waiting for
// `key`, every other app was held to a key share of 10, and the key class ran at 53-56 a minute.
import { describe, expect, it } from 'vitest';
import { ManualClock, seededRandom } from '../../src/clock.ts';
import { RateGovernor } from '../../src/limits/rate-governor.ts';
import type { RouteName } from '../../src/route-table.ts';
import { MemoryStore } from '../../src/store/memory/memory-store.ts';
import { maxInAnyInterval } from '../helpers/intervals.ts';
import { simulatedTime } from '../helpers/simulated-time.ts';

describe('the soak load in simulated time (three replicas, production limits)', () => {
  it('uses the whole key allowance once apps compete, never more', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 15, 9, 0, 17, 300));
    const { time, sleep, runUntil } = simulatedTime(clock, 4);
    const store = new MemoryStore({ clock, cacheMaxBytes: 1 << 20 });
    // Each replica reaches the shared store in 1 ms.
    const replicaStore = () =>
      new Proxy(store, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver);
          if (typeof v !== 'function') return v;
          return async (...args: unknown[]) => {
            if (prop !== 'subscribe') await sleep(1);
            return v.apply(target, args);
          };
        },
      });
    const flooders = ['a', 'b', 'c', 'd', 'e'];
    const apps = [...flooders, 'trickle'].map((name) => ({ name }));
    const governors = [0, 1, 2].map(
      (r) =>
        new RateGovernor({
          store: replicaStore(),
          clock: time,
          random: seededRandom(10 + r),
          apps,
          onError: (e) => {
            throw e;
          },
        }),
    );
    const rand = seededRandom(1);
    const keyStarts: number[] = [];
    let rr = 0;
    const call = async (app: string, route: RouteName, maxWaitMs = 20_000) => {
      const r = await governors[rr++ % 3]!.acquire({ app, route, maxWaitMs });
      if (!r.ok) return r;
      keyStarts.push(clock.now());
      await sleep(5 + rand() * 25);
      await r.release(true);
      return r;
    };
    let stop = false;
    const worker = async (app: string, first: number) => {
      for (let i = first; !stop; i++) {
        const r = await call(app, i % 2 === 0 ? 'search' : 'company');
        if (!r.ok) await sleep(Math.min(Math.ceil(r.retryAfterMs / 1000), 5) * 1000);
      }
    };
    const trickle = async () => {
      while (!stop) {
        const t0 = clock.now();
        await call('trickle', 'search');
        await sleep(Math.max(0, t0 + 10_000 - clock.now()));
      }
    };
    const start = clock.now();
    const running = [
      ...flooders.flatMap((app) => Array.from({ length: 8 }, (_, i) => worker(app, i))),
      trickle(),
    ];
    await runUntil(start + 240_000);
    stop = true;
    for (const g of governors) await g.close();
    await runUntil(clock.now() + 30_000);
    await Promise.all(running);

    const inMinute = (m: number) =>
      keyStarts.filter((t) => t >= start + m * 60_000 && t < start + (m + 1) * 60_000).length;
    const perMinute = [0, 1, 2, 3].map(inMinute);
    console.log(`soak load simulated: key starts per minute ${perMinute.join(', ')}`);
    expect(maxInAnyInterval(keyStarts, 60_000)).toBeLessThanOrEqual(60);
    expect(perMinute[2]).toBeGreaterThanOrEqual(59);
    expect(perMinute[3]).toBeGreaterThanOrEqual(59);
  });
});
