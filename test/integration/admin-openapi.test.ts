// The admin API's own OpenAPI document (issue #18): served at /admin/openapi.json behind the admin
// token, valid OpenAPI 3.0.3, and describing exactly the /admin routes the server registers.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localDate } from '../../src/cost/budget-periods.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

describe('GET /admin/openapi.json', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  it('is valid OpenAPI 3.0.3, names the gateway, and needs the admin token', async () => {
    expect((await fetch(`${h.gateway.url}/admin/openapi.json`)).status).toBe(401);
    const res = await fetch(`${h.gateway.url}/admin/openapi.json`, {
      headers: { authorization: `Bearer ${h.adminToken}` },
    });
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; servers: Array<{ url: string }>; paths: object };
    const result = await new Validator().validate(doc as never);
    expect(result.errors ?? []).toEqual([]);
    expect(doc.openapi).toBe('3.0.3');
    expect(doc.servers[0]!.url).toBe(h.gateway.url);
  });

  it('describes every /admin route the server registers, and only those', async () => {
    const source = [
      '../../src/admin/admin-routes.ts',
      '../../src/finance/budget-routes.ts',
      '../../src/admin/replicas-routes.ts',
      '../../src/finance/statement-routes.ts',
    ]
      .map((file) => readFileSync(join(import.meta.dirname, file), 'utf8'))
      .join('\n');
    const registered = [...source.matchAll(/app\.(get|post|delete|put)\('(\/admin\/[^']+)'/g)]
      .map(([, method, path]) => `${method} ${path!.replace(/:(\w+)/g, '{$1}').replace('{scope}', '{app}')}`)
      .sort();
    const res = await fetch(`${h.gateway.url}/admin/openapi.json`, {
      headers: { authorization: `Bearer ${h.adminToken}` },
    });
    const doc = (await res.json()) as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths)
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`))
      .sort();
    expect(documented).toEqual(registered);
    // And each documented route answers (not 404) with the admin token.
    for (const entry of documented.filter((e) => e.startsWith('get '))) {
      // A path parameter gets a value that exists: the current month of cost.timeZone.
      const path = entry
        .slice(4)
        .replace('{month}', localDate(h.gateway.clock.now(), 'Europe/Moscow').slice(0, 7));
      const r = await fetch(`${h.gateway.url}${path}`, {
        headers: { authorization: `Bearer ${h.adminToken}` },
      });
      expect(r.status, path).toBe(200);
    }
  });
});
