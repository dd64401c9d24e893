// Every error code the spec gives a status for (and the ones we chose), each produced over
// real HTTP: the envelope shape, meta.request_id equal to X-Request-Id, and no charge.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  type Harness,
  knownInns,
  type Reply,
  startHarness,
  unknownBic,
  unknownInn,
} from './emulator-harness.ts';

let h: Harness;
const inns = knownInns(10, 500);
let next = 0;
const freshInn = () => inns[next++]!;

beforeAll(async () => {
  h = await startHarness({
    checkSeconds: 60,
    apiKeys: [
      'emulator-key',
      'no-persons;scopes=read:companies+read:checks',
      'no-scopes;scopes=',
      'sandbox-key;env=sandbox',
      'expired-key;expires=2001-01-01T00:00:00Z',
      'revoked-key;revoked',
    ],
  });
});
afterAll(() => h.close());
beforeEach(async () => {
  await h.control('POST', '/reset');
});

function expectError(r: Reply, status: number, code: string): void {
  expect(r.status, r.text).toBe(status);
  expect(r.json.error.code).toBe(code);
  expect(typeof r.json.error.message).toBe('string');
  expect(typeof r.json.error.details).toBe('object');
  expect(r.json.meta.request_id).toBe(r.headers.get('x-request-id'));
  expect(r.headers.get('content-type')).toMatch(/^application\/json/);
}

async function expectNoCharge(): Promise<void> {
  expect((await h.control('GET', '/ledger')).json.totals.amount_minor).toBe(0);
}

