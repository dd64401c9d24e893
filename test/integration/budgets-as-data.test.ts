// Budgets as data on one gateway, over real sockets: GET /admin/budgets shows each budget's
// source and version; PUT refuses bad input (422 naming the field, 404 unknown app or period, 412
// stale If-Match with the current values) and changes nothing then; lowering a cap below what is
// spent refuses the next paid call at once (402 budget_exceeded, nothing charged upstream);
// DELETE returns the config cap; the budget gauges show the cap in force; the audit trail pages
// by cursor and exports CSV.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

const DOSSIER = 9900;

interface Envelope {
  error: { code: string; details: Record<string, unknown> };
}

describe('budgets as data', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      apps: [{ name: 'crm', budgets: { day: { limitMinor: 10 * DOSSIER, softMinor: 5 * DOSSIER } } }],
      adminTokens: [{ name: 'fin', role: 'finance' }],
      config: { metrics: { sharedReadMinIntervalMs: 0 } },
    });
  });
  afterAll(() => h?.close());

  const fin = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(`${h.gateway.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${h.adminTokens.fin}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
  const budgets = async () =>
    (
      (await (await fin('GET', '/admin/budgets')).json()) as {
        budgets: Record<string, Array<Record<string, unknown>>>;
      }
    ).budgets;
  const crmDay = async () => (await budgets()).crm!.find((b) => b.period === 'day')!;
  const auditCount = async () =>
    ((await (await fin('GET', '/admin/audit?limit=1000')).json()) as { count: number }).count;
  let next = 5000;
  const paidCall = () => h.call('crm', `/v1/companies/${knownInns(1, next++)[0]}`);

  it('GET /admin/budgets: every budget with limit, soft, spent, reserved, remaining, source and version', async () => {
    const all = await budgets();
    expect(all.crm!.find((b) => b.period === 'day')).toMatchObject({
      limit_minor: 10 * DOSSIER,
      soft_minor: 5 * DOSSIER,
      spent_minor: 0,
      reserved_minor: 0,
      remaining_minor: 10 * DOSSIER,
      source: 'config',
      version: 0,
      updated_by: null,
      updated_at: null,
    });
    expect(all['*global*']!.map((b) => b.period).sort()).toEqual(['day', 'month']);
  });

  it('refuses bad input in the envelope, naming the field, and changes nothing', async () => {
    const before = await auditCount();
    const cases: Array<[string, unknown, number, string | null]> = [
      ['/admin/budgets/crm/day', { limit_minor: 5 }, 422, 'reason'],
      ['/admin/budgets/crm/day', { limit_minor: 5, reason: '  ' }, 422, 'reason'],
      ['/admin/budgets/crm/day', { limit_minor: -1, reason: 'r' }, 422, 'limit_minor'],
      ['/admin/budgets/crm/day', { limit_minor: 1.5, reason: 'r' }, 422, 'limit_minor'],
      ['/admin/budgets/crm/day', { limit_minor: '100', reason: 'r' }, 422, 'limit_minor'],
      ['/admin/budgets/crm/day', { reason: 'r' }, 422, 'limit_minor'],
      ['/admin/budgets/crm/day', { limit_minor: 5, soft_minor: 6, reason: 'r' }, 422, 'soft_minor'],
      ['/admin/budgets/crm/day', { limit_minor: 5, soft_minor: -6, reason: 'r' }, 422, 'soft_minor'],
      ['/admin/budgets/crm/day', { limit_minor: 5, reason: 'r', limit: 4 }, 422, 'limit'],
      // The old camelCase spelling is refused, not ignored (README "Field names").
      ['/admin/budgets/crm/day', { limitMinor: 5, reason: 'r' }, 422, 'limitMinor'],
      ['/admin/budgets/crm/day', '{not json', 422, 'body'],
      ['/admin/budgets/nobody/day', { limit_minor: 5, reason: 'r' }, 404, null],
      ['/admin/budgets/crm/week', { limit_minor: 5, reason: 'r' }, 404, null],
    ];
    for (const [path, body, status, field] of cases) {
      const res = await fin('PUT', path, body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      const env = (await res.json()) as Envelope;
      if (field) {
        expect(env.error.code).toBe('validation_failed');
        expect((env.error.details.fields as Array<{ field: string }>).map((f) => f.field)).toContain(field);
      } else expect(env.error.code).toBe('not_found');
    }
    const noReason = await fin('DELETE', '/admin/budgets/crm/day');
    expect(noReason.status).toBe(422);
    expect(((await noReason.json()) as Envelope).error.details.fields).toEqual([
      expect.objectContaining({ field: 'reason', code: 'required' }),
    ]);
    expect(await crmDay()).toMatchObject({ limit_minor: 10 * DOSSIER, version: 0, source: 'config' });
    expect(await auditCount()).toBe(before);
  });

  it('If-Match: a stale version is 412 with the current values; the right one applies', async () => {
    const stale = await fin(
      'PUT',
      '/admin/budgets/crm/day',
      { limit_minor: 5, reason: 'r' },
      { 'if-match': '3' },
    );
    expect(stale.status).toBe(412);
    expect(((await stale.json()) as Envelope).error).toMatchObject({
      code: 'precondition_failed',
      details: {
        current: { limit_minor: 10 * DOSSIER, soft_minor: 5 * DOSSIER, source: 'config', version: 0 },
      },
    });
    const bad = await fin(
      'PUT',
      '/admin/budgets/crm/day',
      { limit_minor: 5, reason: 'r' },
      { 'if-match': 'abc' },
    );
    expect(bad.status).toBe(422);
    const ok = await fin(
      'PUT',
      '/admin/budgets/crm/day',
      { limit_minor: 20 * DOSSIER, soft_minor: null, reason: 'campaign' },
      { 'if-match': '"0"' },
    );
    expect(ok.status).toBe(200);
    expect(ok.headers.get('etag')).toBe('"1"');
    expect(await crmDay()).toMatchObject({
      limit_minor: 20 * DOSSIER,
      soft_minor: null,
      source: 'admin',
      version: 1,
    });
    const again = await fin(
      'PUT',
      '/admin/budgets/crm/day',
      { limit_minor: 5, reason: 'r' },
      { 'if-match': '0' },
    );
    expect(again.status).toBe(412);
  });

  it('lowering the cap below what is spent refuses the next paid call at once; DELETE restores the config cap', async () => {
    expect((await paidCall()).status).toBe(200);
    expect((await paidCall()).status).toBe(200);
    const spent = Number((await crmDay()).spent_minor);
    expect(spent).toBe(2 * DOSSIER);
    const lower = await fin('PUT', '/admin/budgets/crm/day', { limit_minor: DOSSIER, reason: 'freeze' });
    expect(lower.status).toBe(200);
    const upstreamBefore = await h.upstreamCount();
    const refused = await paidCall();
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as Envelope).error).toMatchObject({
      code: 'budget_exceeded',
      details: { app: 'crm', scope: 'app', period: 'day', limit_minor: DOSSIER, spent_minor: spent },
    });
    expect(await h.upstreamCount()).toBe(upstreamBefore);
    expect(await crmDay()).toMatchObject({ limit_minor: DOSSIER, remaining_minor: 0 });
    // The gauge shows the cap in force.
    const metrics = await (await fetch(`${h.gateway.url}/metrics`)).text();
    expect(metrics).toContain(`cpgw_budget_limit_minor{app="crm",period="day"} ${DOSSIER}`);
    const reset = await fin('DELETE', '/admin/budgets/crm/day', { reason: 'unfreeze' });
    expect(reset.status).toBe(200);
    expect(await crmDay()).toMatchObject({
      limit_minor: 10 * DOSSIER,
      source: 'config',
      version: 3,
      updated_by: 'fin',
    });
    expect((await paidCall()).status).toBe(200);
    const after = await (await fetch(`${h.gateway.url}/metrics`)).text();
    expect(after).toContain(`cpgw_budget_limit_minor{app="crm",period="day"} ${10 * DOSSIER}`);
    // DELETE of a budget already on its config value changes nothing and records nothing.
    const count = await auditCount();
    const noop = await fin('DELETE', '/admin/budgets/crm/day', { reason: 'again' });
    expect(((await noop.json()) as { changed: boolean }).changed).toBe(false);
    expect(await auditCount()).toBe(count);
  });

  it('a global cap set to null removes it; one set on _global refuses every app', async () => {
    const set = await fin('PUT', '/admin/budgets/_global/month', {
      limit_minor: 0,
      reason: 'stop all spend',
    });
    expect(set.status).toBe(200);
    const refused = await paidCall();
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as Envelope).error.details).toMatchObject({
      scope: 'global',
      period: 'month',
    });
    expect(
      (await fin('PUT', '/admin/budgets/_global/month', { limit_minor: null, reason: 'resume' })).status,
    ).toBe(200);
    expect((await paidCall()).status).toBe(200);
  });

  it('the audit trail pages by cursor, filters, and exports CSV', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await fin(
        'GET',
        `/admin/audit?actor=fin&action=budget_set&limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      const page = (await res.json()) as {
        entries: Array<{ id: string; reason: string }>;
        next_cursor: string | null;
      };
      seen.push(...page.entries.map((e) => e.reason));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual(['campaign', 'freeze', 'stop all spend', 'resume']);
    const csv = await fin('GET', '/admin/audit?format=csv&action=budget_reset');
    expect(csv.headers.get('content-type')).toContain('text/csv');
    const lines = (await csv.text()).trim().split('\n');
    expect(lines[0]).toBe('id,time,actor,role,client,request_id,action,target,before,after,reason');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(',fin,finance,127.0.0.1,');
    expect(lines[1]).toContain('unfreeze');
    for (const bad of ['cursor=abc', 'format=xml', 'limit=0', 'from=yesterday']) {
      const res = await fin('GET', `/admin/audit?${bad}`);
      expect(res.status, bad).toBe(422);
    }
  });
});
