// Walks every row of the spec's coverage-window table over real HTTP: what each read costs
// (X-Charged-Minor), which window it leaves, and expiry after 15 minutes of emulator time.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SECTION_NAMES } from '../../src/domain/requests.ts';
import { type Harness, knownInns, startHarness } from './emulator-harness.ts';

let h: Harness;
const inns = knownInns(12, 100);
let next = 0;
const freshInn = () => inns[next++]!;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());
beforeEach(async () => {
  await h.control('POST', '/reset');
});

const charged = (r: { headers: Headers }) => Number(r.headers.get('x-charged-minor'));
async function windowOf(inn: string): Promise<string | null> {
  const r = await h.control('GET', '/windows');
  return r.json.windows.find((w: { inn: string }) => w.inn === inn)?.kind ?? null;
}

describe('coverage window table', () => {
  it('no window + dossier read: charged at the dossier price, dossier window opens', async () => {
    const inn = freshInn();
    const r = await h.get(`/v1/companies/${inn}`);
    expect(r.status).toBe(200);
    expect(r.json.found).toBe(true);
    expect(charged(r)).toBe(9900);
    expect(await windowOf(inn)).toBe('dossier');
  });

  it('no window + section read: charged at the dossier price, dossier window opens', async () => {
    const inn = freshInn();
    const r = await h.get(`/v1/companies/${inn}/arbitration`);
    expect(r.status).toBe(200);
    expect(charged(r)).toBe(9900);
    expect(await windowOf(inn)).toBe('dossier');
    expect(charged(await h.get(`/v1/companies/${inn}`))).toBe(0);
  });

  it('no window + requisites read: charged at the requisites price, requisites window opens', async () => {
    const inn = freshInn();
    const r = await h.get(`/v1/requisites/${inn}`);
    expect(r.status).toBe(200);
    expect(r.json.inn).toBe(inn);
    expect(charged(r)).toBe(1500);
    expect(await windowOf(inn)).toBe('requisites');
  });

  it('dossier window open: dossier, every section, every page and requisites are free', async () => {
    const inn = freshInn();
    expect(charged(await h.get(`/v1/companies/${inn}`))).toBe(9900);
    expect(charged(await h.get(`/v1/companies/${inn}`))).toBe(0);
    for (const name of SECTION_NAMES) {
      const r = await h.get(`/v1/companies/${inn}/${name}`);
      expect(r.status, name).toBe(200);
      expect(charged(r), name).toBe(0);
      let cursor: unknown = r.json?.cursor;
      for (let page = 0; typeof cursor === 'string' && cursor !== '' && page < 3; page++) {
        const next = await h.get(`/v1/companies/${inn}/${name}?cursor=${encodeURIComponent(cursor)}`);
        expect(next.status, `${name} page`).toBe(200);
        expect(charged(next)).toBe(0);
        cursor = next.json.cursor;
      }
    }
    expect(charged(await h.get(`/v1/requisites/${inn}`))).toBe(0);
    const ledger = await h.control('GET', '/ledger');
    expect(ledger.json.totals.amount_minor).toBe(9900);
  });

  it('requisites window open: requisites again is free', async () => {
    const inn = freshInn();
    expect(charged(await h.get(`/v1/requisites/${inn}`))).toBe(1500);
    expect(charged(await h.get(`/v1/requisites/${inn}`))).toBe(0);
    expect(await windowOf(inn)).toBe('requisites');
  });

  it('requisites window open + dossier or section read: full dossier price, window becomes a dossier window', async () => {
    const a = freshInn();
    expect(charged(await h.get(`/v1/requisites/${a}`))).toBe(1500);
    expect(charged(await h.get(`/v1/companies/${a}`))).toBe(9900);
    expect(await windowOf(a)).toBe('dossier');
    expect(charged(await h.get(`/v1/companies/${a}/founders`))).toBe(0);
    expect(charged(await h.get(`/v1/requisites/${a}`))).toBe(0);

    const b = freshInn();
    expect(charged(await h.get(`/v1/requisites/${b}`))).toBe(1500);
    expect(charged(await h.get(`/v1/companies/${b}/taxes`))).toBe(9900);
    expect(await windowOf(b)).toBe('dossier');
  });

  it('a window expires after 15 minutes of emulator time and the next read is charged again', async () => {
    const inn = freshInn();
    const req = freshInn();
    expect(charged(await h.get(`/v1/companies/${inn}`))).toBe(9900);
    expect(charged(await h.get(`/v1/requisites/${req}`))).toBe(1500);
    await h.advance(15 * 60_000 - 5_000);
    expect(charged(await h.get(`/v1/companies/${inn}`))).toBe(0);
    expect(charged(await h.get(`/v1/requisites/${req}`))).toBe(0);
    await h.advance(5_000);
    expect(await windowOf(inn)).toBeNull();
    expect(charged(await h.get(`/v1/companies/${inn}`))).toBe(9900);
    expect(charged(await h.get(`/v1/requisites/${req}`))).toBe(1500);
  });

  it('windows are per company: another INN is charged', async () => {
    const [a, b] = [freshInn(), freshInn()];
    expect(charged(await h.get(`/v1/companies/${a}`))).toBe(9900);
    expect(charged(await h.get(`/v1/companies/${b}`))).toBe(9900);
  });
});
