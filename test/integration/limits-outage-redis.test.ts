// The Store goes away under the governor: a private redis-server (never the shared one) is
// stopped mid-test and started again, empty, on the same port. Proves: while it is down the
// governor does not refuse everything but starts calls on its conservative local share
// (limit / expectedReplicas, its own slots of the window counted), never more than that share in
// any window interval; it says so once on entering and once on leaving; and it is back on the
// shared log within 1 s of the Store answering again (measured from the restart's first PONG).
import { afterAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { type Denial, type Permit, RateGovernor } from '../../src/limits/rate-governor.ts';
import { RedisStore } from '../../src/store/redis/redis-store.ts';
import { maxInAnyInterval } from '../helpers/intervals.ts';
import { startPrivateRedis } from '../helpers/redis.ts';

const redis = await startPrivateRedis();
if (!redis) console.warn('\n!!! limits-outage-redis: NO redis-server, the outage test is SKIPPED !!!\n');
const maybe = redis ? describe : describe.skip;

const WINDOW = 4000;
const LIMIT = 10;

maybe('rate limits while the Store is unreachable', () => {
  const store = new RedisStore({
    url: redis?.url ?? '',
    prefix: 'cpgw-test:outage:',
    clock: systemClock,
    cacheMaxBytes: 1 << 20,
  });
  const modes: { local: boolean; at: number }[] = [];
  const governor = new RateGovernor({
    store,
    clock: systemClock,
    classes: { key: { limit: LIMIT, windowMs: WINDOW, burst: LIMIT } },
    expectedReplicas: 2,
    storeProbeMs: 100,
    onLocalMode: (local) => modes.push({ local, at: Date.now() }),
    onError: () => {},
  });

  afterAll(async () => {
    await governor.close();
    await store.close().catch(() => {});
    await redis?.stop();
  });

  it('local shares while Redis is down, one warning each way, shared again within 1 s of its return', async () => {
    const grants: number[] = [];
    const ask = async (): Promise<Permit | Denial> => {
      const r = await governor.acquire({ app: 'crm', route: 'company', maxWaitMs: 0 });
      if (r.ok) {
        grants.push(Date.now());
        await r.release(true);
      }
      return r;
    };
    // Shared: two calls in the Redis log.
    for (let i = 0; i < 2; i++) expect((await ask()).ok).toBe(true);
    expect((await governor.state()).classes.find((c) => c.name === 'key')?.used).toBe(2);

    await redis?.stop();
    const downAt = Date.now();
    // Down: the local share is 10 / 2 = 5 per window, the two shared calls of this window included.
    const outage: (Permit | Denial)[] = [];
    for (let i = 0; i < 8; i++) outage.push(await ask());
    expect(governor.localMode).toBe(true);
    expect(outage.filter((r) => r.ok)).toHaveLength(3);
    expect(outage.filter((r) => !r.ok)).toHaveLength(5);
    expect(outage.find((r) => !r.ok)).toMatchObject({ ok: false, limit: 'key', reason: 'deadline' });
    // Headroom (X-RateLimit-*) is answered from the local share, not a fault.
    expect(await governor.headroomFor('crm', 'company')).toMatchObject({ limit: 5, remaining: 0 });
    expect(modes.map((m) => m.local)).toEqual([true]);
    expect(maxInAnyInterval(grants, WINDOW)).toBeLessThanOrEqual(LIMIT / 2);

    // Back, empty, after about 1.5 s down.
    await new Promise((r) => setTimeout(r, Math.max(0, 1500 - (Date.now() - downAt))));
    await redis?.start();
    const upAt = Date.now();
    while (governor.localMode && Date.now() - upAt < 5000) await new Promise((r) => setTimeout(r, 20));
    const backAfterMs = Date.now() - upAt;
    console.log(`store outage: back on the shared budget ${backAfterMs} ms after Redis answered`);
    expect(governor.localMode).toBe(false);
    expect(backAfterMs).toBeLessThan(1000);
    expect(modes.map((m) => m.local)).toEqual([true, false]);

    // Shared again: the next call is in the (new, empty) Redis log, with the shared limit.
    expect((await ask()).ok).toBe(true);
    expect((await governor.state()).classes.find((c) => c.name === 'key')).toMatchObject({
      used: 1,
      limit: LIMIT,
    });
    expect(await governor.headroomFor('crm', 'company')).toMatchObject({
      limit: LIMIT,
      remaining: LIMIT - 1,
    });
  }, 20_000);
});
