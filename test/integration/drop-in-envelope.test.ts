// Drop-in details (issue #18), the emulator on port 0 as the truth:
// - meta.request_id equals X-Request-Id on every error passed through (404, 422 bad cursor, 422
//   idempotency_key_reused, 502) and on a negative-cache HIT; the upstream's id stays in
//   X-Upstream-Request-Id;
// - a repeated query parameter takes its last value, as the upstream does;
// - search text is keyed as sent: trailing spaces are not the answer of the trimmed text.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns, unknownBic, unknownInn } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ emulator: { checkSeconds: 0.05, checkWaitSeconds: 1 } });
});
afterAll(() => h.close());

const direct = (path: string, init?: RequestInit) => h.direct(path, init);

async function envelope(res: Response) {
  const body = (await res.json()) as { error: { code: string }; meta: { request_id: string } };
  return { status: res.status, code: body.error.code, id: body.meta.request_id, body };
}

function expectOwnId(res: Response, id: string) {
  expect(id).toBe(res.headers.get('x-request-id'));
  expect(res.headers.get('x-upstream-request-id')).toMatch(/\S/);
  expect(id).not.toBe(res.headers.get('x-upstream-request-id'));
}

describe('meta.request_id is the X-Request-Id of the answer', () => {
  it('on a passed-through 404 and on its negative-cache HIT', async () => {
    const path = `/v1/companies/${unknownInn()}`;
    const first = await h.call('alpha', path);
    const a = await envelope(first);
    expect([a.status, a.code]).toEqual([404, 'not_found']);
    expectOwnId(first, a.id);
    const again = await h.call('beta', path);
    expect(again.headers.get('x-cache')).toBe('HIT');
    const b = await envelope(again);
    expectOwnId(again, b.id);
    expect(b.id).not.toBe(a.id);
    // Apart from the id, the body is the upstream's.
    const d = await envelope(await direct(path));
    expect({ ...b.body, meta: null }).toEqual({ ...d.body, meta: null });
  });

  it('on a 404 unknown BIC and a 422 bad cursor', async () => {
    for (const path of [`/v1/banks/${unknownBic()}`, '/v1/companies/7707083893/arbitration?cursor=zzz']) {
      const res = await h.call('alpha', path);
      const e = await envelope(res);
      const d = await envelope(await direct(path));
      expect([e.status, e.code]).toEqual([d.status, d.code]);
      expect(e.id).toBe(res.headers.get('x-request-id'));
    }
  });

  it('on 422 idempotency_key_reused', async () => {
    const [a, b] = knownInns(2, 700);
    const post = (inn: string) =>
      h.call('alpha', '/v1/check', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'reuse-700' },
        body: JSON.stringify({ inn, purpose: 'requisites' }),
      });
    expect([200, 202]).toContain((await post(a!)).status);
    const res = await post(b!);
    const e = await envelope(res);
    expect([e.status, e.code]).toEqual([422, 'idempotency_key_reused']);
    expectOwnId(res, e.id);
  });

  it('on a 502 source_unavailable passed through', async () => {
    await h.emu('/faults', { route: 'bank', count: 10, status: 502 });
    const res = await h.call('alpha', '/v1/banks/044525225', { headers: { 'cache-control': 'no-cache' } });
    const e = await envelope(res);
    expect(e.status).toBe(502);
    expect(e.id).toBe(res.headers.get('x-request-id'));
  });
});

describe('query parameters as the upstream reads them', () => {
  const paths = [
    '/v1/search?q=abc&q=%D0%A1%D0%B1%D0%B5%D1%80',
    '/v1/search?q=%D0%A1%D0%B1%D0%B5%D1%80&page=1&page=2',
    '/v1/suggest?q=ab&q=%D0%A1%D0%B1%D0%B5%D1%80',
    '/v1/search?q=%D0%A1%D0%B1%D0%B5%D1%80&q=ab',
  ];
  for (const path of paths) {
    it(`a repeated parameter takes its last value: ${path}`, async () => {
      const g = await h.call('alpha', path);
      const d = await direct(path);
      expect(g.status).toBe(d.status);
      const [gText, dText] = [await g.text(), await d.text()];
      if (g.status === 200) expect(gText).toBe(dText);
      else expect(JSON.parse(gText).error).toEqual(JSON.parse(dText).error);
    });
  }

  it('search text is keyed as sent: trailing spaces get their own answer', async () => {
    const plain = '/v1/search?q=%D0%93%D0%B0%D0%B7%D0%BF%D1%80%D0%BE%D0%BC';
    const spaced = `${plain}%20%20`;
    expect((await h.call('alpha', plain)).status).toBe(200);
    const g = await h.call('alpha', spaced);
    const d = await direct(spaced);
    expect(g.status).toBe(200);
    expect(await g.text()).toBe(await d.text());
  });
});
