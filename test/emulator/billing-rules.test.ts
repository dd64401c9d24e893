// Billing rules over real HTTP: free operations stay free, /v1/me shows a price change
// only after the lag while the new price is charged at once, idempotent replays charge
// once, a dropped connection after the charge keeps the charge, and the ledger totals equal
// the sum of every X-Charged-Minor the client saw.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type Harness,
  knownInns,
  personInns,
  type Reply,
  startHarness,
  unknownInn,
} from './emulator-harness.ts';

let h: Harness;
const inns = knownInns(20, 700);
let next = 0;
const freshInn = () => inns[next++]!;
const charged = (r: Reply) => Number(r.headers.get('x-charged-minor'));

beforeAll(async () => {
  h = await startHarness({ priceLagSeconds: 60 });
});
afterAll(() => h.close());
beforeEach(async () => {
  await h.control('POST', '/reset');
});

async function total(): Promise<number> {
  return (await h.control('GET', '/ledger')).json.totals.amount_minor;
}

describe('billing rules', () => {
  it('free operations cost nothing: search, suggest, banks, polling, me, unknown INN, invalid INN', async () => {
    expect((await h.get('/v1/search?q=%D0%A1%D0%B1%D0%B5%D1%80')).status).toBe(200);
    expect((await h.get('/v1/suggest?q=7707')).status).toBe(200);
    expect((await h.get('/v1/banks/044525225')).status).toBe(200);
    expect((await h.get('/v1/me')).status).toBe(200);
    expect((await h.get(`/v1/companies/${unknownInn()}`)).status).toBe(404);
    expect((await h.get('/v1/companies/7707083894')).status).toBe(422);
    const check = await h.post('/v1/check', { inn: freshInn() });
    const before = await total();
    const poll = await h.get(`/v1/checks/${check.json.check_id}`);
    expect([200, 202]).toContain(poll.status);
    expect(await total()).toBe(before);
    expect(before).toBe(19900);
  });

  it('GET /v1/me lists prices and the wallet; a price change is charged at once but shown after the lag', async () => {
    const me = await h.get('/v1/me');
    expect(me.json.account).toEqual({ id: 1, name: expect.any(String) });
    expect(me.json.key).toEqual({
      name: 'emulator-key',
      environment: 'production',
      scopes: ['read:companies', 'read:checks', 'read:persons'],
      expires_at: null,
    });
    expect(me.json.wallet).toEqual({ balance_minor: 10_000_000, as_of: expect.stringMatching(/\+03:00$/) });
    expect(me.json.prices.map((p: { key: string }) => p.key)).toEqual([
      'requisites',
      'dossier',
      'check',
      'person',
      'ai_deep',
    ]);
    const changed = await h.control('POST', '/prices', { dossier: 12000 });
    expect(changed.json.charging.dossier).toBe(12000);
    const shown = async () =>
      (await h.get('/v1/me')).json.prices.find((p: { key: string }) => p.key === 'dossier').price_minor;
    expect(await shown()).toBe(9900);
    expect(charged(await h.get(`/v1/companies/${freshInn()}`))).toBe(12000);
    await h.advance(50_000);
    expect(await shown()).toBe(9900);
    await h.advance(10_000);
    expect(await shown()).toBe(12000);
    expect((await h.get('/v1/me')).json.wallet.balance_minor).toBe(10_000_000 - 12000);
  });

  it('a price withdrawn from sale disappears from /v1/me after the lag', async () => {
    await h.control('POST', '/prices', { ai_deep: null });
    await h.advance(60_000);
    const keys = (await h.get('/v1/me')).json.prices.map((p: { key: string }) => p.key);
    expect(keys).not.toContain('ai_deep');
  });

  it('the same Idempotency-Key and request replays the first answer and charges once', async () => {
    const inn = freshInn();
    const headers = { 'idempotency-key': 'dossier-1' };
    const first = await h.get(`/v1/companies/${inn}`, { headers });
    const replay = await h.get(`/v1/companies/${inn}`, { headers });
    expect(charged(first)).toBe(9900);
    expect(replay.status).toBe(200);
    expect(charged(replay)).toBe(9900);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.text).toBe(first.text);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    expect(await total()).toBe(9900);
    const ledger = (await h.control('GET', '/ledger')).json;
    expect(ledger.entries[0]).toMatchObject({
      idempotency_key: 'dossier-1',
      request_id: first.headers.get('x-request-id'),
    });
  });

  it('without a key every call after the window is a new charge; keys are per account', async () => {
    const other = await startHarness({ apiKeys: ['a;account=1', 'b;account=2'] });
    try {
      const inn = inns[19]!;
      const headers = { 'idempotency-key': 'shared' };
      expect(charged(await other.get(`/v1/requisites/${inn}`, { key: 'a', headers }))).toBe(1500);
      const b = await other.get(`/v1/requisites/${inn}`, { key: 'b', headers });
      expect(b.headers.get('idempotent-replayed')).toBeNull();
      expect(charged(b)).toBe(1500);
    } finally {
      await other.close();
    }
  });

  it('an idempotency key lives one day of emulator time', async () => {
    const inn = freshInn();
    const headers = { 'idempotency-key': 'day-key' };
    expect(charged(await h.get(`/v1/requisites/${inn}`, { headers }))).toBe(1500);
    await h.advance(24 * 3600_000 - 10_000);
    expect((await h.get(`/v1/requisites/${inn}`, { headers })).headers.get('idempotent-replayed')).toBe(
      'true',
    );
    await h.advance(10_000);
    const fresh = await h.get(`/v1/requisites/${inn}`, { headers });
    expect(fresh.headers.get('idempotent-replayed')).toBeNull();
    expect(charged(fresh)).toBe(1500);
  });

  it('drop_after_charge: the connection dies after the charge is recorded; a retry with the key replays', async () => {
    await h.control('POST', '/faults', { route: 'company', drop_after_charge: true });
    const inn = freshInn();
    const headers = { authorization: 'Bearer emulator-key', 'idempotency-key': 'drop-1' };
    const dropped = await fetch(`${h.url}/v1/companies/${inn}`, { headers }).catch((error: Error) => error);
    expect(dropped).toBeInstanceOf(Error);
    expect(await total()).toBe(9900);
    const retry = await h.get(`/v1/companies/${inn}`, { headers: { 'idempotency-key': 'drop-1' } });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await total()).toBe(9900);
  });

  it('person lookups are charged every time at the person price', async () => {
    const [person] = personInns(1, 40);
    const r1 = await h.get(`/v1/persons/${person}`);
    expect(r1.status, r1.text).toBe(200);
    expect(r1.json.inn).toBe(person);
    expect(charged(r1)).toBe(4900);
    expect(charged(await h.get(`/v1/persons/${person}`))).toBe(4900);
  });

  it('the ledger totals equal the sum of X-Charged-Minor over a mixed session', async () => {
    let seen = 0;
    const add = (r: Reply) => {
      seen += charged(r) || 0;
    };
    const [a, b, c] = [freshInn(), freshInn(), freshInn()];
    add(await h.get(`/v1/requisites/${a}`));
    add(await h.get(`/v1/companies/${a}`));
    add(await h.get(`/v1/companies/${a}/arbitration`));
    add(await h.get(`/v1/companies/${b}/founders`));
    add(await h.get(`/v1/requisites/${b}`));
    add(await h.post('/v1/check', { inn: c, purpose: 'requisites' }));
    add(await h.get(`/v1/persons/${personInns(1, 41)[0]}`));
    add(await h.get(`/v1/companies/${c}`, { headers: { 'idempotency-key': 'k' } }));
    add(await h.get(`/v1/companies/${c}`, { headers: { 'idempotency-key': 'k' } }));
    const ledger = (await h.control('GET', '/ledger')).json;
    const replayedCharge = 9900; // the replay repeats the original's X-Charged-Minor without a new charge
    expect(ledger.totals.amount_minor).toBe(seen - replayedCharge);
    const sum = ledger.entries.reduce((s: number, e: { amount_minor: number }) => s + e.amount_minor, 0);
    expect(ledger.totals.amount_minor).toBe(sum);
    expect(ledger.totals.by_kind.dossier).toEqual({ count: 3, amount_minor: 29700 });
  });
});
