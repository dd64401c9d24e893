// Spend caps hold under concurrency: with a budget of exactly two dossier prices, 10
// concurrent requests for 10 new companies make exactly two charges and eight 402
// budget_exceeded, with the memory store and with two gateway replicas on one Redis.
// Calendar days and months in the configured zone reset budgets; a failed or abandoned
// request leaves no reservation behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import {
  type Harness,
  type ReplicaHarness,
  startHarness,
  startRedisReplicas,
} from '../helpers/gateway-harness.ts';

const CAP = 2 * 9900;

async function raceTenCompanies(h: Harness, urls: string[], start: number) {
  const inns = knownInns(10, start);
  const results = await Promise.all(
    inns.map((inn, i) =>
      fetch(`${urls[i % urls.length]}/v1/companies/${inn}`, {
        headers: { authorization: `Bearer ${h.tokens.capped}` },
      }),
    ),
  );
  const bodies = await Promise.all(
    results.map((r) => r.json() as Promise<{ error?: { code: string; details: Record<string, unknown> } }>),
  );
  const charges = (await h.ledger()).entries.filter((e) => inns.includes(e.inn));
  return { results, bodies, charges };
}

function expectExactlyTwo({ results, bodies, charges }: Awaited<ReturnType<typeof raceTenCompanies>>) {
  expect(results.filter((r) => r.status === 200)).toHaveLength(2);
  expect(results.filter((r) => r.status === 402)).toHaveLength(8);
  for (const b of bodies.filter((b) => b.error)) {
    expect(b.error!.code).toBe('budget_exceeded');
    expect(b.error!.details).toMatchObject({
      app: 'capped',
      period: 'day',
      limit_minor: CAP,
      estimate_minor: 9900,
    });
  }
  expect(charges).toHaveLength(2);
  expect(charges.reduce((s, c) => s + c.amount_minor, 0)).toBe(CAP);
}

describe('budget caps with the memory store', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      apps: [{ name: 'capped', budgets: { day: { limitMinor: CAP } } }, { name: 'free' }],
    });
  });
  afterAll(() => h.close());

  it('10 concurrent requests, cap of two dossier prices: two charges, eight 402, spend equals the cap', async () => {
    const keyUsed = async () => {
      const state = (await (
        await fetch(`${h.gateway.url}/admin/limits`, { headers: { authorization: `Bearer ${h.adminToken}` } })
      ).json()) as { classes: Array<{ name: string; used: number }> };
      return state.classes.find((c) => c.name === 'key')?.used ?? -1;
    };
    const usedBefore = await keyUsed();
    const outcome = await raceTenCompanies(h, [h.gateway.url], 500);
    expectExactlyTwo(outcome);
    // A refused charge's rate slot (taken alongside its budget step) is given back: the key log
    // counts the two calls that went, not the eight refused.
    expect((await keyUsed()) - usedBefore).toBe(2);
    const me = (await (await h.call('capped', '/v1/me')).json()) as {
      gateway: { budgets: Array<Record<string, unknown>> };
    };
    const day = me.gateway.budgets.find((b) => b.scope === 'app' && b.period === 'day')!;
    expect(day).toMatchObject({ limit_minor: CAP, spent_minor: CAP, reserved_minor: 0, remaining_minor: 0 });
  });

  it("another app is not limited by this app's cap", async () => {
    const [inn] = knownInns(1, 520);
    expect((await h.call('free', `/v1/companies/${inn}`)).status).toBe(200);
  });

  it('free reads stay allowed over the cap (inside a window, banks, search)', async () => {
    const inns = (await h.ledger()).entries.filter((e) => e.kind === 'dossier').map((e) => e.inn);
    expect((await h.call('capped', `/v1/companies/${inns[0]}/taxes`)).status).toBe(200);
    expect((await h.call('capped', '/v1/banks/044525225')).status).toBe(200);
  });
});

describe('budget caps with two gateway replicas on one Redis', () => {
  let replicas: ReplicaHarness | null;
  beforeAll(async () => {
    replicas = await startRedisReplicas({
      apps: [{ name: 'capped', budgets: { day: { limitMinor: CAP } } }],
    });
  });
  afterAll(() => replicas?.close());

  it('holds the cap exactly across replicas', async (ctx) => {
    if (!replicas) ctx.skip();
    const { h, second } = replicas!;
    expect(second.url).not.toBe(h.gateway.url);
    expectExactlyTwo(await raceTenCompanies(h, [h.gateway.url, second.url], 600));
  });
});

