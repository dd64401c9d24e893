// GET /v1/openapi.json is a real OpenAPI 3.0.3 document of interface version 1.0: served
// without a key, every spec path and operation present, every $ref resolvable, every
// parameter and response well formed, and the bearer scheme declared.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECTION_NAMES } from '../../src/domain/requests.ts';
import { type Harness, startHarness } from './emulator-harness.ts';

let h: Harness;
// biome-ignore lint/suspicious/noExplicitAny: the document is walked generically
let doc: any;

beforeAll(async () => {
  h = await startHarness();
  const r = await h.get('/v1/openapi.json', { key: null });
  expect(r.status).toBe(200);
  doc = r.json;
});
afterAll(() => h.close());

const SPEC_OPERATIONS: Array<[string, string]> = [
  ['get', '/v1/openapi.json'],
  ['get', '/v1/me'],
  ['get', '/v1/companies/{inn}'],
  ['get', '/v1/companies/{inn}/{section}'],
  ['post', '/v1/check'],
  ['get', '/v1/checks/{uuid}'],
  ['get', '/v1/requisites/{inn}'],
  ['get', '/v1/banks/{bic}'],
  ['get', '/v1/persons/{inn}'],
  ['get', '/v1/suggest'],
  ['get', '/v1/search'],
];

function resolve(ref: string): unknown {
  expect(ref.startsWith('#/')).toBe(true);
  return ref
    .slice(2)
    .split('/')
    .reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], doc);
}

function walkRefs(node: unknown, refs: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) walkRefs(item, refs);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') refs.push(v);
      else walkRefs(v, refs);
    }
  }
  return refs;
}

describe('OpenAPI document', () => {
  it('states OpenAPI 3.0.3, interface version 1.0, and the bearer security scheme', () => {
    expect(doc.openapi).toBe('3.0.3');
    expect(doc.info).toMatchObject({ version: '1.0', title: expect.any(String) });
    expect(doc.components.securitySchemes.bearerAuth).toEqual(
      expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    );
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.paths['/v1/openapi.json'].get.security).toEqual([]);
  });

  it('has every path and operation of the spec and nothing else', () => {
    for (const [method, path] of SPEC_OPERATIONS)
      expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    expect(Object.keys(doc.paths).sort()).toEqual([...new Set(SPEC_OPERATIONS.map(([, p]) => p))].sort());
  });

  it('every $ref resolves and every operation is well formed', () => {
    for (const ref of walkRefs(doc)) expect(resolve(ref), ref).toBeDefined();
    const ids = new Set<string>();
    for (const [path, item] of Object.entries<Record<string, Record<string, unknown>>>(doc.paths)) {
      const templated = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const [method, op] of Object.entries(item)) {
        expect(['get', 'post']).toContain(method);
        expect(typeof op.operationId).toBe('string');
        expect(ids.has(op.operationId as string)).toBe(false);
        ids.add(op.operationId as string);
        const responses = op.responses as Record<string, { description: string }>;
        expect(Object.keys(responses).length).toBeGreaterThan(0);
        for (const [status, response] of Object.entries(responses)) {
          expect(status).toMatch(/^[1-5]\d\d$/);
          expect(typeof response.description).toBe('string');
        }
        const params = (op.parameters ?? []) as Array<{
          name: string;
          in: string;
          required?: boolean;
          schema: unknown;
        }>;
        for (const p of params) {
          expect(['path', 'query', 'header']).toContain(p.in);
          expect(p.schema).toBeDefined();
          if (p.in === 'path') expect(p.required).toBe(true);
        }
        expect(params.filter((p) => p.in === 'path').map((p) => p.name)).toEqual(templated);
      }
    }
  });

  it('describes the documented statuses, headers and the 28 section names', () => {
    const company = doc.paths['/v1/companies/{inn}'].get;
    expect(Object.keys(company.responses)).toEqual(
      expect.arrayContaining(['200', '401', '402', '403', '404', '422', '429', '503']),
    );
    expect(company.responses['200'].headers['X-Charged-Minor']).toBeDefined();
    const check = doc.paths['/v1/check'].post;
    expect(Object.keys(check.responses)).toEqual(
      expect.arrayContaining(['200', '202', '401', '402', '403', '409', '422', '429', '502', '503']),
    );
    expect(check.responses['202'].headers['Retry-After']).toBeDefined();
    const section = doc.paths['/v1/companies/{inn}/{section}'].get.parameters.find(
      (p: { name: string }) => p.name === 'section',
    );
    expect(section.schema.enum).toEqual([...SECTION_NAMES]);
    expect(doc.components.schemas.Error.required).toEqual(['error', 'meta']);
    expect(doc.components.schemas.FieldProblem.required).toEqual(['field', 'code', 'message']);
  });
});
