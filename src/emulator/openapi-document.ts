// The machine-readable description served at GET /v1/openapi.json: OpenAPI 3.0.3, interface
// version 1.0, every path, parameter, response and schema of the upstream, with the bearer
// scheme. Built once at start-up; it must follow docs/upstream-gaps.md wherever the spec
// says "not shown".
import { SEARCH_KINDS, SECTION_NAMES } from '../domain/requests.ts';
import { int, ref, schemas, str } from './openapi-schemas.ts';

const intHeader = (description: string) => ({ description, schema: int() });
const rateHeaders = {
  'X-RateLimit-Limit': intHeader('Requests per minute allotted to the key'),
  'X-RateLimit-Remaining': intHeader('Requests left in the current minute'),
  'X-RateLimit-Reset': intHeader('Unix time when the minute counter resets'),
  'X-Request-Id': { description: 'Request identifier, also in error meta.request_id', schema: str() },
};
const chargedHeader = { 'X-Charged-Minor': intHeader('Amount charged by this call, kopecks') };
const retryAfter = { 'Retry-After': intHeader('Seconds to wait') };

const ERROR_TEXT: Record<number, string> = {
  401: 'unauthorized',
  402: 'insufficient_funds',
  403: 'feature_unavailable, sandbox_unavailable or price_inactive',
  404: 'not_found',
  409: 'idempotency_in_progress',
  422: 'validation_failed or idempotency_key_reused',
  429: 'rate_limited or quota_exceeded (Retry-After)',
  500: 'internal_error',
  502: 'source_unavailable',
  503: 'billing_unavailable',
};

function errors(...statuses: number[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const status of [...statuses, 500]) {
    out[String(status)] = {
      description: ERROR_TEXT[status],
      headers: status === 429 ? { ...retryAfter } : {},
      content: { 'application/json': { schema: ref('Error') } },
    };
  }
  return out;
}

function ok(schemaName: string, description: string, headers: Record<string, unknown> = {}) {
  return {
    description,
    headers: { ...rateHeaders, ...headers },
    content: { 'application/json': { schema: ref(schemaName) } },
  };
}

const innParam = {
  name: 'inn',
  in: 'path',
  required: true,
  description: '10 digits (legal entity) or 12 digits (individual); check digits verified',
  schema: str({ pattern: '^(\\d{10}|\\d{12})$' }),
};
const idemParam = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: 'Up to 64 characters; lives one day',
  schema: str({ minLength: 1, maxLength: 64 }),
};
const qParam = { name: 'q', in: 'query', required: true, schema: str({ minLength: 3, maxLength: 200 }) };

const paths: Record<string, unknown> = {
  '/v1/openapi.json': {
    get: {
      operationId: 'getOpenApi',
      summary: 'This description',
      security: [],
      responses: {
        '200': {
          description: 'OpenAPI 3.0.3 document',
          content: { 'application/json': { schema: { type: 'object' } } },
        },
      },
    },
  },
  '/v1/me': {
    get: {
      operationId: 'getMe',
      summary: 'Account, key, wallet and prices (last known values)',
      responses: { '200': ok('Me', 'Account and key record'), ...errors(401, 403, 429) },
    },
  },
  '/v1/companies/{inn}': {
    get: {
      operationId: 'getCompany',
      summary: 'Company dossier; price dossier, opens the 15-minute window',
      parameters: [innParam, idemParam],
      responses: {
        '200': ok('Dossier', 'Dossier', chargedHeader),
        ...errors(401, 402, 403, 404, 409, 422, 429, 503),
      },
    },
  },
  '/v1/companies/{inn}/{section}': {
    get: {
      operationId: 'getCompanySection',
      summary: 'One section of the dossier; free inside an open dossier window',
      parameters: [
        innParam,
        { name: 'section', in: 'path', required: true, schema: str({ enum: [...SECTION_NAMES] }) },
        { name: 'cursor', in: 'query', required: false, schema: str() },
        idemParam,
      ],
      responses: {
        '200': ok('Section', 'Section or section page', chargedHeader),
        ...errors(401, 402, 403, 404, 409, 422, 429, 503),
      },
    },
  },
  '/v1/check': {
    post: {
      operationId: 'createCheck',
      summary: 'Fresh check from the registers; charged at once',
      parameters: [idemParam],
      requestBody: { required: true, content: { 'application/json': { schema: ref('CheckRequest') } } },
      responses: {
        '200': ok('CheckResult', 'Data collected within the wait', chargedHeader),
        '202': ok('CheckTicket', 'Collection continues; poll or wait for check.completed', {
          ...chargedHeader,
          ...retryAfter,
        }),
        ...errors(401, 402, 403, 409, 422, 429, 502, 503),
      },
    },
  },
  '/v1/checks/{uuid}': {
    get: {
      operationId: 'getCheck',
      summary: 'Poll a check; free',
      parameters: [{ name: 'uuid', in: 'path', required: true, schema: str({ format: 'uuid' }) }],
      responses: {
        '200': ok('CheckResult', 'Ready'),
        '202': ok('CheckTicket', 'Still collecting', retryAfter),
        ...errors(401, 403, 404, 429, 502),
      },
    },
  },
  '/v1/requisites/{inn}': {
    get: {
      operationId: 'getRequisites',
      summary: 'Requisites record from the service database; price requisites',
      parameters: [innParam, idemParam],
      responses: {
        '200': ok('Requisites', 'Requisites record', chargedHeader),
        ...errors(401, 402, 403, 404, 409, 422, 429, 503),
      },
    },
  },
  '/v1/banks/{bic}': {
    get: {
      operationId: 'getBank',
      summary: 'Bank by BIC; free',
      parameters: [{ name: 'bic', in: 'path', required: true, schema: str({ pattern: '^\\d{9}$' }) }],
      responses: { '200': ok('Bank', 'Bank record'), ...errors(401, 403, 404, 422, 429) },
    },
  },
  '/v1/persons/{inn}': {
    get: {
      operationId: 'getPerson',
      summary: 'Affiliations of a person; price person; needs read:persons; daily distinct-INN limit',
      parameters: [innParam, idemParam],
      responses: {
        '200': ok('Person', 'Person record', chargedHeader),
        ...errors(401, 402, 403, 404, 409, 422, 429, 502, 503),
      },
    },
  },
  '/v1/suggest': {
    get: {
      operationId: 'suggest',
      summary: 'Type-ahead suggestions; free; at most 10 items',
      parameters: [qParam],
      responses: { '200': ok('SuggestResponse', 'Suggestions'), ...errors(401, 403, 422, 429, 502) },
    },
  },
  '/v1/search': {
    get: {
      operationId: 'search',
      summary: 'Registry search; free; 20 per minute per account',
      parameters: [
        qParam,
        {
          name: 'kind',
          in: 'query',
          required: false,
          schema: str({ enum: [...SEARCH_KINDS], default: 'all' }),
        },
        { name: 'page', in: 'query', required: false, schema: int({ minimum: 1, maximum: 20, default: 1 }) },
      ],
      responses: { '200': ok('SearchResponse', 'Search result'), ...errors(401, 403, 422, 429, 502) },
    },
  },
};

export function buildOpenApiDocument(serverUrl: string): Record<string, unknown> {
  return {
    openapi: '3.0.3',
    info: {
      title: 'Counterparty Verification Service',
      version: '1.0',
      description:
        'Emulated by counterparty-gateway; choices where the specification is silent are in docs/upstream-gaps.md.',
    },
    servers: [{ url: serverUrl }],
    security: [{ bearerAuth: [] }],
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API_KEY>' },
      },
      schemas,
    },
  };
}
