// Issue 28 through real sockets: a gateway whose hot state is on Redis and whose money is on
// PostgreSQL (store.postgresUrl) against the emulator, whose ledger is the truth.
//
// 1. Redis lost: paid reads, then a private redis-server (no persistence) killed with SIGKILL
//    and started empty. A replica started after the loss (nothing in its memory) sees a ledger
//    equal to the emulator's, exact budgets, refuses the read that would pass the day cap (0
//    overspend), and still estimates a company charged before the loss at 0 (its window is in
//    PostgreSQL): that read goes through with no budget left.
// 2. PostgreSQL unreachable (a TCP proxy in front of it, closed with every connection cut): a
//    paid read answers 503 store_unavailable with Retry-After and never reaches the upstream; a
//    cached read still answers 200.
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.ts';
import { createStore } from '../../src/store/create-store.ts';
import { PostgresMoney } from '../../src/store/postgres/postgres-money.ts';
import type { Store } from '../../src/store/store.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { eventually, startPrivateRedis, uniquePrefix } from '../helpers/redis.ts';

const PRICE = 9_900;
const CAP = 5 * PRICE;

const db: TestDatabase | null = await createTestDatabase('money');
const redis = db ? await startPrivateRedis() : null;
if (db && !redis) console.warn('\n!!! money-postgres: NO redis-server, the Redis-loss case is SKIPPED !!!\n');

afterAll(async () => {
  await redis?.stop();
  await db?.drop();
});

async function migrated(url: string): Promise<void> {
  const money = new PostgresMoney({ url, sweepMs: 0 });
  await money.open();
  await money.close();
}

interface Me {
  gateway: { budgets: Array<{ scope: string; period: string; spent_minor: number; reserved_minor: number }> };
}

(db && redis ? describe : describe.skip)('Redis + PostgreSQL: Redis loses everything', () => {
  const prefix = uniquePrefix('pg-money');
  const stores: Store[] = [];
  let h: Harness;
  const make = (clock: Clock) => {
    const store = createStore({
      redisUrl: redis!.url,
      prefix,
      clock,
      cacheMaxBytes: 8 * 1024 * 1024,
      postgresUrl: db!.url,
      onError: () => {},
    });
    stores.push(store);
    return store;
  };

  beforeAll(async () => {
    await migrated(db!.url);
    h = await startHarness({
      apps: [{ name: 'capped', budgets: { day: { limitMinor: CAP } } }],
      config: { store: { stateDir: null, failoverWaitMs: 0 } },
      store: make,
    });
  });
  afterAll(async () => {
    await h?.close();
    for (const s of stores) await s.close().catch(() => {});
  });

  it('ledger equals the emulator, budgets exact, cap not overspent, charged companies still covered', async () => {
    const [a, b, c, d, e, f] = knownInns(6, 7100);
    const read = (url: string, inn: string) =>
      fetch(`${url}/v1/companies/${inn}`, { headers: { authorization: `Bearer ${h.tokens.capped}` } });
    for (const inn of [a, b, c]) expect((await read(h.gateway.url, inn!)).status).toBe(200);
    expect((await h.ledger()).totals).toMatchObject({ count: 3, amount_minor: 3 * PRICE });

    await redis!.kill('SIGKILL');
    await redis!.start(); // empty: nothing was persisted
    await eventually(() => h.gateway.store.ping(), 10_000);
    const replica = await h.addGateway(make(h.gateway.clock));

    // Ledger: what the emulator charged, entry for entry.
    const truth = (await h.ledger()).entries.map((x) => `${x.idempotency_key}:${x.amount_minor}`).sort();
    const ours = (await replica.store.readLedger(0, Number.MAX_SAFE_INTEGER))
      .map((x) => `${x.idempotencyKey}:${x.amountMinor}`)
      .sort();
    expect(ours).toEqual(truth);

    // Budgets: exact after the loss.
    const me = (await (
      await fetch(`${replica.url}/v1/me`, { headers: { authorization: `Bearer ${h.tokens.capped}` } })
    ).json()) as Me;
    const day = () => me.gateway.budgets.find((x) => x.scope === 'app' && x.period === 'day')!;
    expect(day()).toMatchObject({ spent_minor: 3 * PRICE, reserved_minor: 0 });

    // Two more fit under the cap; the next is refused: 0 overspend.
    for (const inn of [d, e]) expect((await read(replica.url, inn!)).status).toBe(200);
    const over = await read(replica.url, f!);
    expect(over.status).toBe(402);
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe('budget_exceeded');
    const after = await h.ledger();
    expect(after.totals).toMatchObject({ count: 5, amount_minor: CAP });

    // A company charged before the loss is still estimated 0: with no budget left, it is read.
    const again = await read(replica.url, a!);
    expect(again.status).toBe(200);
    expect((await h.ledger()).totals).toMatchObject({ count: 5, amount_minor: CAP });
    expect(await replica.store.windows(a!)).toMatchObject({ dossierUntil: expect.any(Number) });
    expect((await replica.store.windows(a!)).dossierUntil).toBeGreaterThan(replica.clock.now());
  });
});

/** A TCP proxy to PostgreSQL that a test can cut (every connection destroyed, port closed). */
async function startProxy(target: URL): Promise<{ url: string; cut(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = tcpConnect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    cut: async () => {
      const closed = new Promise((r) => server.close(r));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

(db ? describe : describe.skip)('PostgreSQL unreachable', () => {
  let h: Harness;
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  const stores: Store[] = [];

  beforeAll(async () => {
    await migrated(db!.url);
    proxy = await startProxy(new URL(db!.url));
    h = await startHarness({
      apps: [{ name: 'alpha' }],
      config: { store: { stateDir: null, failoverWaitMs: 0 } },
      store: (clock) => {
        const store = createStore({
          clock,
          cacheMaxBytes: 8 * 1024 * 1024,
          postgresUrl: proxy.url,
          postgresStatementTimeoutMs: 1_000,
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

  it('a paid read answers 503 store_unavailable with Retry-After, no upstream call; a cached read 200', async () => {
    const [cached, fresh] = knownInns(2, 7300);
    expect((await h.call('alpha', `/v1/companies/${cached}`)).status).toBe(200);
    await proxy.cut();
    const upstreamBefore = await h.upstreamCount();
    const paid = await h.call('alpha', `/v1/companies/${fresh}`);
    expect(paid.status).toBe(503);
    expect(paid.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(((await paid.json()) as { error: { code: string } }).error.code).toBe('store_unavailable');
    expect(await h.upstreamCount()).toBe(upstreamBefore);
    const hit = await h.call('alpha', `/v1/companies/${cached}`);
    expect(hit.status).toBe(200);
    expect(((await hit.json()) as { company: { inn: string } }).company.inn).toBe(cached);
    expect((await h.ledger()).totals.count).toBe(1);
  });
});