describe('calendar periods in the configured time zone', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      apps: [{ name: 'capped', budgets: { day: { limitMinor: 9900 }, month: { limitMinor: 3 * 9900 } } }],
      config: { cost: { timeZone: 'Europe/Moscow' } },
    });
  });
  afterAll(() => h.close());

  const setGatewayTime = (iso: string) => {
    const clock = h.gateway.clock;
    clock.advance(Date.parse(iso) - clock.now());
  };
  const read = async (start: number) =>
    (await h.call('capped', `/v1/companies/${knownInns(1, start)[0]}`)).status;

  it('a new local day (midnight in Moscow, not UTC) resets the daily budget', async () => {
    setGatewayTime('2026-03-30T20:30:00Z'); // 23:30 in Moscow on 30 March
    expect(await read(700)).toBe(200);
    expect(await read(701)).toBe(402);
    setGatewayTime('2026-03-30T20:59:00Z'); // 23:59 Moscow: still the same day
    expect(await read(702)).toBe(402);
    setGatewayTime('2026-03-30T21:01:00Z'); // 00:01 Moscow on 31 March (still 30 March in UTC)
    expect(await read(703)).toBe(200);
  });

  it('a new local month resets the monthly budget', async () => {
    const m = await startHarness({
      apps: [{ name: 'capped', budgets: { day: { limitMinor: 2 * 9900 }, month: { limitMinor: 3 * 9900 } } }],
    });
    try {
      const clock = m.gateway.clock;
      const at = (iso: string) => clock.advance(Date.parse(iso) - clock.now());
      const readM = async (start: number) =>
        (await m.call('capped', `/v1/companies/${knownInns(1, start)[0]}`)).status;
      at('2026-03-30T09:00:00Z');
      expect(await readM(720)).toBe(200);
      expect(await readM(721)).toBe(200);
      at('2026-03-31T10:00:00Z');
      expect(await readM(722)).toBe(200); // three dossiers this month: the monthly cap is reached
      const refused = await m.call('capped', `/v1/companies/${knownInns(1, 723)[0]}`);
      expect(refused.status).toBe(402);
      expect(
        ((await refused.json()) as { error: { details: { period: string } } }).error.details.period,
      ).toBe('month');
      at('2026-03-31T21:00:01Z'); // 00:00:01 on 1 April in Moscow, still March in UTC
      expect(await readM(724)).toBe(200);
    } finally {
      await m.close();
    }
  });
});

describe('no phantom reservations', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ apps: [{ name: 'capped', budgets: { day: { limitMinor: 9900 } } }] });
  });
  afterAll(() => h.close());

  const budget = async () => {
    const res = await fetch(`${h.gateway.url}/admin/budgets`, {
      headers: { authorization: `Bearer ${h.adminToken}` },
    });
    const body = (await res.json()) as { budgets: Record<string, Array<Record<string, number | string>>> };
    return body.budgets.capped!.find((b) => b.period === 'day')!;
  };

  it('a failed upstream call releases its reservation', async () => {
    await h.emu('/faults', { route: 'company', count: 1, status: 502 });
    const failed = await h.call('capped', `/v1/companies/${knownInns(1, 800)[0]}`);
    expect(failed.status).toBe(502);
    expect(await budget()).toMatchObject({ spent_minor: 0, reserved_minor: 0 });
  });

  it('a client that goes away mid-call leaves no hold; the paid call completes and is accounted', async () => {
    await h.emu('/faults', { route: 'company', count: 1, latency_ms: 400 });
    const controller = new AbortController();
    const pending = h
      .call('capped', `/v1/companies/${knownInns(1, 810)[0]}`, { signal: controller.signal })
      .catch((e: Error) => e);
    await new Promise((r) => setTimeout(r, 100));
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    await new Promise((r) => setTimeout(r, 600));
    const after = await budget();
    expect(after.reserved_minor).toBe(0);
    const charged = (await h.ledger()).totals.amount_minor;
    expect(after.spent_minor).toBe(charged);
  });

  it('after failures, the cap still admits exactly what it should (no phantom 402)', async () => {
    const spent = Number((await budget()).spent_minor);
    const status = (await h.call('capped', `/v1/companies/${knownInns(1, 820)[0]}`)).status;
    expect(status).toBe(spent === 0 ? 200 : 402);
  });
});

describe('a refused budget step while the rate queue is full', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      apps: [{ name: 'capped', budgets: { day: { limitMinor: 100 } }, limits: { caps: { key: 1 } } }],
    });
  });
  afterAll(() => h.close());

  it('is answered 402 at once: the rate wait it started alongside is left, nothing is sent', async () => {
    // The app's one key call of the minute is spent: its next call would wait for the minute.
    expect((await h.call('capped', '/v1/banks/044525225')).status).toBe(200);
    const [inn] = knownInns(1, 540);
    const before = ((await h.emu('/requests?route=company')) as { requests: unknown[] }).requests.length;
    // Allowed to wait two minutes for its slot: only leaving the queue when the budget step
    // refuses answers it before the test's own timeout.
    const res = await h.call('capped', `/v1/companies/${inn}`, { headers: { 'x-max-wait-ms': '120000' } });
    expect(res.status).toBe(402);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('budget_exceeded');
    const after = ((await h.emu('/requests?route=company')) as { requests: unknown[] }).requests.length;
    expect(after).toBe(before);
    expect(await h.gateway.store.pendingCharges()).toEqual([]);
  });
});
