// Walks every row of the spec's fresh-check lifecycle table: 200 within the wait, 202 with
// the charge made at once, collection that survives a client disconnect, free polling (202
// then 200), and the coverage window opening when the data is ready, not at creation.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { eventually, type Harness, knownInns, startHarness, unknownInn } from './emulator-harness.ts';

let slow: Harness; // collection 60 s, wait 0.1 s: every cold check answers 202
let quick: Harness; // collection 0.05 s, wait 2 s: every cold check answers 200
const inns = knownInns(12, 300);
let next = 0;
const freshInn = () => inns[next++]!;
const charged = (r: { headers: Headers }) => Number(r.headers.get('x-charged-minor'));

beforeAll(async () => {
  slow = await startHarness({ checkSeconds: 60, checkWaitSeconds: 0.1 });
  quick = await startHarness({ checkSeconds: 0.05, checkWaitSeconds: 2 });
});
afterAll(async () => {
  await slow.close();
  await quick.close();
});
beforeEach(async () => {
  await slow.control('POST', '/reset');
  await quick.control('POST', '/reset');
});

describe('fresh check lifecycle', () => {
  it('data collected within the wait: 200 with the dossier, charged at the check price', async () => {
    const inn = freshInn();
    const r = await quick.post('/v1/check', { inn });
    expect(r.status).toBe(200);
    expect(r.json.found).toBe(true);
    expect(r.json.company.inn).toBe(inn);
    expect(charged(r)).toBe(19900);
    const ledger = await quick.control('GET', '/ledger');
    expect(ledger.json.entries).toMatchObject([{ kind: 'check', inn, amount_minor: 19900 }]);
  });

  it('purpose requisites within the wait: 200 {found, requisites}, charged at the requisites price', async () => {
    const inn = freshInn();
    const r = await quick.post('/v1/check', { inn, purpose: 'requisites' });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ found: true, requisites: { inn } });
    expect(charged(r)).toBe(1500);
    const windows = await quick.control('GET', '/windows');
    expect(windows.json.windows).toMatchObject([{ inn, kind: 'requisites' }]);
  });

  it('not ready after the wait: 202 ticket with Retry-After, charged at once; polls are free 202 then 200', async () => {
    const inn = freshInn();
    const r = await slow.post('/v1/check', { inn });
    expect(r.status).toBe(202);
    expect(r.json).toMatchObject({ status: 'running', inn });
    expect(r.json.check_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.json.poll_url).toBe(`${slow.url}/v1/checks/${r.json.check_id}`);
    expect(r.json.created_at).toMatch(/\+03:00$/);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(55);
    expect(charged(r)).toBe(19900);
    const before = await slow.control('GET', '/ledger');
    expect(before.json.totals.amount_minor).toBe(19900);
    expect(before.json.entries[0].check_id).toBe(r.json.check_id);

    const poll = await slow.get(`/v1/checks/${r.json.check_id}`);
    expect(poll.status).toBe(202);
    expect(poll.json.check_id).toBe(r.json.check_id);
    expect(Number(poll.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(charged(poll)).toBe(0);

    await slow.advance(60_000);
    const done = await slow.get(`/v1/checks/${r.json.check_id}`);
    expect(done.status).toBe(200);
    expect(done.json).toMatchObject({ found: true, company: { inn } });
    expect(charged(done)).toBe(0);
    const after = await slow.control('GET', '/ledger');
    expect(after.json.totals.amount_minor).toBe(19900);
  });

  it('the coverage window opens from the moment the data is ready, not at creation', async () => {
    const inn = freshInn();
    const r = await slow.post('/v1/check', { inn });
    expect(r.status).toBe(202);
    expect((await slow.control('GET', '/windows')).json.windows).toEqual([]);
    await slow.advance(60_000);
    const [window] = (await slow.control('GET', '/windows')).json.windows;
    expect(window).toMatchObject({ inn, kind: 'dossier' });
    expect(Date.parse(window.opened_at) - Date.parse(r.json.created_at)).toBe(60_000);
    expect(Date.parse(window.expires_at) - Date.parse(window.opened_at)).toBe(15 * 60_000);
    expect(charged(await slow.get(`/v1/companies/${inn}`))).toBe(0);
    expect(charged(await slow.get(`/v1/companies/${inn}/licenses`))).toBe(0);
  });

  it('collection continues and the charge stands when the client disconnects during the wait', async () => {
    const inn = freshInn();
    const aborted = await fetch(`${slow.url}/v1/check`, {
      method: 'POST',
      headers: { authorization: 'Bearer emulator-key', 'content-type': 'application/json' },
      body: JSON.stringify({ inn }),
      signal: AbortSignal.timeout(30),
    }).catch((error: Error) => error);
    expect(aborted).toBeInstanceOf(Error);
    const entry = await eventually(async () => (await slow.control('GET', '/ledger')).json.entries[0]);
    expect(entry).toMatchObject({ kind: 'check', inn, amount_minor: 19900 });
    await slow.advance(60_000);
    const done = await slow.get(`/v1/checks/${entry.check_id}`);
    expect(done.status).toBe(200);
    expect(done.json.company.inn).toBe(inn);
  });

  it('a check of a company no register knows completes with found false', async () => {
    const r = await quick.post('/v1/check', { inn: unknownInn() });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ found: false });
  });

  it('a second check of a freshly checked company is warm: 200 at once, charged, no cold budget', async () => {
    const inn = freshInn();
    expect((await slow.post('/v1/check', { inn })).status).toBe(202);
    await slow.advance(60_000);
    const warm = await slow.post('/v1/check', { inn });
    expect(warm.status).toBe(200);
    expect(charged(warm)).toBe(19900);
  });

  it('polling an unknown or malformed check id is 404 not_found', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const r = await slow.get(`/v1/checks/${id}`);
      expect(r.status).toBe(404);
      expect(r.json.error.code).toBe('not_found');
    }
  });

  it('the same Idempotency-Key while the first check still waits is 409; afterwards it replays', async () => {
    const inn = freshInn();
    const slowFirst = slow.post('/v1/check', { inn }, { headers: { 'idempotency-key': 'chk-2' } });
    const concurrent = await slow.post('/v1/check', { inn }, { headers: { 'idempotency-key': 'chk-2' } });
    const answered = await slowFirst;
    expect([answered.status, concurrent.status].sort()).toEqual([202, 409]);
    const conflict = answered.status === 409 ? answered : concurrent;
    expect(conflict.json.error.code).toBe('idempotency_in_progress');
    const original = answered.status === 202 ? answered : concurrent;
    const replay = await slow.post('/v1/check', { inn }, { headers: { 'idempotency-key': 'chk-2' } });
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.json.check_id).toBe(original.json.check_id);
    expect(charged(replay)).toBe(19900);
    expect((await slow.control('GET', '/ledger')).json.totals.count).toBe(1);
  });
});
