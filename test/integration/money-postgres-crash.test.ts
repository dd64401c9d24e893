// Issue 28, "PostgreSQL stopped with -m immediate during paid traffic and restarted": a gateway
// whose money is on a private PostgreSQL server (never the shared one) serves 8 concurrent
// clients reading new companies under a day cap; the server is crashed (`pg_ctl stop -m
// immediate`: no checkpoint, crash recovery at the next start) mid-traffic and started again.
// Proves: nothing answers 500; once the outbox and the reconciler have settled, the gateway's
// ledger equals the emulator's (0 lost, 0 double), the day's spend equals the ledger, and the cap
// was never passed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/create-store.ts';
import { PostgresMoney } from '../../src/store/postgres/postgres-money.ts';
import type { Store } from '../../src/store/store.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { type PrivatePostgres, startPrivatePostgres } from '../helpers/postgres.ts';

const PRICE = 9_900;
const CAP = 30 * PRICE;
const CLIENTS = 8;

const server: PrivatePostgres | null = await startPrivatePostgres();
const maybe = server ? describe : describe.skip;

afterAll(async () => {
  await server?.destroy();
});

maybe('PostgreSQL crashed (-m immediate) under paid traffic', () => {
  let h: Harness;
  const stores: Store[] = [];

  beforeAll(async () => {
    const money = new PostgresMoney({ url: server!.url, sweepMs: 0 });
    await money.open();
    await money.close();
    h = await startHarness({
      apps: [{ name: 'capped', budgets: { day: { limitMinor: CAP } } }],
      config: {
        store: { stateDir: null, failoverWaitMs: 0 },
        cost: { leaseMs: 1_000, reconcileIntervalMs: 200 },
      },
      store: (clock) => {
        const store = createStore({
          clock,
          cacheMaxBytes: 8 * 1024 * 1024,
          postgresUrl: server!.url,
          postgresStatementTimeoutMs: 2_000,
          onError: () => {},
        });
        stores.push(store);
        return store;
      },
    });
  });
  afterAll(async () => {
    await h?.close();
    for (const s of stores) await s.close().catch(() => {});
  });

  it('0 lost, 0 double, spend equals the ledger, the cap held, no 500', async () => {
    const inns = knownInns(48, 7400);
    let next = 0;
    const statuses: number[] = [];
    let stop = false;
    const clients = Array.from({ length: CLIENTS }, async () => {
      while (!stop && next < inns.length) {
        const inn = inns[next++]!;
        const res = await h.call('capped', `/v1/companies/${inn}`);
        statuses.push(res.status);
        await res.arrayBuffer();
      }
    });
    // Mid-traffic: after the first answers, with calls in flight.
    while (statuses.length < CLIENTS && next < inns.length) await new Promise((r) => setTimeout(r, 10));
    await server!.crash();
    const crashedAfter = statuses.length;
    await new Promise((r) => setTimeout(r, 1_000));
    await server!.start();
    await Promise.all(clients);
    stop = true;

    // Settle: the outbox applies what failed to record, the reconciler resolves pending entries.
    const store = h.gateway.store;
    const deadline = Date.now() + 20_000;
    let ours: string[] = [];
    let truth: string[] = [];
    for (;;) {
      const pending = await store.pendingCharges().catch(() => [{}]);
      truth = (await h.ledger()).entries.map((e) => `${e.idempotency_key}:${e.amount_minor}`).sort();
      ours = (await store.readLedger(0, Number.MAX_SAFE_INTEGER).catch(() => []))
        .map((e) => `${e.idempotencyKey}:${e.amountMinor}`)
        .sort();
      if (pending.length === 0 && ours.length === truth.length) break;
      if (Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const count = (s: number) => statuses.filter((x) => x === s).length;
    console.info(
      `postgres crash under ${CLIENTS} clients: ${statuses.length} reads (${crashedAfter} before the crash): ` +
        `200 x${count(200)}, 402 x${count(402)}, 503 x${count(503)}, 504 x${count(504)}; ` +
        `emulator charged ${truth.length}, gateway ledger ${ours.length}`,
    );
    expect(statuses.filter((s) => s === 500)).toEqual([]);
    expect(count(503)).toBeGreaterThan(0); // the crash was seen
    expect(ours).toEqual(truth); // 0 lost
    expect(new Set(ours.map((x) => x.split(':')[0])).size).toBe(ours.length); // 0 double
    const total = truth.reduce((sum, x) => sum + Number(x.split(':')[1]), 0);
    expect(total).toBeLessThanOrEqual(CAP);
    const me = (await (await h.call('capped', '/v1/me')).json()) as {
      gateway: {
        budgets: Array<{ scope: string; period: string; spent_minor: number; reserved_minor: number }>;
      };
    };
    const day = me.gateway.budgets.find((b) => b.scope === 'app' && b.period === 'day');
    expect(day).toMatchObject({ spent_minor: total, reserved_minor: 0 });
  }, 60_000);
});
