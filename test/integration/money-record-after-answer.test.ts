// Issue 33, a paid miss's record after its answer, through real sockets: two gateway replicas
// share hot state on Redis and money on PostgreSQL in front of the emulator, whose ledger is the
// truth. The record is held back by a table lock on `cpgw.claims` (which only record_charge
// writes), taken by the test in a transaction of its own.
// Proves:
// - the app's answer to a paid read of a new company arrives while its record is held back,
//   charged the amount, with the window's end; the budget hold stays held until the record
//   settles it (a cap is never overspent meanwhile);
// - a no-cache read of the same company on the other replica during that time waits for the
//   company's lock, and once the record is applied goes covered: charged 0, one charge upstream,
//   one ledger row, spend = the charge, nothing reserved;
// - a read sent with an app Idempotency-Key still waits for its record (only the claim tells
//   whether an earlier request with that key was counted: X-Charged-Minor stays what it counted).
// On the old order (the answer after the record) the first case never answers while the lock is
// held, and the test fails there.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.ts';
import { createStore } from '../../src/store/create-store.ts';
import { PostgresMoney } from '../../src/store/postgres/postgres-money.ts';
import type { Store } from '../../src/store/store.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type GatewayInstance, type Harness, startHarness } from '../helpers/gateway-harness.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.ts';
import { startTestRedis, type TestRedis, uniquePrefix } from '../helpers/redis.ts';

const PRICE = 9_900;
const CAP = 5 * PRICE;

const db: TestDatabase | null = await createTestDatabase('after_answer');
const redis: TestRedis | null = db ? await startTestRedis() : null;

afterAll(async () => {
  await redis?.stop();
  await db?.drop();
});

interface Me {
  gateway: { budgets: Array<{ scope: string; period: string; spent_minor: number; reserved_minor: number }> };
}

/** Resolves to the value, or to 'pending' if it has not settled within `ms`. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'pending'>((resolve) => {
    timer = setTimeout(() => resolve('pending'), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A transaction holding `cpgw.claims` so no record_charge can commit until release(). */
async function holdRecords(url: string): Promise<{ release(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('BEGIN');
  await client.query('LOCK TABLE cpgw.claims IN EXCLUSIVE MODE');
  return {
    release: async () => {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

const maybe = db && redis ? describe : describe.skip;

maybe('a paid miss answered before its record (Redis + PostgreSQL)', () => {
  const prefix = uniquePrefix('after-answer');
  const stores: Store[] = [];
  let h: Harness;
  let replica: GatewayInstance;
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
    const money = new PostgresMoney({ url: db!.url, sweepMs: 0 });
    await money.open();
    await money.close();
    h = await startHarness({
      apps: [{ name: 'capped', budgets: { day: { limitMinor: CAP } } }],
      config: { store: { stateDir: null, failoverWaitMs: 0 } },
      store: make,
    });
    replica = await h.addGateway(make(h.gateway.clock));
  });
  afterAll(async () => {
    await h?.close();
    for (const s of stores) await s.close().catch(() => {});
  });

  const read = (url: string, inn: string, headers: Record<string, string> = {}) =>
    fetch(`${url}/v1/companies/${inn}`, {
      headers: { authorization: `Bearer ${h.tokens.capped}`, ...headers },
    });
  const day = async (url: string) => {
    const me = (await (
      await fetch(`${url}/v1/me`, { headers: { authorization: `Bearer ${h.tokens.capped}` } })
    ).json()) as Me;
    return me.gateway.budgets.find((b) => b.scope === 'app' && b.period === 'day')!;
  };
  const ledgerRows = async () => (await h.gateway.store.readLedger(0, Number.MAX_SAFE_INTEGER)).length;

  it('answers while the record is held; the other replica waits for it and goes covered', async () => {
    const [inn] = knownInns(1, 7700);
    const held = await holdRecords(db!.url);
    let released = false;
    try {
      const first = await within(read(h.gateway.url, inn!), 3_000);
      expect(first, 'the paid answer waited for its record').not.toBe('pending');
      const res = first as Response;
      expect(res.status).toBe(200);
      expect(res.headers.get('x-cache')).toBe('MISS');
      expect(res.headers.get('x-charged-minor')).toBe(String(PRICE));
      const expires = Date.parse(res.headers.get('x-window-expires') ?? '');
      expect(expires).toBeGreaterThan(Date.now());
      await res.arrayBuffer();

      // Charged upstream, not yet in the gateway's ledger; the hold still counts on the cap.
      expect((await h.ledger()).totals).toMatchObject({ count: 1, amount_minor: PRICE });
      expect(await ledgerRows()).toBe(0);
      expect(await day(replica.url)).toMatchObject({ spent_minor: 0, reserved_minor: PRICE });

      // The other replica's no-cache read of the company waits for the company's lock.
      const second = read(replica.url, inn!, { 'cache-control': 'no-cache' });
      expect(await within(second, 500), 'the second replica did not wait for the record').toBe('pending');

      await held.release();
      released = true;
      const covered = await second;
      expect(covered.status).toBe(200);
      expect(covered.headers.get('x-charged-minor')).toBe('0');
      await covered.arrayBuffer();
    } finally {
      if (!released) await held.release();
    }
    // One charge upstream, one row here, the spend settled, nothing held.
    expect((await h.ledger()).totals).toMatchObject({ count: 1, amount_minor: PRICE });
    expect(await ledgerRows()).toBe(1);
    expect(await day(replica.url)).toMatchObject({ spent_minor: PRICE, reserved_minor: 0 });
  });

  it("a read with the app's Idempotency-Key waits for its record", async () => {
    const [inn] = knownInns(1, 7710);
    const before = await ledgerRows();
    const held = await holdRecords(db!.url);
    let released = false;
    try {
      const pending = read(h.gateway.url, inn!, { 'idempotency-key': `app-key-${inn}` });
      expect(await within(pending, 700)).toBe('pending');
      await held.release();
      released = true;
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.headers.get('x-charged-minor')).toBe(String(PRICE));
      await res.arrayBuffer();
    } finally {
      if (!released) await held.release();
    }
    expect(await ledgerRows()).toBe(before + 1);
  });
});
