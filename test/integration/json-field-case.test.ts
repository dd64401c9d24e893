// One field-name case for everything the gateway itself writes as JSON (issue 31 item 11, README
// "Field names"): every answer of /admin/* and /console/session, the `gateway` object of /v1/me
// and the details of the gateway's own refusals name their fields in snake_case, as the upstream
// does. Walks every admin route over real sockets (after a paid call, a budget change, a refusal)
// and fails naming each key that carries a capital letter, with the route it came from. Bodies:
// a camelCase field is a 422 naming the snake_case one, and changes nothing. The admin OpenAPI
// document names the same fields (its budget schema validates the answers, nothing left over).
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownInns } from '../emulator/emulator-harness.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

const DOSSIER = 9900;

/** Every key (path-qualified) of a JSON value that is not snake_case. */
function camelKeys(value: unknown, path = '$'): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => camelKeys(v, `${path}[${i}]`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([k, v]) => [
    ...(/[A-Z]/.test(k) ? [`${path}.${k}`] : []),
    ...camelKeys(v, `${path}.${k}`),
  ]);
}

describe('JSON field names', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      apps: [
        { name: 'crm', budgets: { day: { limitMinor: DOSSIER, softMinor: DOSSIER / 2 } } },
        { name: 'risk', limits: { weight: 2, caps: { search: 5 } } },
      ],
      adminTokens: [{ name: 'fin', role: 'finance' }],
      loadConfig: (base) => base,
    });
  });
  afterAll(() => h?.close());

  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${h.gateway.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${h.adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  it('every admin answer, the console session, /v1/me and the refusals: snake_case keys only', async () => {
    const [inn, other] = knownInns(2, 7100);
    expect((await h.call('crm', `/v1/companies/${inn}`)).status).toBe(200);
    const refused = await h.call('crm', `/v1/companies/${other}`);
    expect(refused.status).toBe(402);
    const month = new Date(h.gateway.clock.now()).toISOString().slice(0, 7);

    const answers: Array<[string, unknown]> = [['402 budget_exceeded', await refused.json()]];
    const take = async (label: string, res: Promise<Response>, status = 200) => {
      const r = await res;
      expect(r.status, label).toBe(status);
      answers.push([label, await r.json()]);
    };
    await take('PUT budget', admin('PUT', '/admin/budgets/crm/month', { limit_minor: 50_000, reason: 'r' }));
    await take(
      'PUT budget stale',
      fetch(`${h.gateway.url}/admin/budgets/crm/month`, {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${h.adminToken}`,
          'content-type': 'application/json',
          'if-match': '"0"',
        },
        body: JSON.stringify({ limit_minor: 1, reason: 'r' }),
      }),
      412,
    );
    for (const path of [
      '/admin/budgets',
      '/admin/audit',
      '/admin/ledger',
      `/admin/statements/${month}`,
      '/admin/reconciliation',
      '/admin/windows',
      '/admin/cache/stats',
      '/admin/apps',
      '/admin/limits',
      '/admin/webhooks',
      '/admin/replicas',
    ])
      await take(`GET ${path}`, admin('GET', path));
    await take('POST /admin/reload', admin('POST', '/admin/reload'));
    await take('POST /admin/reconcile', admin('POST', '/admin/reconcile'));
    await take('POST /admin/prices/refresh', admin('POST', '/admin/prices/refresh'));
    await take('POST /admin/webhooks/redeliver', admin('POST', '/admin/webhooks/redeliver', {}));
    await take(`DELETE /admin/cache/${inn}`, admin('DELETE', `/admin/cache/${inn}`));
    await take('DELETE budget', admin('DELETE', '/admin/budgets/crm/month', { reason: 'back' }));
    await take('GET /admin/audit after', admin('GET', '/admin/audit'));
    await take('GET /v1/me', h.call('crm', '/v1/me'));
    await take(
      'POST /console/session',
      fetch(`${h.gateway.url}/console/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: h.adminTokens.fin }),
      }),
      201,
    );

    const found = answers.flatMap(([label, body]) => camelKeys(body).map((k) => `${label}: ${k}`));
    expect(found).toEqual([]);
  });

  it('a camelCase field in a body is 422 naming the snake_case one, and nothing changes', async () => {
    const audit = async () =>
      ((await (await admin('GET', '/admin/audit')).json()) as { count: number }).count;
    const before = await audit();
    const cases: Array<[string, string, unknown, string, string]> = [
      [
        'PUT',
        '/admin/budgets/crm/day',
        { limitMinor: 5, limit_minor: 5, reason: 'r' },
        'limitMinor',
        'limit_minor',
      ],
      [
        'PUT',
        '/admin/budgets/crm/day',
        { limit_minor: 5, softMinor: 1, reason: 'r' },
        'softMinor',
        'soft_minor',
      ],
      [
        'POST',
        '/admin/webhooks/redeliver',
        { checkId: '6f1c1f3e-2d4b-4c8e-9a7b-0e5d3c2b1a09' },
        'checkId',
        'check_id',
      ],
    ];
    for (const [method, path, body, field, snake] of cases) {
      const res = await admin(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(422);
      const env = (await res.json()) as {
        error: { code: string; details: { fields: Array<{ field: string; message: string }> } };
      };
      expect(env.error.code).toBe('validation_failed');
      const problem = env.error.details.fields.find((f) => f.field === field);
      expect(problem?.message, `${method} ${path}`).toContain(`send ${snake}`);
    }
    expect(await audit()).toBe(before);
  });

  it('the admin OpenAPI document names the same snake_case fields the answers carry', async () => {
    const res = await admin('GET', '/admin/openapi.json');
    const doc = (await res.json()) as Record<string, unknown>;
    // The document's own vocabulary is left alone (it is not an answer of the gateway's data).
    expect(JSON.stringify(doc)).toContain('"requestBody"');
    const properties: string[] = [];
    const walk = (v: unknown, path: string): void => {
      if (Array.isArray(v)) {
        for (const [i, x] of v.entries()) walk(x, `${path}[${i}]`);
      } else if (v !== null && typeof v === 'object')
        for (const [k, x] of Object.entries(v)) {
          if (k === 'properties' && x && typeof x === 'object')
            properties.push(
              ...Object.keys(x)
                .filter((p) => /[A-Z]/.test(p))
                .map((p) => `${path}.${p}`),
            );
          walk(x, `${path}.${k}`);
        }
    };
    walk(doc, '$');
    expect(properties).toEqual([]);

    // Each documented budget field, and nothing else, in GET /admin/budgets.
    const paths = doc.paths as Record<string, Record<string, Record<string, unknown>>>;
    const schemaOf = (path: string, method: string) =>
      (
        (paths[path]![method]!.responses as Record<string, { content: Record<string, { schema: object }> }>)[
          '200'
        ]!.content['application/json']!.schema as { properties: Record<string, unknown> }
      ).properties;
    const budget = (
      schemaOf('/admin/budgets', 'get').budgets as {
        additionalProperties: { items: Record<string, unknown> };
      }
    ).additionalProperties.items;
    const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
    const valid = ajv.compile({ ...budget, additionalProperties: false });
    const all = (
      (await (await admin('GET', '/admin/budgets')).json()) as { budgets: Record<string, unknown[]> }
    ).budgets;
    for (const [app, list] of Object.entries(all))
      for (const b of list) expect(valid(b), `${app}: ${ajv.errorsText(valid.errors)}`).toBe(true);
  });
});
