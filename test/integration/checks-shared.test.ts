// Checks are shared, not stolen (issue #10): a check belongs to every app that asked for it
// (the first pays, the others are charged 0 and may poll it); any other app, whatever the case
// of the id, gets 404; concurrent identical creations pay for one check and none of them gets
// a false timeout. The emulator's ledger is the truth of what was charged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

const post = (h: Harness, app: string, body: unknown, key?: string) =>
  h.call(app, '/v1/check', {
    method: 'POST',
    body: JSON.stringify(body),
    headers: key ? { 'idempotency-key': key } : {},
  });

const chargesFor = async (h: Harness, inn: string) => (await h.ledger()).entries.filter((e) => e.inn === inn);

describe('a check still being collected', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ emulator: { checkSeconds: 30, checkWaitSeconds: 0.05 } });
  });
  afterAll(() => h.close());

  it('a second app asking for it joins it: same check id, charged 0, one upstream charge', async () => {
    const [inn] = knownInns(1, 500);
    const first = await post(h, 'alpha', { inn });
    expect(first.status).toBe(202);
    expect(first.headers.get('x-charged-minor')).not.toBe('0');
    const { check_id: id } = (await first.json()) as { check_id: string };
    const second = await post(h, 'beta', { inn });
    expect(second.status).toBe(202);
    expect(second.headers.get('x-charged-minor')).toBe('0');
    expect(((await second.json()) as { check_id: string }).check_id).toBe(id);
    expect(await chargesFor(h, inn!)).toHaveLength(1);
    // Both may poll it; an app that never asked may not.
    expect((await h.call('alpha', `/v1/checks/${id}`)).status).toBe(202);
    expect((await h.call('beta', `/v1/checks/${id}`)).status).toBe(202);
    expect((await h.call('gamma', `/v1/checks/${id}`)).status).toBe(404);
  });

  it('a requisites check is not joined by a dossier check of the same company', async () => {
    const [inn] = knownInns(1, 510);
    h.advance(61_000); // two cold checks a minute upstream
    const a = await post(h, 'alpha', { inn, purpose: 'requisites' });
    expect(a.status).toBe(202);
    const b = await post(h, 'beta', { inn });
    expect(b.status).toBe(202);
    expect(b.headers.get('x-charged-minor')).not.toBe('0');
    const idA = ((await a.json()) as { check_id: string }).check_id;
    const idB = ((await b.json()) as { check_id: string }).check_id;
    expect(idA).not.toBe(idB);
  });

  it('ids compare in lower case: the owner may upper-case it, another app still gets 404', async () => {
    const [inn] = knownInns(1, 520);
    h.advance(61_000);
    const created = await post(h, 'alpha', { inn });
    const { check_id: id } = (await created.json()) as { check_id: string };
    const upper = id.toUpperCase();
    expect(upper).not.toBe(id);
    expect((await h.call('alpha', `/v1/checks/${upper}`)).status).toBe(202);
    const stranger = await h.call('beta', `/v1/checks/${upper}`);
    expect(stranger.status).toBe(404);
    expect(((await stranger.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });

  it('a check id the gateway never handed out is 404 without an upstream call', async () => {
    const before = await h.upstreamCount();
    const res = await h.call('alpha', '/v1/checks/00000000-0000-4000-8000-000000000000');
    expect(res.status).toBe(404);
    expect(await h.upstreamCount()).toBe(before);
  });
});

describe('concurrent identical creations', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ emulator: { checkSeconds: 0.3, checkWaitSeconds: 2 } });
  });
  afterAll(() => h.close());

  it('two identical POST /v1/check at once (same key): one charge, both 200, no false timeout', async () => {
    const [inn] = knownInns(1, 530);
    const started = Date.now();
    const [a, b] = await Promise.all([
      post(h, 'alpha', { inn }, 'dup-1'),
      post(h, 'alpha', { inn }, 'dup-1'),
    ]);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect([a.status, b.status]).toEqual([200, 200]);
    const charged = [a.headers.get('x-charged-minor'), b.headers.get('x-charged-minor')].map(Number);
    expect(charged.filter((c) => c > 0)).toHaveLength(1);
    expect(await chargesFor(h, inn!)).toHaveLength(1);
  });

  it('two apps asking for the same fresh check at once pay for one', async () => {
    const [inn] = knownInns(1, 540);
    h.advance(61_000);
    const [a, b] = await Promise.all([post(h, 'alpha', { inn }), post(h, 'beta', { inn })]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(await chargesFor(h, inn!)).toHaveLength(1);
    // The gateway's own ledger counts it once too.
    const admin = await fetch(`${h.gateway.url}/admin/ledger`, {
      headers: { authorization: `Bearer ${h.adminToken}` },
    });
    const ledger = (await admin.json()) as { entries: Array<{ inn: string }> };
    expect(ledger.entries.filter((e) => e.inn === inn)).toHaveLength(1);
  });
});
