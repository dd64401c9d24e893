// The gateway against an upstream whose /v1/me says "not yet known" (emulator
// --null-prices-seconds / --null-wallet-seconds): /v1/me and the admin API keep answering with
// `prices: null` and `wallet: null`; free calls and uncapped apps are never blocked; a capped
// app's paid call is refused with 503 prices_unknown (nothing goes upstream) until a price is
// known, and once one was known a later `prices: null` estimates from the last known price.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, json, startHarness } from '../helpers/gateway-harness.ts';

const CAP = 15_000; // one dossier (9900) fits, a second does not

describe('prices and wallet not yet known upstream', () => {
  let h: Harness;
  const inns = knownInns(6, 3100);
  beforeAll(async () => {
    h = await startHarness({
      apps: [
        // read:account: this test reads the wallet through /v1/me.
        {
          name: 'capped',
          scopes: ['read:companies', 'read:checks', 'read:account'],
          budgets: { day: { limitMinor: CAP } },
        },
        { name: 'open' },
      ],
      emulator: { nullPricesSeconds: 30, nullWalletSeconds: 30 },
      config: { cost: { pricesRefreshSeconds: 1 } },
    });
  });
  afterAll(() => h.close());

  const admin = (path: string) =>
    fetch(`${h.gateway.url}${path}`, { headers: { authorization: `Bearer ${h.adminToken}` } });

  it('/v1/me through the gateway and the admin API answer with prices and wallet null', async () => {
    const me = await h.call('capped', '/v1/me');
    expect(me.status).toBe(200);
    const body = await json(me);
    expect(body.prices).toBeNull();
    expect(body.wallet).toBeNull();
    expect(body.gateway).toMatchObject({ app: 'capped' });
    for (const path of [
      '/admin/budgets',
      '/admin/apps',
      '/admin/windows',
      '/admin/limits',
      '/admin/ledger',
    ]) {
      expect((await admin(path)).status, path).toBe(200);
    }
  });

  it('free calls of a capped app and paid calls of an uncapped app go through', async () => {
    expect((await h.call('capped', '/v1/banks/044525225')).status).toBe(200);
    expect((await h.call('capped', '/v1/suggest?q=%D1%80%D0%BE%D0%BC')).status).toBe(200);
    const paid = await h.call('open', `/v1/companies/${inns[0]}`);
    expect(paid.status).toBe(200);
    expect(paid.headers.get('x-charged-minor')).toBe('9900');
    // a capped app's read inside the window the open app paid for is free, so not refused
    expect((await h.call('capped', `/v1/companies/${inns[0]}`)).status).toBe(200);
  });

  it('a capped app`s paid call with no price ever known: 503 prices_unknown, Retry-After, nothing upstream', async () => {
    // Requisites: the dossier's price is known by now, learned from the open app's charge
    // (X-Charged-Minor, issue 28); no requisites read was ever charged.
    const requisitesCalls = async () =>
      ((await h.emu('/requests?route=requisites')) as { requests: unknown[] }).requests.length;
    const before = await requisitesCalls();
    const r = await h.call('capped', `/v1/requisites/${inns[1]}`);
    expect(r.status).toBe(503);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const body = (await json(r)) as {
      error: { code: string; details: unknown };
      meta: { request_id: string };
    };
    expect(body.error.code).toBe('prices_unknown');
    expect(body.error.details).toMatchObject({ kind: 'requisites', me_prices: 'null' });
    expect(body.meta.request_id).toBe(r.headers.get('x-request-id'));
    expect(await requisitesCalls()).toBe(before);
    expect((await h.ledger()).entries.filter((e) => e.inn === inns[1])).toHaveLength(0);
  });

  it("a charge teaches the price /v1/me does not show yet: the capped app's dossier read is reserved at it", async () => {
    const paid = await h.call('capped', `/v1/companies/${inns[5]}`);
    expect(paid.status).toBe(200);
    expect(paid.headers.get('x-charged-minor')).toBe('9900');
    expect((await json(await h.call('capped', '/v1/me'))).prices).toBeNull();
    // 9,900 of 15,000 spent: a second dossier (estimated 9,900 though /v1/me lists no price) is refused.
    const refused = await h.call('capped', `/v1/companies/${inns[3]}`);
    expect(refused.status).toBe(402);
    // back to no spend for the next case: a new day
    h.advance(86_400_000);
  });

  it('once /v1/me lists prices the call is reserved and charged; a later prices: null estimates from the last known price', async () => {
    h.advance(30_000);
    await eventually(async () => (await json(await h.call('capped', '/v1/me'))).prices !== null, 10_000);
    const paid = await h.call('capped', `/v1/companies/${inns[2]}`);
    expect(paid.status).toBe(200);
    expect(paid.headers.get('x-charged-minor')).toBe('9900');
    expect((await json(await h.call('capped', '/v1/me'))).wallet).toMatchObject({
      balance_minor: expect.any(Number),
    });

    await h.emu('/modes', { null_prices_seconds: 600 });
    await eventually(async () => (await json(await h.call('capped', '/v1/me'))).prices === null, 10_000);
    const refused = await h.call('capped', `/v1/companies/${inns[3]}`);
    expect(refused.status).toBe(402);
    const body = (await json(refused)) as { error: { code: string; details: Record<string, unknown> } };
    expect(body.error.code).toBe('budget_exceeded');
    expect(body.error.details).toMatchObject({ estimate_minor: 9900, spent_minor: 9900, limit_minor: CAP });
    expect((await h.call('capped', '/v1/banks/044525225')).status).toBe(200);
    expect((await h.call('open', `/v1/companies/${inns[4]}`)).status).toBe(200);
  });
});
