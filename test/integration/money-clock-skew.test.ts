// Issue 28 item 6: one clock for money. Two replicas share a Redis; their own clocks are set
// around a Moscow midnight: replica A's 15 s before it, replica B's 45 s ahead of A (already the
// next budget day by its own clock). A day cap of three dossiers. With each replica on its own
// clock (cost.moneyClock: local), A spends three "today" and B three more "tomorrow": six charges
// within one minute. On the money store's clock (the default: Redis TIME) both replicas agree on
// the day whatever their own clocks say, and the cap lets three through. The emulator's ledger is
// the truth; B's cpgw_clock_skew_seconds is 45 s more than A's.
import { afterEach, describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/create-store.ts';
import type { Store } from '../../src/store/store.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { startHarness } from '../helpers/gateway-harness.ts';
import { sumOf } from '../helpers/prom-text.ts';
import { deleteKeysUnder, startTestRedis, uniquePrefix } from '../helpers/redis.ts';

const PRICE = 9_900;

async function twoReplicasAroundMidnight(moneyClock: 'store' | 'local') {
  const redis = await startTestRedis();
  if (!redis) return null;
  const prefix = uniquePrefix('money-clock');
  // 15 s before the next Moscow midnight (UTC+3, no DST), by A's clock
  const mskMidnight = Math.ceil((Date.now() + 3 * 3_600_000) / 86_400_000) * 86_400_000 - 3 * 3_600_000;
  const aStart = mskMidnight - 15_000;
  // One offset for both replicas (computed once: the time between their starts is not skew).
  const offset = aStart - Date.now();
  const stores: Store[] = [];
  const make = (clock: Parameters<typeof createStore>[0]['clock']) => {
    const store = createStore({ redisUrl: redis.url, prefix, clock, cacheMaxBytes: 1 << 24 });
    stores.push(store);
    return store;
  };
  const h = await startHarness({
    apps: [{ name: 'capped', budgets: { day: { limitMinor: 3 * PRICE } } }],
    config: { cost: { moneyClock } },
    store: make,
    clockOffsetMs: offset,
  });
  const a = h.gateway;
  const b = await h.addGateway(make(a.clock), { clockOffsetMs: offset + 45_000 });
  return { h, a, b, redis, prefix, stores };
}

describe('budget days follow the money store clock', () => {
  let run: Awaited<ReturnType<typeof twoReplicasAroundMidnight>> = null;
  afterEach(async () => {
    if (!run) return;
    await run.h.close();
    for (const s of run.stores) await s.close().catch(() => {});
    await deleteKeysUnder(run.redis.url, [run.prefix]);
    await run.redis.stop();
    run = null;
  });

  const spendAcrossReplicas = async (r: NonNullable<typeof run>) => {
    const token = r.h.tokens.capped!;
    const inns = knownInns(6, 6100);
    const read = (url: string, inn: string) =>
      fetch(`${url}/v1/companies/${inn}`, { headers: { authorization: `Bearer ${token}` } });
    const statuses: number[] = [];
    for (const inn of inns.slice(0, 3)) statuses.push((await read(r.a.url, inn)).status);
    for (const inn of inns.slice(3)) statuses.push((await read(r.b.url, inn)).status);
    const ledger = await r.h.ledger();
    return { statuses, spent: ledger.entries.reduce((n, e) => n + e.amount_minor, 0) };
  };

  it('on the store clock (default): three charges, and B reports 45 s more skew than A', async (ctx) => {
    run = await twoReplicasAroundMidnight('store');
    if (!run) return ctx.skip();
    const { statuses, spent } = await spendAcrossReplicas(run);
    expect(statuses).toEqual([200, 200, 200, 402, 402, 402]);
    expect(spent).toBe(3 * PRICE);
    const skew = async (url: string) =>
      sumOf(
        await (
          await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${run!.h.adminToken}` } })
        ).text(),
        'cpgw_clock_skew_seconds',
      );
    const difference = (await skew(run.b.url)) - (await skew(run.a.url));
    expect(difference).toBeGreaterThan(44);
    expect(difference).toBeLessThan(46);
  });

  it("on each replica's own clock (local): six charges within one minute", async (ctx) => {
    run = await twoReplicasAroundMidnight('local');
    if (!run) return ctx.skip();
    const { statuses, spent } = await spendAcrossReplicas(run);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
    expect(spent).toBe(6 * PRICE);
  });
});
