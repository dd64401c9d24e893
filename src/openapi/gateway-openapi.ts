// The OpenAPI document a client of the gateway generates from (GET /v1/openapi.json through the
// gateway): the upstream's own document, unchanged in every path, schema and answer it states,
// plus what the gateway adds: its error codes (budget_exceeded, not_cached, store_unavailable,
// upstream_unavailable, prices_unknown) with their statuses, the details of its 429, its
// request headers (X-Max-Wait-Ms, Cache-Control) and answer headers (X-Cache, X-Charged-Minor,
// X-Window-Expires, ...), and `servers` naming the gateway. Still OpenAPI 3.0.3.
//
// Pure: a function of the upstream document and the gateway's address. Must never drop or
// narrow anything the upstream document allows (a client generated from it keeps working).
import type { ErrorCode } from '../errors.ts';

type Json = Record<string, unknown>;

const int = (extra: Json = {}) => ({ type: 'integer', ...extra });
const str = (extra: Json = {}) => ({ type: 'string', ...extra });

/** Codes the gateway makes itself, and where each is answered (README "Contract with apps"). */
export const GATEWAY_ERRORS: Partial<Record<ErrorCode, { statuses: number[]; when: string }>> = {
  budget_exceeded: {
    statuses: [402],
    when: "the app's spend budget for the period is used up (charged routes)",
  },
  not_cached: { statuses: [504], when: 'Cache-Control: only-if-cached and no cached answer' },
  upstream_unavailable: {
    statuses: [502, 504],
    when: 'the upstream is unreachable (502) or did not answer in time (504)',
  },
  store_unavailable: { statuses: [503], when: "the gateway's shared state is unreachable" },
  prices_unknown: {
    statuses: [503],
    when: 'a capped app asked for a charged call and no price is known yet',
  },
};

const RESPONSE_HEADERS: Json = {
  'X-Request-Id': { description: "The gateway's request id, also in error meta.request_id", schema: str() },
  'X-Upstream-Request-Id': {
    description: "The upstream's request id, when the upstream answered",
    schema: str(),
  },
  'X-Cache': {
    description:
      'HIT, STALE, MISS, BYPASS, COALESCED, or DERIVED (a section answered from the cached dossier)',
    schema: str({ enum: ['HIT', 'STALE', 'MISS', 'BYPASS', 'COALESCED', 'DERIVED'] }),
  },
  'X-Window-Expires': {
    description: "When the company's free re-read window ends",
    schema: str({ format: 'date-time' }),
  },
  'X-RateLimit-Limit': {
    description: "The app's limit in the tightest rate class of the route",
    schema: int(),
  },
  'X-RateLimit-Remaining': { description: "The app's calls left in that class", schema: int() },
  'X-RateLimit-Reset': {
    description: 'Unix time when every counted call has left the window',
    schema: int(),
  },
};
const CHARGE_HEADERS: Json = {
  'X-Charged-Minor': {
    description: 'What THIS call cost, kopecks (0 for a hit, a refusal, a free read)',
    schema: int(),
  },
  'X-Cost-Estimate-Minor': { description: "The gateway's estimate before the call, kopecks", schema: int() },
};

const REQUEST_HEADERS = [
  {
    name: 'X-Max-Wait-Ms',
    in: 'header',
    required: false,
    description: 'Longest wait in the gateway rate queue, ms (0: start now or 429 at once)',
    schema: int({ minimum: 0, maximum: 600_000 }),
  },
  {
    name: 'Cache-Control',
    in: 'header',
    required: false,
    description:
      'RFC 9111 request directives: no-cache, no-store, max-age, max-stale, min-fresh, only-if-cached',
    schema: str(),
  },
];

const RATE_DETAILS: Json = {
  limit: str({ description: 'the class that refused: key, search, suggest or check' }),
  reason: str({ enum: ['deadline', 'app_cap', 'paused', 'shutdown'] }),
  retry_after_ms: int(),
};

/** details of budget_exceeded (src/pipeline/stages/budget.ts). */
const BUDGET_DETAILS: Json = {
  app: str({ description: 'budget_exceeded: the app refused' }),
  scope: str({ enum: ['app', 'global'], description: 'budget_exceeded: whose budget' }),
  period: str({ enum: ['day', 'month'], description: 'budget_exceeded: which period' }),
  limit_minor: int({ description: 'budget_exceeded: the cap, kopecks' }),
  spent_minor: int({ description: 'budget_exceeded: spent in the period, kopecks' }),
  reserved_minor: int({ description: 'budget_exceeded: held for calls in flight, kopecks' }),
  estimate_minor: int({ description: 'budget_exceeded: what the refused call was estimated at' }),
};

