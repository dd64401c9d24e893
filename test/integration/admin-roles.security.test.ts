// Named admin tokens with roles, over real sockets: a viewer reads but changes nothing, finance
// sets budgets and reconciles but cannot purge, reload or redeliver, an admin does everything, and
// the older admin.tokenHash is an admin named "admin". A role without the right gets 403
// feature_unavailable in the envelope and nothing changes; every mutation lands in the audit
// trail with its actor, role, client and request id; no token reaches any log line.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newToken } from '../../src/auth/tokens.ts';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

interface Envelope {
  error: { code: string; message: string; details: Record<string, unknown> };
  meta: { request_id: string };
}

describe('admin roles', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      apps: [{ name: 'crm', budgets: { day: { limitMinor: 100_000 } } }],
      adminTokens: [
        { name: 'fin', role: 'finance' },
        { name: 'view', role: 'viewer' },
        { name: 'ops', role: 'admin' },
      ],
    });
  });
  afterAll(() => h?.close());

  const as = (token: string | null, method: string, path: string, body?: unknown) =>
    fetch(`${h.gateway.url}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const setBudget = { limit_minor: 50_000, soft_minor: 40_000, reason: 'Q4 cut' };
  const inn = knownInns(1, 4200)[0]!;

  const expectForbidden = async (res: Response, right: string) => {
    expect(res.status).toBe(403);
    const body = (await res.json()) as Envelope;
    expect(body.error.code).toBe('feature_unavailable');
    expect(body.error.details.right).toBe(right);
    expect(body.meta.request_id).toBe(res.headers.get('x-request-id'));
  };
  const audit = async () => {
    const res = await as(h.adminToken, 'GET', '/admin/audit?limit=1000');
    expect(res.status).toBe(200);
    return ((await res.json()) as { entries: Array<Record<string, unknown>> }).entries;
  };
  const crmDay = async () => {
    const res = await as(h.adminToken, 'GET', '/admin/budgets');
    const body = (await res.json()) as { budgets: Record<string, Array<Record<string, unknown>>> };
    return body.budgets.crm!.find((b) => b.period === 'day')!;
  };

  it('viewer: reads everything, changes nothing (403 feature_unavailable, no audit entry)', async () => {
    const v = h.adminTokens.view!;
    for (const path of ['/admin/budgets', '/admin/audit', '/admin/ledger', '/admin/limits', '/admin/apps'])
      expect((await as(v, 'GET', path)).status, path).toBe(200);
    const before = (await audit()).length;
    await expectForbidden(await as(v, 'PUT', '/admin/budgets/crm/day', setBudget), 'budgets_write');
    await expectForbidden(await as(v, 'DELETE', '/admin/budgets/crm/day', { reason: 'x' }), 'budgets_write');
    await expectForbidden(await as(v, 'DELETE', `/admin/cache/${inn}`), 'cache_purge');
    await expectForbidden(await as(v, 'POST', '/admin/reload'), 'reload');
    await expectForbidden(await as(v, 'POST', '/admin/reconcile'), 'reconcile');
    await expectForbidden(await as(v, 'POST', '/admin/webhooks/redeliver'), 'webhooks_redeliver');
    await expectForbidden(await as(v, 'POST', '/admin/prices/refresh'), 'prices_refresh');
    expect(await crmDay()).toMatchObject({ limit_minor: 100_000, source: 'config', version: 0 });
    expect((await audit()).length).toBe(before);
  });

  it('finance: sets budgets and reconciles; cannot purge, reload or redeliver', async () => {
    const f = h.adminTokens.fin!;
    await expectForbidden(await as(f, 'DELETE', `/admin/cache/${inn}`), 'cache_purge');
    await expectForbidden(await as(f, 'POST', '/admin/reload'), 'reload');
    await expectForbidden(await as(f, 'POST', '/admin/webhooks/redeliver'), 'webhooks_redeliver');
    const put = await as(f, 'PUT', '/admin/budgets/crm/day', setBudget);
    expect(put.status).toBe(200);
    expect(await crmDay()).toMatchObject({
      limit_minor: 50_000,
      soft_minor: 40_000,
      source: 'admin',
      version: 1,
      updated_by: 'fin',
      reason: 'Q4 cut',
    });
    expect((await as(f, 'POST', '/admin/reconcile')).status).toBe(200);
    expect((await as(f, 'POST', '/admin/prices/refresh')).status).toBe(200);
    expect((await as(f, 'GET', '/admin/audit')).status).toBe(200);
    const entries = await audit();
    const set = entries.find((e) => e.action === 'budget_set')!;
    expect(set).toMatchObject({
      actor: 'fin',
      role: 'finance',
      client: '127.0.0.1',
      request_id: put.headers.get('x-request-id'),
      target: 'budget:crm:day',
      before: { limit_minor: 100_000, soft_minor: null, source: 'config', version: 0 },
      after: { limit_minor: 50_000, soft_minor: 40_000, source: 'admin', version: 1 },
      reason: 'Q4 cut',
    });
    expect(entries.find((e) => e.action === 'reconcile')).toMatchObject({
      actor: 'fin',
      role: 'finance',
      after: { resolved: expect.any(Object) },
    });
    const prices = entries.find((e) => e.action === 'prices_refresh')!;
    expect(prices).toMatchObject({ actor: 'fin', target: 'prices' });
    expect((prices.after as { prices: unknown[] }).prices.length).toBeGreaterThan(0);
  });

  it('admin (named, and the older admin.tokenHash as "admin"): everything, each under its own name', async () => {
    const purge = await as(h.adminTokens.ops!, 'DELETE', `/admin/cache/${inn}`);
    expect(purge.status).toBe(200);
    const redeliver = await as(h.adminToken, 'POST', '/admin/webhooks/redeliver', {
      reason: 'endpoint fixed',
    });
    expect(redeliver.status).toBe(200);
    const reset = await fetch(`${h.gateway.url}/admin/budgets/crm/day`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${h.adminToken}`, 'x-audit-reason': 'back to plan' },
    });
    expect(reset.status).toBe(200);
    expect(await crmDay()).toMatchObject({
      limit_minor: 100_000,
      source: 'config',
      version: 2,
      updated_by: 'admin',
    });
    const entries = await audit();
    expect(entries.find((e) => e.action === 'cache_purge')).toMatchObject({
      actor: 'ops',
      role: 'admin',
      target: `cache:${inn}`,
      request_id: purge.headers.get('x-request-id'),
    });
    expect(entries.find((e) => e.action === 'webhooks_redeliver')).toMatchObject({
      actor: 'admin',
      reason: 'endpoint fixed',
    });
    expect(entries.find((e) => e.action === 'budget_reset')).toMatchObject({
      actor: 'admin',
      reason: 'back to plan',
      after: { source: 'config', limit_minor: 100_000, version: 2 },
    });
  });

  it('no token, an unknown token or an app token: 401 in the envelope', async () => {
    for (const token of [null, newToken(), h.tokens.crm!]) {
      const res = await as(token, 'GET', '/admin/budgets');
      expect(res.status).toBe(401);
      expect(((await res.json()) as Envelope).error.code).toBe('unauthorized');
    }
  });

  it('no admin or app token, accepted or refused, reaches any log line', async () => {
    const wrong = newToken();
    await as(wrong, 'PUT', '/admin/budgets/crm/day', setBudget);
    await as(h.adminTokens.view!, 'PUT', '/admin/budgets/crm/day', setBudget);
    await as(h.adminTokens.fin!, 'PUT', '/admin/budgets/crm/month', { ...setBudget, limit_minor: 'x' });
    await as(h.adminTokens.fin!, 'PUT', '/admin/budgets/crm/month', setBudget);
    const secrets = [h.adminToken, wrong, ...Object.values(h.adminTokens), ...Object.values(h.tokens)];
    expect(h.logs.length).toBeGreaterThan(10);
    for (const line of h.logs) for (const secret of secrets) expect(line).not.toContain(secret);
    // The log names the actor of a change, never its token.
    expect(h.logs.some((l) => l.includes('"actor":"fin"') && l.includes('budget set'))).toBe(true);
  });
});
