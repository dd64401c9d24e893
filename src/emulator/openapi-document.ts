// The machine-readable description served at GET /v1/openapi.json: OpenAPI 3.0.3, interface
// version 1.0, every path, parameter, response and schema of the upstream, with the bearer
// scheme. Built once at start-up; it must follow docs/upstream-gaps.md wherever the spec
// says "not shown".
import { SEARCH_KINDS, SECTION_NAMES } from '../domain/requests.ts';
import { ERRORS } from '../errors.ts';
import { PRICE_KEYS } from './emulator-config.ts';

type Schema = Record<string, unknown>;
const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const str = (extra: Schema = {}): Schema => ({ type: 'string', ...extra });
const int = (extra: Schema = {}): Schema => ({ type: 'integer', ...extra });
const bool: Schema = { type: 'boolean' };
const obj = (properties: Record<string, Schema>, required: string[] = [], extra: Schema = {}): Schema => ({
  type: 'object',
  properties,
  ...(required.length ? { required } : {}),
  ...extra,
});
const arr = (items: Schema): Schema => ({ type: 'array', items });
const codeName = obj({ code: str(), name: str() }, ['code']);

const UPSTREAM_CODES = Object.keys(ERRORS).filter(
  (code) => !['budget_exceeded', 'not_cached', 'upstream_unavailable', 'store_unavailable'].includes(code),
);

