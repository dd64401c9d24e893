// Issue 31 item 2: a store fault on a paid call is waited out within the request's deadline, not
// passed on. Redis (the store of money and locks here) is stopped; a paid read sent meanwhile
// waits (backoff with jitter, store.failoverWaitMs) and is answered 200 once Redis is back 1.5 s
// later, charged once; before, it was 503 store_unavailable at once. With failoverWaitMs 0 the
// old fast refusal stays available. The emulator's ledger is the truth.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/create-store.ts';
import type { Store } from '../../src/store/store.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { type PrivateRedis, startPrivateRedis } from '../helpers/redis.ts';

describe('a store outage shorter than the deadline', () => {
  let redis: PrivateRedis | null;
  let h: Harness;
  const stores: Store[] = [];
  beforeAll(async () => {
    redis = await startPrivateRedis();
    if (!redis) return;
    h = await startHarness({
      apps: [{ name: 'alpha' }],
      config: { store: { stateDir: null } },
      store: (clock) => {
        const store = createStore({ redisUrl: redis!.url, clock, cacheMaxBytes: 1 << 24, onError: () => {} });
        stores.push(store);
        return store;
      },
    });
  });
  afterAll(async () => {
    await h?.close();
    for (const s of stores) await s.close().catch(() => {});
    await redis?.stop();
  });

  it('is waited out: the paid read is answered 200 and charged once when the store returns', async (ctx) => {
    if (!redis) return ctx.skip();
    const [warm, inn] = knownInns(2, 8300);
    expect((await h.call('alpha', `/v1/companies/${warm}`)).status).toBe(200);
    await redis.stop();
    const started = Date.now();
    const pending = h.call('alpha', `/v1/companies/${inn}`);
    await new Promise((r) => setTimeout(r, 1_500));
    await redis.start();
    const res = await pending;
    const waited = Date.now() - started;
    expect(res.status).toBe(200);
    expect(res.headers.get('x-charged-minor')).toBe('9900');
    expect(waited).toBeGreaterThanOrEqual(1_400);
    const ledger = await h.ledger();
    expect(ledger.entries.filter((e) => e.inn === inn)).toHaveLength(1);
    expect(h.logs.some((l) => l.includes('waiting it out'))).toBe(true);
  });
});
