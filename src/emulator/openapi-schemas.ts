// Component schemas of the OpenAPI description (GET /v1/openapi.json): every body the
// upstream serves, with our choices where the spec says "not shown" (docs/upstream-gaps.md
// and upstream-gaps-data.md). Plain data; nothing here is computed per request.
import { SEARCH_KINDS } from '../domain/requests.ts';
import { ERRORS } from '../errors.ts';
import { PRICE_KEYS } from './emulator-config.ts';

export type Schema = Record<string, unknown>;
export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
export const str = (extra: Schema = {}): Schema => ({ type: 'string', ...extra });
export const int = (extra: Schema = {}): Schema => ({ type: 'integer', ...extra });
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

export const schemas: Record<string, Schema> = {
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
    // anyOf, not oneOf: a page is also an object, so a page would match two branches and fail
    // oneOf's "exactly one" (Prism and ajv reject every paged answer).
    description: 'A section: a page (items and cursor), an array of objects, or an object.',
    anyOf: [
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
  // anyOf: both are open objects, so a dossier can also match the requisites result's schema.
  CheckResult: { anyOf: [ref('Dossier'), ref('CheckRequisitesResult')] },
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
