// Drop-in, machine-checked (issue #18). The gateway serves GET /v1/openapi.json as the upstream's
// document plus its own codes, statuses and headers, valid OpenAPI 3.0.3
// (@seriousme/openapi-schema-validator). Then one request set (every endpoint, valid and invalid
// inputs, repeats) goes to the emulator directly and through the gateway, and every answer of
// both is validated against that document with ajv (status declared for the operation, body
// matching its schema); valid 2xx bodies must be byte-identical and every refusal must have the
// upstream's status, code and details.fields shape.
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Probe, requestSet } from '../helpers/drop-in-requests.ts';
import { type Harness, startHarness } from '../helpers/gateway-harness.ts';

type Json = Record<string, unknown>;

let h: Harness;
let doc: Json;
beforeAll(async () => {
  // The direct calls share the upstream key with the gateway's: room for both sides of the set.
  h = await startHarness({
    emulator: {
      checkSeconds: 0.05,
      checkWaitSeconds: 1,
      limits: { keyPerMinute: 600, searchPerMinute: 200 },
    },
  });
  doc = (await (await fetch(`${h.gateway.url}/v1/openapi.json`)).json()) as Json;
});
afterAll(() => h.close());

const direct = (path: string, init?: RequestInit) => h.direct(path, init);

describe("the gateway's OpenAPI document", () => {
  it('is valid OpenAPI 3.0.3 and names the gateway', async () => {
    const result = await new Validator().validate(doc as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe('3.0.3');
    expect((doc.servers as Array<{ url: string }>)[0]!.url).toBe(h.gateway.url);
  });

  it("keeps every upstream path and adds the gateway's codes, statuses and headers", async () => {
    const upstream = (await (await direct('/v1/openapi.json')).json()) as Json;
    expect(Object.keys(doc.paths as Json)).toEqual(Object.keys(upstream.paths as Json));
    const text = JSON.stringify(doc);
    for (const code of [
      'budget_exceeded',
      'not_cached',
      'store_unavailable',
      'upstream_unavailable',
      'prices_unknown',
    ])
      expect(text).toContain(code);
    const company = ((doc.paths as Json)['/v1/companies/{inn}'] as Json).get as Json;
    const responses = company.responses as Record<string, Json>;
    for (const status of ['200', '402', '429', '502', '503', '504']) expect(responses[status]).toBeDefined();
    expect(Object.keys(responses['200']!.headers as Json)).toEqual(
      expect.arrayContaining(['X-Cache', 'X-Charged-Minor', 'X-Window-Expires', 'X-RateLimit-Limit']),
    );
    expect((company.parameters as Array<{ name: string }>).map((p) => p.name)).toContain('X-Max-Wait-Ms');
  });
});

describe("the gateway's own additions are typed", () => {
  it('X-Cache declares every status the gateway writes (CacheStatus in src/pipeline/outcome.ts)', async () => {
    const { readFileSync } = await import('node:fs');
    const source = readFileSync('src/pipeline/outcome.ts', 'utf8');
    const statuses = /export type CacheStatus = ([^;]+);/
      .exec(source)![1]!
      .match(/'([A-Z]+)'/g)!
      .map((q) => q.slice(1, -1));
    const company = ((doc.paths as Record<string, Json>)['/v1/companies/{inn}']!.get as Json)
      .responses as Record<string, Json>;
    const xCache = ((company['200']!.headers as Json)['X-Cache'] as Json).schema as { enum: string[] };
    expect([...xCache.enum].sort()).toEqual([...statuses].sort());
  });

  it("GET /v1/me's gateway object and budget_exceeded's details validate real answers", async () => {
    const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
    const schemas = (doc.components as Json).schemas as Record<string, Json>;
    const gatewaySchema = (schemas.Me!.properties as Json).gateway as Json;
    expect(gatewaySchema).toBeDefined();
    const me = (await (await h.call('alpha', '/v1/me')).json()) as Json;
    const validMe = ajv.compile(jsonSchema({ ...gatewaySchema, additionalProperties: false }) as Json);
    expect(validMe(me.gateway), ajv.errorsText(validMe.errors)).toBe(true);
    const details = (((schemas.Error!.properties as Json).error as Json).properties as Json).details as Json;
    for (const field of ['scope', 'period', 'limit_minor', 'spent_minor', 'reserved_minor', 'estimate_minor'])
      expect(Object.keys(details.properties as Json)).toContain(field);
  });
});

function operationOf(path: string, method: string): Json | undefined {
  const bare = path.split('?')[0]!;
  const paths = doc.paths as Record<string, Json>;
  const exact = paths[bare];
  if (exact) return exact[method.toLowerCase()] as Json | undefined;
  for (const [template, item] of Object.entries(paths)) {
    const pattern = new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    if (pattern.test(bare)) return item[method.toLowerCase()] as Json | undefined;
  }
  return undefined;
}

function violations(ajv: Ajv, probe: Probe, status: number, body: string): string[] {
  const op = operationOf(probe.path, probe.method ?? 'GET');
  if (!op) return [`${probe.path}: no operation in the document`];
  const res = (op.responses as Record<string, Json>)[String(status)];
  if (!res) return [`${probe.path}: status ${status} not declared`];
  const schema = ((res.content as Json | undefined)?.['application/json'] as Json | undefined)?.schema;
  if (!schema) return [];
  const validate = ajv.compile(jsonSchema({ ...(schema as Json), components: doc.components }) as Json);
  return validate(JSON.parse(body)) ? [] : [`${probe.path} ${status}: ${ajv.errorsText(validate.errors)}`];
}

/** OpenAPI 3.0's `nullable` on a schema without `type` (a $ref, an enum) as JSON Schema. */
function jsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(jsonSchema);
  if (node === null || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) out[k] = jsonSchema(v);
  if (out.nullable === true && out.type === undefined) {
    const { nullable: _n, ...rest } = out;
    return { anyOf: [rest, { type: 'null' }] };
  }
  return out;
}

