// Three gateway replicas (three RateGovernors, each on its own RedisStore connection) sharing one
// Redis, real time, the production search class scaled 1:20 (20 per 3 s, paced 1 per 150 ms).
// Proves: the Redis log (server time) never holds more than N starts in any window interval,
// saturation uses >= 70% of the allowance (95 %+ quiet: bench/limits-soak.ts), a trickle app's median wait stays under 5 s scaled
// while another app floods at 10x from every replica, and a replica that dies holding slots
// gives them back within one window (plus the edge margin). Unique key prefix per run; only those
// keys are deleted.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { defaultEdgeMarginMs } from '../../src/limits/limit-classes.ts';
import { RateGovernor } from '../../src/limits/rate-governor.ts';
import { RedisStore } from '../../src/store/redis/redis-store.ts';
import { maxInAnyInterval, median } from '../helpers/intervals.ts';
import { deleteKeysUnder, startTestRedis, uniquePrefix } from '../helpers/redis.ts';

const redis = await startTestRedis();
if (!redis) console.warn('\n!!! limits-redis: NO REDIS, the multi-replica limiter tests are SKIPPED !!!\n');

const WINDOW = 3000;
const LIMIT = 20;
const SCALE = WINDOW / 60_000;
const RUN_MS = 3 * WINDOW;
const prefixes: string[] = [];
const opened: { stores: RedisStore[]; governors: RateGovernor[] } = { stores: [], governors: [] };

function replica(prefix: string, classes: ConstructorParameters<typeof RateGovernor>[0]['classes']) {
  const store = new RedisStore({ url: redis?.url ?? '', prefix, clock: systemClock, cacheMaxBytes: 1 << 20 });
  // Retry jitter and the fair-share refresh scaled with the window (20 ms and 100 ms in production).
  const governor = new RateGovernor({
    store,
    clock: systemClock,
    classes,
    apps: [{ name: 'flood' }, { name: 'trickle' }],
    jitterMs: 2,
    fairRefreshMs: 10,
  });
  opened.stores.push(store);
  opened.governors.push(governor);
  return { store, governor };
}

const maybe = redis ? describe : describe.skip;