const schemas: Record<string, Schema> = {
  Error: obj(
    {
      error: obj(
        {
          code: str({ enum: UPSTREAM_CODES }),
          message: str(),
          details: obj(
            {
              balance_minor: int(),
              price_minor: int(),
              fields: arr(ref('FieldProblem')),
            },
            [],
            { additionalProperties: true },
          ),
        },
        ['code', 'message', 'details'],
      ),
      meta: obj({ request_id: str() }, ['request_id']),
    },
    ['error', 'meta'],
  ),
  FieldProblem: obj({ field: str(), code: str(), message: str() }, ['field', 'code', 'message']),
  Me: obj(
    {
      account: obj({ id: int(), name: str({ nullable: true }) }, ['id', 'name']),
      key: obj(
        {
          name: str(),
          environment: str({ enum: ['production', 'sandbox'] }),
          scopes: arr(str()),
          expires_at: str({ format: 'date-time', nullable: true }),
        },
        ['name', 'environment', 'scopes', 'expires_at'],
      ),
      wallet: obj({ balance_minor: int(), as_of: str({ format: 'date-time' }) }, ['balance_minor', 'as_of'], {
        nullable: true,
      }),
      prices: {
        type: 'array',
        nullable: true,
        items: obj(
          {
            key: str({ enum: [...PRICE_KEYS] }),
            title: str(),
            price_minor: int(),
            is_individual: { type: 'boolean', enum: [true] },
          },
          ['key', 'title', 'price_minor'],
        ),
      },
    },
    ['account', 'key', 'wallet', 'prices'],
  ),
  Company: obj(
    {
      inn: str({ pattern: '^(\\d{10}|\\d{12})$' }),
      type: str({ enum: ['legal', 'individual'] }),
      ogrn: str(),
      kpp: str({ nullable: true }),
      okpo: str({ nullable: true }),
      okato: codeName,
    },
    ['inn', 'type', 'ogrn'],
    { additionalProperties: true },
  ),
  Dossier: obj(
    {
      found: bool,
      company: ref('Company'),
      score: obj({ score: { type: 'number' }, risk_level: str() }, ['score', 'risk_level']),
    },
    ['found'],
    {
      additionalProperties: true,
      description: 'The company dossier: 25 sections, one member per section name.',
    },
  ),
  SectionPage: obj(
    { items: arr(obj({}, [], { additionalProperties: true })), cursor: str() },
    ['items', 'cursor'],
    {
      description: 'One page of a paged section; cursor is empty on the last page.',
    },
  ),
  Section: {
    description: 'A section: a page (items and cursor), an array of objects, or an object.',
    oneOf: [
      ref('SectionPage'),
      arr(obj({}, [], { additionalProperties: true })),
      obj({}, [], { additionalProperties: true }),
    ],
  },
  Status: obj({ code: str(), title: str() }, ['code', 'title']),
  Requisites: obj(
    {
      inn: str(),
      type: str({ enum: ['legal', 'individual'] }),
      ogrn: str(),
      kpp: str({ nullable: true }),
      okpo: str({ nullable: true }),
      name_full: str(),
      name_short: str(),
      status: ref('Status'),
    },
    ['inn', 'type', 'ogrn', 'name_full', 'name_short', 'status'],
    { additionalProperties: true },
  ),
  CheckRequisitesResult: obj({ found: bool, requisites: { allOf: [ref('Requisites')], nullable: true } }, [
    'found',
    'requisites',
  ]),
  CheckTicket: obj(
    {
      check_id: str({ format: 'uuid' }),
      status: str({ enum: ['queued', 'running', 'succeeded', 'failed'] }),
      inn: str(),
      purpose: str({ enum: ['dossier', 'requisites'] }),
      created_at: str({ format: 'date-time' }),
      poll_url: str({ format: 'uri' }),
      retry_after: int({ description: 'Seconds; the same as the Retry-After header.' }),
    },
    ['check_id', 'status', 'created_at', 'poll_url'],
  ),
  CheckRequest: obj(
    {
      inn: str({ pattern: '^(\\d{10}|\\d{12})$' }),
      purpose: str({ enum: ['dossier', 'requisites'], default: 'dossier' }),
    },
    ['inn'],
  ),
  CheckResult: { oneOf: [ref('Dossier'), ref('CheckRequisitesResult')] },
  Bank: obj(
    {
      bic: str({ pattern: '^\\d{9}$' }),
      name: str(),
      english_name: str({ nullable: true }),
      correspondent_account: str({ nullable: true }),
      swift: arr(str()),
      address: obj({ postal_code: str(), locality: str(), street: str() }, [], {
        additionalProperties: true,
      }),
    },
    ['bic', 'name'],
    { additionalProperties: true },
  ),
  PersonCompany: obj({ inn: str(), ogrn: str(), role: str(), name_short: str() }, ['inn', 'role'], {
    additionalProperties: true,
  }),
  Person: obj(
    {
      inn: str(),
      kind: str({ enum: ['individual', 'legal'] }),
      full_name: str(),
      head_count: int(),
      founder_count: int(),
      companies: arr(ref('PersonCompany')),
    },
    ['inn', 'kind', 'full_name', 'head_count', 'founder_count', 'companies'],
    { additionalProperties: true },
  ),
  Suggestion: obj(
    {
      inn: str(),
      type: str(),
      kpp: str({ nullable: true }),
      ogrn: str(),
      name: str(),
      name_full: str(),
      address: str({ nullable: true }),
      heads: { type: 'array', nullable: true, items: obj({}, [], { additionalProperties: true }) },
    },
    ['inn', 'type', 'name'],
    { additionalProperties: true },
  ),
  SuggestResponse: obj({ items: { ...arr(ref('Suggestion')), maxItems: 10 } }, ['items']),
  SearchGroup: obj(
    {
      total: int(),
      has_more: bool,
      items: arr(obj({ kind: str(), inn: str() }, ['kind', 'inn'], { additionalProperties: true })),
    },
    ['total', 'has_more', 'items'],
  ),
  SearchResponse: obj(
    {
      data: obj(
        {
          query: str(),
          kind: str({ enum: [...SEARCH_KINDS] }),
          groups: { type: 'object', additionalProperties: ref('SearchGroup') },
        },
        ['query', 'kind', 'groups'],
      ),
    },
    ['data'],
  ),
  CheckCompletedEvent: obj(
    {
      id: str({ format: 'uuid' }),
      event: str({ enum: ['check.completed'] }),
      created_at: str({ format: 'date-time' }),
      data: obj(
        {
          check_id: str({ format: 'uuid' }),
          inn: str(),
          found: bool,
          dossier: ref('Dossier'),
          requisites: ref('Requisites'),
          dossier_url: str({ format: 'uri' }),
        },
        ['check_id', 'inn', 'found', 'dossier_url'],
      ),
    },
    ['id', 'event', 'created_at', 'data'],
  ),
};

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