describe('error codes', () => {
  it('401 unauthorized: unknown, revoked, expired and missing keys are indistinguishable', async () => {
    const bodies = new Set<string>();
    for (const key of ['nope', 'revoked-key', 'expired-key', null]) {
      const r = await h.get(`/v1/companies/${inns[0]}`, { key });
      expectError(r, 401, 'unauthorized');
      bodies.add(JSON.stringify({ ...r.json, meta: null }));
    }
    expect(bodies.size).toBe(1);
    expectError(await h.get('/v1/me', { key: 'nope' }), 401, 'unauthorized');
    await expectNoCharge();
  });

  it('403 feature_unavailable without the scope; /v1/me needs none', async () => {
    expectError(await h.get(`/v1/persons/500100732259`, { key: 'no-persons' }), 403, 'feature_unavailable');
    expectError(await h.get(`/v1/companies/${inns[0]}`, { key: 'no-scopes' }), 403, 'feature_unavailable');
    expectError(
      await h.post('/v1/check', { inn: inns[0] }, { key: 'no-scopes' }),
      403,
      'feature_unavailable',
    );
    const me = await h.get('/v1/me', { key: 'no-persons' });
    expect(me.status).toBe(200);
    expect(me.json.key.scopes).toEqual(['read:companies', 'read:checks']);
    await expectNoCharge();
  });

  it('403 sandbox_unavailable for a sandbox key', async () => {
    expectError(await h.get(`/v1/companies/${inns[0]}`, { key: 'sandbox-key' }), 403, 'sandbox_unavailable');
    expectError(await h.get('/v1/me', { key: 'sandbox-key' }), 403, 'sandbox_unavailable');
  });

  it('402 insufficient_funds with balance and price; nothing charged', async () => {
    await h.control('POST', '/wallet', { balance_minor: 1000 });
    const r = await h.get(`/v1/companies/${freshInn()}`);
    expectError(r, 402, 'insufficient_funds');
    expect(r.json.error.details).toEqual({ balance_minor: 1000, price_minor: 9900 });
    expect(r.headers.get('x-charged-minor')).toBe('0');
    const check = await h.post('/v1/check', { inn: freshInn() });
    expectError(check, 402, 'insufficient_funds');
    expect(check.json.error.details).toEqual({ balance_minor: 1000, price_minor: 19900 });
    await expectNoCharge();
    expect((await h.get('/v1/me')).json.wallet.balance_minor).toBe(1000);
  });

  it('403 price_inactive for a kind withdrawn from sale', async () => {
    await h.control('POST', '/prices', { requisites: null });
    expectError(await h.get(`/v1/requisites/${freshInn()}`), 403, 'price_inactive');
    await expectNoCharge();
  });

  it('422 validation_failed with details.fields {field, code, message}; never charged', async () => {
    const cases: Array<[string, Reply]> = [
      ['inn', await h.get('/v1/companies/7707083894')],
      ['inn', await h.get('/v1/companies/0000000000')],
      ['inn', await h.get('/v1/companies/12345')],
      ['inn', await h.get('/v1/requisites/7707083894')],
      ['inn', await h.get('/v1/persons/500100732250')],
      ['inn', await h.get('/v1/companies/7707083894/founders')],
      ['bic', await h.get('/v1/banks/04452522')],
      ['q', await h.get('/v1/suggest?q=ab')],
      ['q', await h.get('/v1/search')],
      ['page', await h.get('/v1/search?q=abc&page=21')],
      ['kind', await h.get('/v1/search?q=abc&kind=banks')],
      ['inn', await h.post('/v1/check', { inn: '7707083894' })],
      ['purpose', await h.post('/v1/check', { inn: inns[0], purpose: 'audit' })],
      ['body', await h.post('/v1/check', '{not json')],
      [
        'Idempotency-Key',
        await h.get(`/v1/companies/${inns[0]}`, { headers: { 'idempotency-key': 'x'.repeat(65) } }),
      ],
    ];
    for (const [field, r] of cases) {
      expectError(r, 422, 'validation_failed');
      expect(r.json.error.details.fields.map((f: { field: string }) => f.field)).toContain(field);
      for (const problem of r.json.error.details.fields) {
        expect(Object.keys(problem).sort()).toEqual(['code', 'field', 'message']);
      }
    }
    await expectNoCharge();
  });

  it('404 not_found: unknown company (free), unknown section, unknown check, unknown BIC, unknown path', async () => {
    const unknown = unknownInn();
    const company = await h.get(`/v1/companies/${unknown}`);
    expectError(company, 404, 'not_found');
    expect(company.headers.get('x-charged-minor')).toBe('0');
    expectError(await h.get(`/v1/companies/${unknown}/founders`), 404, 'not_found');
    expectError(await h.get(`/v1/requisites/${unknown}`), 404, 'not_found');
    expectError(await h.get(`/v1/companies/${inns[0]}/no_such_section`), 404, 'not_found');
    expectError(await h.get('/v1/checks/6f1c2a52-8a8e-4d5e-9b1a-0c2f4e6a8b10'), 404, 'not_found');
    expectError(await h.get(`/v1/banks/${unknownBic()}`), 404, 'not_found');
    expectError(await h.get('/v1/nowhere'), 404, 'not_found');
    expectError(await h.get('/nowhere', { key: null }), 404, 'not_found');
    expectError(await h.post('/v1/me', {}), 404, 'not_found');
    await expectNoCharge();
  });

  it('409 idempotency_in_progress while the same key executes', async () => {
    await h.control('POST', '/faults', { route: 'company', latency_ms: 300 });
    const inn = freshInn();
    const headers = { 'idempotency-key': 'busy' };
    const first = h.get(`/v1/companies/${inn}`, { headers });
    await new Promise((resolve) => setTimeout(resolve, 80));
    expectError(await h.get(`/v1/companies/${inn}`, { headers }), 409, 'idempotency_in_progress');
    expect((await first).status).toBe(200);
  });

  it('422 idempotency_key_reused for the same key with a different request', async () => {
    const headers = { 'idempotency-key': 'one-key' };
    expect((await h.get(`/v1/companies/${inns[0]}`, { headers })).status).toBe(200);
    expectError(await h.get(`/v1/companies/${inns[1]}`, { headers }), 422, 'idempotency_key_reused');
    expectError(await h.post('/v1/check', { inn: inns[0] }, { headers }), 422, 'idempotency_key_reused');
  });

  it('502 source_unavailable and 503 billing_unavailable by fault injection; no charge', async () => {
    await h.control('POST', '/faults', { route: 'check', status: 502 });
    expectError(await h.post('/v1/check', { inn: freshInn() }), 502, 'source_unavailable');
    await h.control('POST', '/faults', { route: 'company', status: 503, count: 2 });
    const inn = freshInn();
    expectError(await h.get(`/v1/companies/${inn}`), 503, 'billing_unavailable');
    expectError(await h.get(`/v1/companies/${inn}`), 503, 'billing_unavailable');
    await expectNoCharge();
    expect((await h.get(`/v1/companies/${inn}`)).status).toBe(200);
  });

  it('429 rate_limited carries Retry-After; quota_exceeded for the persons daily limit (see rate-limits tests)', async () => {
    const emu = await startHarness({ limits: { keyPerMinute: 1 } });
    try {
      expect((await emu.get('/v1/me')).status).toBe(200);
      const r = await emu.get('/v1/me');
      expectError(r, 429, 'rate_limited');
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await emu.close();
    }
  });

  it('500 internal_error is an envelope too', async () => {
    const original = h.emu.context.data.dossierJson;
    h.emu.context.data.dossierJson = () => {
      throw new Error('boom');
    };
    try {
      expectError(await h.get(`/v1/companies/${freshInn()}`), 500, 'internal_error');
    } finally {
      h.emu.context.data.dossierJson = original;
    }
  });

  it('X-Request-Id stands on every answer, the OpenAPI document and control calls included', async () => {
    const answers = [
      await h.get('/v1/openapi.json', { key: null }),
      await h.get('/v1/me'),
      await h.get(`/v1/companies/${inns[0]}`),
      await h.get('/v1/nowhere'),
      await h.control('GET', '/ledger'),
    ];
    const ids = answers.map((r) => r.headers.get('x-request-id'));
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
