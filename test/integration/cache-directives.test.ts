// Request Cache-Control over real HTTP (issue #5, RFC 9111 §5.2.1): max-age=0 and max-age=N
// refuse a copy older than N s, no-cache always asks the upstream, only-if-cached never does
// (504 not_cached, nothing spent), and max-stale[=N] accepts a copy up to N s (or any
// amount) past its max age. The emulator's request log says whether the upstream was asked,
// its ledger what was charged; ages are the defaults of src/cache/cache-config.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MAX_AGE_MS } from '../../src/cache/cache-config.ts';
import { DEFAULT_PRICES } from '../../src/emulator/emulator-config.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const DOSSIER_MAX_AGE_S = DEFAULT_MAX_AGE_MS.dossier / SECOND; // 6 h
const BANK_MAX_AGE_S = DEFAULT_MAX_AGE_MS.bank / SECOND; // 24 h
const DOSSIER_PRICE = String(DEFAULT_PRICES.dossier);
/** Past the 15-minute window (and the gateway's 30 s safety margin): reads cost money again. */
const PAST_WINDOW_MS = 20 * MINUTE;

let h: Harness;
beforeAll(async () => {
  // Short check timings: the only-if-cached check test must not wait 10 s for a 202 ticket.
  // No dossier prefetch (sections-from-dossier.test.ts covers it): these tests count each path's upstream reads.
  h = await startHarness({
    emulator: { checkSeconds: 0.05, checkWaitSeconds: 0.05 },
    config: { cache: { prefetchDossier: false } },
  });
});
afterAll(() => h.close());

interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

async function get(path: string, cacheControl?: string): Promise<Answer> {
  const res = await h.call('alpha', path, cacheControl ? { headers: { 'cache-control': cacheControl } } : {});
  return { status: res.status, headers: res.headers, body: await res.text() };
}

/** Upstream calls for exactly this path, from the emulator's request log. */
async function upstreamCalls(path: string): Promise<number> {
  const log = (await h.emu('/requests')) as { requests: Array<{ path: string }> };
  return log.requests.filter((r) => r.path === path).length;
}

/** Charges the emulator recorded for one INN. */
async function chargesFor(inn: string): Promise<number> {
  return (await h.ledger()).entries.filter((e) => e.inn === inn).length;
}

/** The Age header in s: the harness clocks also run in real time, so allow one second of drift. */
function expectAge(a: Answer, seconds: number): void {
  expect([seconds, seconds + 1]).toContain(Number(a.headers.get('age')));
}

