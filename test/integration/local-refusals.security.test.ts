// Bad tokens, missing scopes and bad inputs are refused by the gateway itself, in the
// upstream's envelope, and nothing reaches the upstream (its request log proves it).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

let h: Harness;
let before = 0;
beforeAll(async () => {
  h = await startHarness({
    apps: [{ name: 'full' }, { name: 'nopersons', scopes: ['read:companies'] }],
    config: { server: { bodyLimitBytes: 2048 } },
  });
});
afterAll(() => h.close());
beforeEach(async () => {
  before = await h.upstreamCount();
});

async function expectRefused(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  const body = (await res.json()) as {
    error: { code: string; details: Record<string, unknown> };
    meta: { request_id: string };
  };
  expect(body.error.code).toBe(code);
  expect(body.meta.request_id).toBe(res.headers.get('x-request-id'));
  expect(await h.upstreamCount()).toBe(before);
  return body;
}

const raw = (path: string, init: RequestInit = {}) => fetch(`${h.gateway.url}${path}`, init);

describe('refused locally, never forwarded', () => {
  it('401 for a missing, malformed or unknown token; the upstream key itself is not a gateway token', async () => {
    await expectRefused(await raw('/v1/companies/7707083893'), 401, 'unauthorized');
    await expectRefused(
      await raw('/v1/companies/7707083893', { headers: { authorization: 'Basic abc' } }),
      401,
      'unauthorized',
    );
    await expectRefused(
      await raw('/v1/companies/7707083893', { headers: { authorization: 'Bearer cpgw_not-a-real-token' } }),
      401,
      'unauthorized',
    );
    await expectRefused(
      await raw('/v1/me', { headers: { authorization: 'Bearer emulator-upstream-key-0f3c9a' } }),
      401,
      'unauthorized',
    );
  });

  it('403 feature_unavailable for a missing scope', async () => {
    const body = await expectRefused(
      await h.call('nopersons', '/v1/persons/500100732259'),
      403,
      'feature_unavailable',
    );
    expect(body.error.details.scope).toBe('read:persons');
    await expectRefused(
      await h.call('nopersons', '/v1/check', { method: 'POST', body: '{"inn":"7707083893"}' }),
      403,
      'feature_unavailable',
    );
  });

  const bad: Array<[string, string, RequestInit?]> = [
    ['INN check digit', '/v1/companies/7707083894'],
    ['INN length', '/v1/companies/770708389'],
    ['INN all zeros', '/v1/requisites/0000000000'],
    ['INN letters', '/v1/persons/50010073225X'],
    ['12-digit INN check digits', '/v1/persons/500100732258'],
    ['section with a bad INN', '/v1/companies/7707083894/arbitration'],
    ['BIC length', '/v1/banks/04452522'],
    ['BIC letters', '/v1/banks/04452522A'],
    ['q too short', '/v1/suggest?q=ab'],
    ['q missing', '/v1/search'],
    ['q too long', `/v1/search?q=${'a'.repeat(201)}`],
    ['page 0', '/v1/search?q=abc&page=0'],
    ['page 21', '/v1/search?q=abc&page=21'],
    ['page not a number', '/v1/search?q=abc&page=x'],
    ['kind', '/v1/search?q=abc&kind=banks'],
    [
      'Idempotency-Key too long',
      '/v1/companies/7707083893',
      { headers: { 'idempotency-key': 'k'.repeat(65) } },
    ],
    ['body not JSON', '/v1/check', { method: 'POST', body: '{"inn":' }],
    ['body without inn', '/v1/check', { method: 'POST', body: '{}' }],
    ['body with a bad inn', '/v1/check', { method: 'POST', body: '{"inn":"7707083894"}' }],
    ['purpose', '/v1/check', { method: 'POST', body: '{"inn":"7707083893","purpose":"everything"}' }],
    ['body an array', '/v1/check', { method: 'POST', body: '[]' }],
    [
      'body too large',
      '/v1/check',
      { method: 'POST', body: JSON.stringify({ inn: '7707083893', pad: 'x'.repeat(5000) }) },
    ],
  ];
  for (const [what, path, init] of bad) {
    it(`422 validation_failed for a bad ${what}`, async () => {
      const body = await expectRefused(await h.call('full', path, init), 422, 'validation_failed');
      expect(Array.isArray(body.error.details.fields)).toBe(true);
      expect((body.error.details.fields as unknown[]).length).toBeGreaterThan(0);
    });
  }

  it('404 not_found for an unknown section, a malformed check id, and any non-upstream path', async () => {
    const section = await expectRefused(
      await h.call('full', '/v1/companies/7707083893/secrets'),
      404,
      'not_found',
    );
    // The unknown section names itself, in details (as the upstream) and in the message.
    expect(section.error.details).toEqual({ section: 'secrets' });
    expect((section.error as { message?: string }).message).toContain('"secrets"');
    await expectRefused(await h.call('full', '/v1/checks/not-a-uuid'), 404, 'not_found');
    await expectRefused(await h.call('full', '/v1/companies'), 404, 'not_found');
    await expectRefused(await h.call('full', '/v2/companies/7707083893'), 404, 'not_found');
    await expectRefused(await h.call('full', '/_emulator/ledger'), 404, 'not_found');
    await expectRefused(
      await h.call('full', '/v1/companies/7707083893', { method: 'DELETE' }),
      404,
      'not_found',
    );
  });

  it('the admin API refuses app tokens', async () => {
    await expectRefused(await h.call('full', '/admin/ledger'), 401, 'unauthorized');
  });
});