/** The `gateway` object GET /v1/me gains through the gateway (src/pipeline/stages/local-answers.ts). */
const ME_GATEWAY: Json = {
  type: 'object',
  description: 'Added by the gateway: the calling app and its spend budgets',
  required: ['app', 'scopes', 'time_zone', 'budgets'],
  properties: {
    app: str(),
    scopes: { type: 'array', items: str() },
    time_zone: str({ description: 'IANA zone of budget days and months' }),
    budgets: {
      type: 'array',
      nullable: true,
      description: 'null while the shared store is unreachable',
      items: {
        type: 'object',
        required: ['scope', 'period', 'period_id', 'limit_minor', 'spent_minor', 'reserved_minor'],
        properties: {
          scope: str({ enum: ['app', 'global'] }),
          period: str({ enum: ['day', 'month'] }),
          period_id: str({ description: 'e.g. 2026-11-28 or 2026-11' }),
          limit_minor: int({ nullable: true }),
          soft_minor: int({ nullable: true }),
          spent_minor: int(),
          reserved_minor: int(),
          remaining_minor: int({ nullable: true }),
        },
      },
    },
  },
};

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

export function gatewayOpenApi(upstream: Json, serverUrl: string): Json {
  const doc = structuredClone(upstream) as Json;
  const info = (doc.info ?? {}) as Json;
  doc.info = {
    ...info,
    description:
      `${String(info.description ?? '')} Served by counterparty-gateway: the upstream's interface plus the gateway's codes, statuses and headers.`.trim(),
  };
  doc.servers = [{ url: serverUrl, description: 'counterparty-gateway' }];
  extendErrorSchema(doc);
  extendMeSchema(doc);
  const paths = (doc.paths ?? {}) as Record<string, Json>;
  for (const [path, item] of Object.entries(paths)) {
    if (path === '/v1/openapi.json') continue;
    for (const method of METHODS) {
      const op = item[method] as Json | undefined;
      if (op) extendOperation(op);
    }
  }
  return doc;
}

function extendErrorSchema(doc: Json): void {
  const schemas = ((doc.components as Json | undefined)?.schemas ?? {}) as Record<string, Json>;
  const error = (schemas.Error?.properties as Record<string, Json> | undefined)?.error;
  const props = error?.properties as Record<string, Json> | undefined;
  if (!props) return;
  const code = props.code;
  if (code && Array.isArray(code.enum)) {
    const known = new Set(code.enum as string[]);
    code.enum = [...(code.enum as string[]), ...Object.keys(GATEWAY_ERRORS).filter((c) => !known.has(c))];
  }
  const details = props.details;
  if (details)
    details.properties = { ...RATE_DETAILS, ...BUDGET_DETAILS, ...((details.properties ?? {}) as Json) };
}

/** GET /v1/me's record gains the typed `gateway` object. */
function extendMeSchema(doc: Json): void {
  const schemas = ((doc.components as Json | undefined)?.schemas ?? {}) as Record<string, Json>;
  const me = schemas.Me;
  if (!me) return;
  me.properties = { ...((me.properties ?? {}) as Json), gateway: ME_GATEWAY };
}

function extendOperation(op: Json): void {
  const parameters = (op.parameters ?? []) as Json[];
  const names = new Set(parameters.map((p) => String(p.name).toLowerCase()));
  op.parameters = [...parameters, ...REQUEST_HEADERS.filter((h) => !names.has(h.name.toLowerCase()))];
  const responses = (op.responses ?? {}) as Record<string, Json>;
  let charged = false;
  for (const [status, res] of Object.entries(responses)) {
    if (!status.startsWith('2')) continue;
    const headers = (res.headers ?? {}) as Json;
    charged ||= 'X-Charged-Minor' in headers;
    res.headers = { ...RESPONSE_HEADERS, ...(charged ? CHARGE_HEADERS : {}), ...headers };
  }
  const errorRef = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };
  const add = (status: number, codes: string[]) => {
    const key = String(status);
    const existing = responses[key];
    const text = codes
      .map((c) => {
        const known = GATEWAY_ERRORS[c as ErrorCode];
        return known ? `${c} (${known.when})` : c;
      })
      .join('; ');
    if (existing) existing.description = `${String(existing.description ?? '')}; gateway: ${text}`;
    else responses[key] = { description: `gateway: ${text}`, content: errorRef };
    const target = responses[key]!;
    target.headers = {
      ...RESPONSE_HEADERS,
      ...(charged ? { 'X-Charged-Minor': CHARGE_HEADERS['X-Charged-Minor'] } : {}),
      ...((target.headers ?? {}) as Json),
    };
  };
  if (charged) add(402, ['budget_exceeded']);
  add(429, ['rate_limited']);
  add(502, ['upstream_unavailable']);
  add(503, charged ? ['store_unavailable', 'prices_unknown'] : ['store_unavailable']);
  add(504, ['upstream_unavailable', 'not_cached']);
  const retry = responses['429'];
  if (retry)
    retry.headers = {
      'Retry-After': { description: 'Seconds to wait', schema: int() },
      ...(retry.headers as Json),
    };
  op.responses = responses;
}