maybe('rate limits across three replicas on one Redis', () => {
  const url = redis?.url ?? '';

  afterAll(async () => {
    for (const g of opened.governors) await g.close();
    for (const s of opened.stores) await s.close().catch(() => {});
    await deleteKeysUnder(url, prefixes);
    await redis?.stop();
  });

  it('never more than N per window interval, most of the allowance used, a trickle app served promptly under a 10x flood', async () => {
    const prefix = uniquePrefix('limits');
    prefixes.push(prefix);
    const classes = {
      search: { limit: LIMIT, windowMs: WINDOW, burst: 1 },
      key: { limit: 10_000, windowMs: WINDOW },
    };
    const replicas = [replica(prefix, classes), replica(prefix, classes), replica(prefix, classes)];

    // Every slot the Redis log ever held, with its server-time score (each lives a full window;
    // sampling every 100 ms sees all of them). A slot gone from the log before its window ended
    // was given back: a take whose waiter did not use it (its deadline passed meanwhile, or a
    // fair-share retake), which started no call. A loaded machine makes those; counted as starts,
    // one read 63 logged against 62 granted and 21 in a window (CI, 2026-11-29).
    const watcher = new Redis(url, { maxRetriesPerRequest: 1 });
    const seen = new Map<string, number>();
    const givenBack = new Set<string>();
    const sample = async () => {
      const at = Date.now();
      const flat = await watcher.zrange(`${prefix}{limits}:w:search`, 0, -1, 'WITHSCORES');
      const present = new Set<string>();
      for (let i = 0; i < flat.length; i += 2) {
        seen.set(flat[i] as string, Number(flat[i + 1]));
        present.add(flat[i] as string);
      }
      // Scores are Redis's clock, this machine's too; a slot is only pruned once its window and
      // edge margin have passed, so one missing 50 ms before its window ends was given back.
      for (const [id, score] of seen) if (!present.has(id) && at < score + WINDOW - 50) givenBack.add(id);
    };
    const sampler = setInterval(() => void sample(), 100);

    let granted = 0;
    let trickleDenied = 0;
    const trickleWaits: number[] = [];
    const pending: Promise<void>[] = [];
    const send = (g: RateGovernor, app: string) =>
      pending.push(
        g.acquire({ app, route: 'search', maxWaitMs: 10_000 * SCALE }).then(async (r) => {
          if (!r.ok) {
            if (app === 'trickle') trickleDenied++;
            return;
          }
          granted++;
          if (app === 'trickle') trickleWaits.push(r.waitedMs);
          await r.release(true);
        }),
      );
    // 10x the allowance in total, spread over the three replicas; the trickle on one of them.
    const floodEvery = (WINDOW / LIMIT / 10) * replicas.length;
    const timers = replicas.map(({ governor }) => setInterval(() => send(governor, 'flood'), floodEvery));
    timers.push(setInterval(() => send(replicas[1]!.governor, 'trickle'), 10_000 * SCALE));
    await new Promise((r) => setTimeout(r, RUN_MS));
    for (const t of timers) clearInterval(t);
    await Promise.all(pending);
    await sample();
    clearInterval(sampler);
    watcher.disconnect();

    const starts = [...seen].filter(([id]) => !givenBack.has(id)).map(([, score]) => score);
    starts.sort((a, b) => a - b);
    const first = starts[0] ?? 0;
    const inRun = starts.filter((t) => t < first + RUN_MS).length;
    const worst = maxInAnyInterval(starts, WINDOW);
    console.log(
      `redis x3: granted=${granted} logged=${starts.length} given-back=${givenBack.size} max-in-any-window=${worst}/${LIMIT} used=${inRun}/${(RUN_MS / WINDOW) * LIMIT} trickle served=${trickleWaits.length} refused=${trickleDenied} median=${median(trickleWaits)}ms max=${Math.max(...trickleWaits)}ms`,
    );
    expect(starts.length).toBe(granted);
    expect(worst).toBeLessThanOrEqual(LIMIT);
    // Saturation: 95 %+ on a quiet machine (bench/limits-soak.ts holds that goal); on a CPU-bound
    // 2-core CI machine (load 10) timer delays cost up to a fifth (81.7 % measured), so the test
    // asks for 70 %: a limiter that wastes allowance (slots held past their window: 50 % or less)
    // still fails it.
    expect(inRun / ((RUN_MS / WINDOW) * LIMIT)).toBeGreaterThanOrEqual(0.7);
    expect(trickleWaits.length).toBeGreaterThanOrEqual(15);
    expect(median(trickleWaits)).toBeLessThan(5000 * SCALE);
  });

  it('a replica that dies holding slots gives them back within one window (and its edge margin)', async () => {
    const prefix = uniquePrefix('limits');
    prefixes.push(prefix);
    const classes = { check: { limit: 4, windowMs: 2000, burst: 4 } };
    // A slot counts for the window plus the class's edge margin (50 ms for a 2 s window).
    const logWindow = 2000 + defaultEdgeMarginMs(2000);
    const dying = replica(prefix, classes);
    const survivor = replica(prefix, classes);
    for (let i = 0; i < 4; i++) {
      const r = await dying.governor.acquire({ app: 'flood', route: 'check_create', maxWaitMs: 0 });
      expect(r.ok).toBe(true);
    }
    const diedAt = Date.now();
    await dying.governor.close(); // never released: the process is gone
    await dying.store.close();
    opened.stores.splice(opened.stores.indexOf(dying.store), 1);

    const refused = await survivor.governor.acquire({ app: 'trickle', route: 'check_create', maxWaitMs: 0 });
    expect(refused).toMatchObject({ ok: false, limit: 'check', reason: 'deadline' });
    expect(Date.now() - diedAt).toBeLessThan(200); // refused at once, not after waiting
    if (!refused.ok) expect(refused.retryAfterMs).toBeLessThanOrEqual(logWindow);

    const later = await survivor.governor.acquire({ app: 'trickle', route: 'check_create', maxWaitMs: 2500 });
    expect(later.ok).toBe(true);
    expect(Date.now() - diedAt).toBeLessThanOrEqual(logWindow + 150);
  });
});