const fieldsShape = (body: Json) =>
  (((body.error as Json).details as Json | undefined)?.fields as Array<Json> | undefined)?.map((f) =>
    Object.keys(f).sort(),
  );

describe('side by side: the emulator directly and the gateway, validated against the document', () => {
  it('every answer of both matches the document; 2xx bodies identical; refusals the same', async () => {
    const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
    const problems: string[] = [];
    let identical2xx = 0;
    h.advance(61_000); // a fresh upstream minute for the cold check
    for (const probe of requestSet()) {
      const init: RequestInit = {
        method: probe.method ?? 'GET',
        headers: probe.headers,
        body: probe.body === undefined ? undefined : JSON.stringify(probe.body),
      };
      const g = await h.call('alpha', probe.path, init);
      const gBody = await g.text();
      const d = await direct(probe.path, init);
      const dBody = await d.text();
      problems.push(...violations(ajv, probe, g.status, gBody).map((v) => `gateway ${v}`));
      problems.push(...violations(ajv, probe, d.status, dBody).map((v) => `upstream ${v}`));
      if (g.status !== d.status) {
        problems.push(`${probe.path}: gateway ${g.status}, upstream ${d.status}`);
        continue;
      }
      if (g.status >= 200 && g.status < 300) {
        // A check's ticket or answer names its own check and time; the rest must be the same bytes.
        // /v1/me is the gateway's own answer (its price book), a difference the README lists.
        if (probe.method === 'POST' || probe.path === '/v1/me') continue;
        if (gBody === dBody) identical2xx++;
        else problems.push(`${probe.path}: 2xx body differs`);
        continue;
      }
      const [ge, de] = [JSON.parse(gBody) as Json, JSON.parse(dBody) as Json];
      if ((ge.error as Json).code !== (de.error as Json).code)
        problems.push(`${probe.path}: code ${(ge.error as Json).code} vs ${(de.error as Json).code}`);
      if (JSON.stringify(fieldsShape(ge)) !== JSON.stringify(fieldsShape(de)))
        problems.push(`${probe.path}: details.fields differ`);
      if ((ge.meta as Json).request_id !== g.headers.get('x-request-id'))
        problems.push(`${probe.path}: meta.request_id is not X-Request-Id`);
    }
    expect(problems).toEqual([]);
    expect(identical2xx).toBeGreaterThanOrEqual(20);
  });
});