describe('request Cache-Control', () => {
  it('the harness runs on the default max ages', () => {
    expect(h.config.cache.maxAgeMs).toMatchObject({
      dossier: DEFAULT_MAX_AGE_MS.dossier,
      bank: DEFAULT_MAX_AGE_MS.bank,
    });
    expect(h.config.cache.maxStaleMs).toBe(24 * 60 * MINUTE);
  });

  it('max-age=0: a stored copy is not served; the refetch is free inside the open window and paid after it', async () => {
    const [inn] = knownInns(1, 3100);
    const path = `/v1/companies/${inn}`;
    const first = await get(path);
    expect(first.headers.get('x-cache')).toBe('MISS');
    expect(first.headers.get('x-charged-minor')).toBe(DOSSIER_PRICE);

    h.advance(SECOND); // the copy is 1 s old: fresh, but older than 0 s
    const inWindow = await get(path, 'max-age=0');
    expect(inWindow.status).toBe(200);
    expect(inWindow.headers.get('x-cache')).toBe('MISS');
    expect(inWindow.headers.get('age')).toBe('0');
    expect(inWindow.headers.get('x-charged-minor')).toBe('0');
    expect(inWindow.body).toBe(first.body);
    expect(await upstreamCalls(path)).toBe(2);
    expect(await chargesFor(inn!)).toBe(1);

    h.advance(PAST_WINDOW_MS);
    const plain = await get(path); // still fresh (6 h): a plain read is a free HIT
    expect(plain.headers.get('x-cache')).toBe('HIT');
    expect(plain.headers.get('x-charged-minor')).toBe('0');
    const paid = await get(path, 'max-age=0');
    expect(paid.headers.get('x-cache')).toBe('MISS');
    expect(paid.headers.get('x-charged-minor')).toBe(DOSSIER_PRICE);
    expect(await upstreamCalls(path)).toBe(3);
    expect(await chargesFor(inn!)).toBe(2);
  });

  it('max-age=N: a copy younger than N s is served, an older one is fetched again and replaces it', async () => {
    const [inn] = knownInns(1, 3200);
    const path = `/v1/companies/${inn}`;
    expect((await get(path)).headers.get('x-cache')).toBe('MISS');
    h.advance(PAST_WINDOW_MS); // 1,200 s old; the window has closed, so a refetch costs money

    const younger = await get(path, 'max-age=1500');
    expect(younger.headers.get('x-cache')).toBe('HIT');
    expectAge(younger, 1200);
    expect(younger.headers.get('x-charged-minor')).toBe('0');
    expect(await upstreamCalls(path)).toBe(1);

    const older = await get(path, 'max-age=1199');
    expect(older.headers.get('x-cache')).toBe('MISS');
    expect(older.headers.get('age')).toBe('0');
    expect(older.headers.get('x-charged-minor')).toBe(DOSSIER_PRICE);
    expect(await upstreamCalls(path)).toBe(2);
    expect(await chargesFor(inn!)).toBe(2);

    h.advance(10 * SECOND);
    const replaced = await get(path, 'max-age=1199');
    expect(replaced.headers.get('x-cache')).toBe('HIT');
    expectAge(replaced, 10);
    expect(await upstreamCalls(path)).toBe(2);
  });

  it('no-cache: goes upstream although the copy is fresh (X-Cache: MISS), and the answer replaces the copy', async () => {
    const bic = '044525593';
    const path = `/v1/banks/${bic}`;
    expect((await get(path)).headers.get('x-cache')).toBe('MISS');
    h.advance(MINUTE);
    const hit = await get(path);
    expect(hit.headers.get('x-cache')).toBe('HIT');
    expectAge(hit, 60);
    expect(await upstreamCalls(path)).toBe(1);

    for (const n of [2, 3]) {
      const forced = await get(path, 'no-cache');
      expect(forced.status).toBe(200);
      expect(forced.headers.get('x-cache')).toBe('MISS');
      expect(forced.headers.get('age')).toBe('0');
      expect(forced.body).toBe(hit.body);
      expect(await upstreamCalls(path)).toBe(n);
    }
    h.advance(10 * SECOND);
    const after = await get(path);
    expect(after.headers.get('x-cache')).toBe('HIT');
    expectAge(after, 10); // the copy no-cache fetched, not the 70 s old one
    expect(await upstreamCalls(path)).toBe(3);
  });

  it('no-cache on a dossier inside its open window goes upstream for free', async () => {
    const [inn] = knownInns(1, 3300);
    const path = `/v1/companies/${inn}`;
    expect((await get(path)).headers.get('x-charged-minor')).toBe(DOSSIER_PRICE);
    const forced = await get(path, 'no-cache');
    expect(forced.headers.get('x-cache')).toBe('MISS');
    expect(forced.headers.get('x-charged-minor')).toBe('0');
    expect(await upstreamCalls(path)).toBe(2);
    expect(await chargesFor(inn!)).toBe(1);
  });

  it('only-if-cached: a stored copy is a HIT; a miss is 504 not_cached with no upstream call and no charge', async () => {
    const bank = '/v1/banks/044525974';
    expect((await get(bank)).headers.get('x-cache')).toBe('MISS');
    const hit = await get(bank, 'only-if-cached');
    expect(hit.status).toBe(200);
    expect(hit.headers.get('x-cache')).toBe('HIT');
    expect(await upstreamCalls(bank)).toBe(1);

    const [inn] = knownInns(1, 3400);
    const path = `/v1/companies/${inn}`;
    const chargesBefore = (await h.ledger()).totals;
    const miss = await get(path, 'only-if-cached');
    expect(miss.status).toBe(504);
    // A charged route's refusal says what it cost: nothing.
    expect(miss.headers.get('x-charged-minor')).toBe('0');
    const envelope = JSON.parse(miss.body) as {
      error: { code: string; message: string };
      meta: { request_id: string };
    };
    expect(envelope.error.code).toBe('not_cached');
    expect(envelope.error.message).toBe('No cached answer and only-if-cached was requested');
    expect(envelope.meta.request_id).toBe(miss.headers.get('x-request-id'));
    expect(await upstreamCalls(path)).toBe(0);
    expect((await h.ledger()).totals).toEqual(chargesBefore);
  });

  it('only-if-cached with a copy the other directives refuse is 504 too, never an upstream call', async () => {
    const [inn] = knownInns(1, 3500);
    const path = `/v1/companies/${inn}`;
    await get(path);
    h.advance(SECOND);
    for (const cc of ['only-if-cached, max-age=0', 'only-if-cached, no-cache', 'no-cache, only-if-cached']) {
      const refused = await get(path, cc);
      expect(refused.status).toBe(504);
      expect((JSON.parse(refused.body) as { error: { code: string } }).error.code).toBe('not_cached');
    }
    h.advance((DOSSIER_MAX_AGE_S + 60) * SECOND); // past its max age
    expect((await get(path, 'only-if-cached')).status).toBe(504);
    const stale = await get(path, 'only-if-cached, max-stale=120');
    expect(stale.status).toBe(200);
    expect(stale.headers.get('x-cache')).toBe('STALE');
    expect(await upstreamCalls(path)).toBe(1);
    expect(await chargesFor(inn!)).toBe(1);
  });

  it('only-if-cached inside an open window serves a copy a plain read would refresh', async () => {
    const [inn] = knownInns(1, 3600);
    const path = `/v1/companies/${inn}`;
    await get(path);
    h.advance(PAST_WINDOW_MS); // copy 1,200 s old; the window closed
    // A section read outside a window pays and opens a new dossier window for the company.
    const section = await get(`${path}/founders`);
    expect(section.headers.get('x-charged-minor')).toBe(DOSSIER_PRICE);

    const cached = await get(path, 'only-if-cached');
    expect(cached.headers.get('x-cache')).toBe('HIT');
    expectAge(cached, 1200);
    expect(await upstreamCalls(path)).toBe(1);
    // A plain read refreshes it (older than the 15-minute in-window refresh age) for free.
    const refreshed = await get(path);
    expect(refreshed.headers.get('x-cache')).toBe('MISS');
    expect(refreshed.headers.get('x-charged-minor')).toBe('0');
    expect(await upstreamCalls(path)).toBe(2);
    expect(await chargesFor(inn!)).toBe(2);
  });

  // Routes the cache never stores (POST /v1/check, /v1/openapi.json) skip the cache stage; the
  // handler still honours only-if-cached for them (RFC 9111 5.2.1.7: a stored answer or 504).
  it('only-if-cached on POST /v1/check (never stored) is 504 not_cached, with no paid upstream call', async () => {
    const [inn] = knownInns(1, 3450);
    const before = (await h.ledger()).totals;
    const res = await h.call('alpha', '/v1/check', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'cache-control': 'only-if-cached' },
      body: JSON.stringify({ inn }),
    });
    const body = await res.text();
    expect(res.status).toBe(504);
    expect((JSON.parse(body) as { error: { code: string } }).error.code).toBe('not_cached');
    expect(await upstreamCalls('/v1/check')).toBe(0);
    expect((await h.ledger()).totals).toEqual(before);
  });

  it('max-stale=N: a copy stale by up to N s is served (STALE, its real Age, free); beyond N it is fetched and paid', async () => {
    const [inn] = knownInns(1, 3700);
    const path = `/v1/companies/${inn}`;
    expect((await get(path)).headers.get('x-charged-minor')).toBe(DOSSIER_PRICE);
    h.advance((DOSSIER_MAX_AGE_S + 100) * SECOND); // stale by 100 s, no window open

    const within = await get(path, 'max-stale=300');
    expect(within.status).toBe(200);
    expect(within.headers.get('x-cache')).toBe('STALE');
    expectAge(within, DOSSIER_MAX_AGE_S + 100);
    expect(within.headers.get('x-charged-minor')).toBe('0');
    expect(await upstreamCalls(path)).toBe(1);
    expect(await chargesFor(inn!)).toBe(1);

    const beyond = await get(path, 'max-stale=99');
    expect(beyond.status).toBe(200);
    expect(beyond.headers.get('x-cache')).toBe('MISS');
    expect(beyond.headers.get('age')).toBe('0');
    expect(beyond.headers.get('x-charged-minor')).toBe(DOSSIER_PRICE);
    expect(await upstreamCalls(path)).toBe(2);
    expect(await chargesFor(inn!)).toBe(2);

    const renewed = await get(path, 'max-stale=300'); // the copy just fetched, fresh again
    expect(renewed.headers.get('x-cache')).toBe('HIT');
    expect(await upstreamCalls(path)).toBe(2);
  });

  it('max-stale without a value accepts any staleness the store still holds (max age + 24 h)', async () => {
    const path = '/v1/banks/044525823';
    expect((await get(path)).headers.get('x-cache')).toBe('MISS');
    h.advance((BANK_MAX_AGE_S + 20 * 3600) * SECOND); // stale by 20 h

    const any = await get(path, 'max-stale');
    expect(any.status).toBe(200);
    expect(any.headers.get('x-cache')).toBe('STALE');
    expectAge(any, BANK_MAX_AGE_S + 20 * 3600);
    expect(await upstreamCalls(path)).toBe(1);

    const tighter = await get(path, 'max-stale, max-stale=3600'); // a number beats the bare form
    expect(tighter.headers.get('x-cache')).toBe('MISS');
    expect(await upstreamCalls(path)).toBe(2);

    // The store keeps an entry max age + maxStaleMs (24 h + 24 h); past that nothing is left to serve.
    h.advance((BANK_MAX_AGE_S + 25 * 3600) * SECOND);
    const gone = await get(path, 'max-stale');
    expect(gone.headers.get('x-cache')).toBe('MISS');
    expect(await upstreamCalls(path)).toBe(3);
  });

  it('max-stale inside an open window: a stale copy it would accept is refreshed for free instead', async () => {
    const [inn] = knownInns(1, 3800);
    const path = `/v1/companies/${inn}`;
    await get(path);
    h.advance((DOSSIER_MAX_AGE_S + 100) * SECOND); // stale by 100 s
    expect((await get(`${path}/management`)).headers.get('x-charged-minor')).toBe(DOSSIER_PRICE); // opens a window
    const refreshed = await get(path, 'max-stale=300');
    expect(refreshed.headers.get('x-cache')).toBe('MISS');
    expect(refreshed.headers.get('x-charged-minor')).toBe('0');
    expect(await upstreamCalls(path)).toBe(2);
    expect(await chargesFor(inn!)).toBe(2);
  });
});
