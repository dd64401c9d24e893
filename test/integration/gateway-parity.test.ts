// Every upstream endpoint through the gateway answers what the emulator answers directly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unknownBic, unknownInn } from '../emulator/emulator-harness.ts';
import { type Harness, json, startHarness } from '../helpers/gateway-harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ emulator: { checkSeconds: 0.05, checkWaitSeconds: 1 } });
});
afterAll(() => h.close());

const direct = (path: string, init?: RequestInit) => h.direct(path, init);

async function both(path: string, init: RequestInit = {}) {
  const viaGateway = await h.call('alpha', path, init);
  const viaDirect = await direct(path, init);
  return { g: viaGateway, d: viaDirect, gBody: await viaGateway.text(), dBody: await viaDirect.text() };
}

describe('the gateway is a drop-in for the upstream', () => {
  // /v1/openapi.json is the upstream's document plus the gateway's (drop-in-openapi.test.ts).
  const paths = [
    '/v1/companies/7707083893',
    '/v1/companies/7707083893/arbitration',
    '/v1/companies/7707083893/founders',
    '/v1/requisites/7736207543',
    '/v1/banks/044525225',
    '/v1/persons/500100732259',
    '/v1/suggest?q=%D0%A1%D0%B1%D0%B5%D1%80',
    '/v1/search?q=%D0%A0%D0%BE%D0%BC%D0%B0%D1%88%D0%BA%D0%B0&kind=companies&page=2',
    '/v1/search?q=7707083893',
  ];
  for (const path of paths) {
    it(`answers ${path} exactly as the upstream`, async () => {
      const { g, d, gBody, dBody } = await both(path);
      expect(g.status).toBe(d.status);
      if (path === '/v1/openapi.json') {
        // The same document, its servers naming the gateway (issue #13).
        const gDoc = JSON.parse(gBody) as Record<string, unknown>;
        expect(gDoc.servers).toEqual([{ url: h.gateway.url }]);
        expect({ ...gDoc, servers: null }).toEqual({ ...(JSON.parse(dBody) as object), servers: null });
      } else {
        expect(gBody).toBe(dBody);
      }
      expect(g.headers.get('content-type')).toBe(d.headers.get('content-type'));
      expect(g.headers.get('x-request-id')).toBeTruthy();
      expect(g.headers.get('x-upstream-request-id')).toMatch(/\S/);
      expect(g.headers.get('x-request-id')).not.toBe(g.headers.get('x-upstream-request-id'));
    });
  }

  it('pages a long section with cursors exactly as the upstream', async () => {
    const first = await both('/v1/companies/7707083893/arbitration');
    const cursor = (JSON.parse(first.gBody) as { cursor: string }).cursor;
    expect(cursor).not.toBe('');
    const next = await both(`/v1/companies/7707083893/arbitration?cursor=${encodeURIComponent(cursor)}`);
    expect(next.g.status).toBe(200);
    expect(next.gBody).toBe(next.dBody);
  });

  it("passes upstream refusals through unchanged: unknown INN and BIC are the upstream's own 404s", async () => {
    for (const path of [`/v1/companies/${unknownInn()}`, `/v1/banks/${unknownBic()}`]) {
      const before = await h.upstreamCount();
      const { g, d, gBody, dBody } = await both(path);
      expect(g.status).toBe(404);
      expect(d.status).toBe(404);
      expect((JSON.parse(gBody) as { error: { code: string } }).error.code).toBe('not_found');
      expect((JSON.parse(gBody) as { error: unknown }).error).toEqual(
        (JSON.parse(dBody) as { error: unknown }).error,
      );
      expect(await h.upstreamCount()).toBe(before + 2);
    }
  });

  it('creates and polls a check through the gateway', async () => {
    const res = await h.call('alpha', '/v1/check', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inn: '7736050003', purpose: 'requisites' }),
    });
    expect([200, 202]).toContain(res.status);
    const body = await json(res);
    if (res.status === 202) {
      const poll = await h.call('alpha', `/v1/checks/${body.check_id}`);
      expect([200, 202]).toContain(poll.status);
    } else {
      expect(body.found).toBe(true);
    }
  });

  it('answers GET /v1/me from its copy of the upstream record, plus a gateway object', async () => {
    const g = await json(await h.call('beta', '/v1/me'));
    const d = await json(await direct('/v1/me'));
    expect(g.prices).toEqual(d.prices);
    expect(g.account).toEqual(d.account);
    const gateway = g.gateway as { app: string; budgets: unknown[]; scopes: string[] };
    expect(gateway.app).toBe('beta');
    expect(gateway.scopes).toContain('read:companies');
    expect(gateway.budgets.length).toBe(4);
  });
});
