// Issue 33 step 2: a first-pass miss of a company's dossier or requisites with no cache entry
// goes on as closed while the cache stage's windows read lands (the lead, the lock, the charge
// open estimated as charged, the rate take), and is sent only if the store's windows agree.
// Two replicas share one store (money, windows, cache); each has its own window tracker, so the
// second has never seen the window the first one's charge opened. The second reads windows
// 150 ms late (test/helpers/faulty-store.ts delay), so its charge gate decides before the read
// lands and the open is estimated as charged.
// Proves: a requisites read on the second replica inside the first one's dossier window (no
// requisites entry cached) goes free (X-Charged-Minor 0, X-Cost-Estimate-Minor 0, no charge
// upstream), holds nothing afterwards, and is not refused by a day cap the dossier used up
// (the hold estimated on the wrong guess is given back and the read starts over: a 402 here
// would be the guess, not the budget), nor refused prices_unknown when no requisites price is
// known (the call is free: no price is needed).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { FaultyStore } from '../helpers/faulty-store.ts';
import { type GatewayInstance, type Harness, startHarness } from '../helpers/gateway-harness.ts';

const DOSSIER = 9_900;

let h: Harness;
let second: GatewayInstance;
beforeAll(async () => {
  h = await startHarness({ apps: [{ name: 'capped', budgets: { day: { limitMinor: DOSSIER } } }] });
  second = await h.addGateway(new FaultyStore(h.gateway.store).delay('windows', 150));
});
afterAll(() => h.close());

interface Me {
  gateway: { budgets: Array<{ scope: string; period: string; spent_minor: number; reserved_minor: number }> };
}

describe('the windows read beside the charge open', () => {
  it('a read inside a window this replica never saw goes free, even with the cap used up', async () => {
    const [inn] = knownInns(1, 7900);
    const auth = { authorization: `Bearer ${h.tokens.capped}` };
    const dossier = await fetch(`${h.gateway.url}/v1/companies/${inn}`, { headers: auth });
    expect(dossier.status).toBe(200);
    expect(dossier.headers.get('x-charged-minor')).toBe(String(DOSSIER));
    await dossier.arrayBuffer();

    const requisites = await fetch(`${second.url}/v1/requisites/${inn}`, { headers: auth });
    const body = await requisites.text();
    expect(requisites.status, body).toBe(200);
    expect(requisites.headers.get('x-charged-minor')).toBe('0');
    expect(requisites.headers.get('x-cost-estimate-minor')).toBe('0');
    expect(requisites.headers.get('x-window-expires')).not.toBeNull();

    const ledger = await h.ledger();
    expect(ledger.entries.filter((e) => e.inn === inn).map((e) => [e.kind, e.amount_minor])).toEqual([
      ['dossier', DOSSIER],
    ]);
    // The day is used up by the dossier: nothing else spent, nothing left held.
    await new Promise((r) => setTimeout(r, 50));
    const me = (await (await fetch(`${second.url}/v1/me`, { headers: auth })).json()) as Me;
    const day = me.gateway.budgets.find((b) => b.scope === 'app' && b.period === 'day')!;
    expect(day).toMatchObject({ spent_minor: DOSSIER, reserved_minor: 0 });
  });
});

describe('the windows read beside the charge open, prices unknown', () => {
  let p: Harness;
  let late: GatewayInstance;
  beforeAll(async () => {
    // /v1/me lists no prices for the whole test: the requisites price is never known.
    p = await startHarness({
      apps: [{ name: 'free' }, { name: 'capped', budgets: { day: { limitMinor: 10 * DOSSIER } } }],
      emulator: { nullPricesSeconds: 3_600 },
    });
    late = await p.addGateway(new FaultyStore(p.gateway.store).delay('windows', 150));
  });
  afterAll(() => p.close());

  it('a capped read inside a window its replica never saw is not refused prices_unknown', async () => {
    const [inn] = knownInns(1, 7950);
    // An uncapped app pays for the dossier (estimated 0 without a price): the window opens.
    const dossier = await fetch(`${p.gateway.url}/v1/companies/${inn}`, {
      headers: { authorization: `Bearer ${p.tokens.free}` },
    });
    expect(dossier.status).toBe(200);
    expect(dossier.headers.get('x-charged-minor')).toBe(String(DOSSIER));
    await dossier.arrayBuffer();

    const requisites = await fetch(`${late.url}/v1/requisites/${inn}`, {
      headers: { authorization: `Bearer ${p.tokens.capped}` },
    });
    const body = await requisites.text();
    expect(requisites.status, body).toBe(200);
    expect(requisites.headers.get('x-charged-minor')).toBe('0');
    expect((await p.ledger()).entries.filter((e) => e.inn === inn)).toHaveLength(1);
  });
});
