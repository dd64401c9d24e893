// The upstream's interface as the gateway sees it: every /v1 endpoint it proxies, the scope
// an app needs for it, and the local validation that runs before anything leaves the
// gateway. Anything not listed here is answered 404 by the gateway and never forwarded.
import type { Scope } from './config/schema.ts';
import {
  checkBic,
  checkCheckBody,
  checkIdempotencyKey,
  checkInn,
  checkKind,
  checkPage,
  checkQuery,
  isSectionName,
} from './domain/requests.ts';
import type { FieldProblem } from './errors.ts';

export type RouteName =
  | 'openapi'
  | 'me'
  | 'company'
  | 'section'
  | 'check_create'
  | 'check_poll'
  | 'requisites'
  | 'bank'
  | 'person'
  | 'suggest'
  | 'search';

export interface IncomingCall {
  params: Record<string, string>;
  query: Record<string, string | undefined>;
  /** Parsed JSON body (POST only); `undefined` when the body was absent or not JSON. */
  body: unknown;
  idempotencyKey: string | undefined;
}

export type Verdict =
  | { ok: true }
  | { ok: false; kind: 'invalid'; fields: FieldProblem[] }
  | { ok: false; kind: 'not_found' };

export interface UpstreamRoute {
  name: RouteName;
  method: 'GET' | 'POST';
  /** fastify route pattern, identical to the upstream's path. */
  url: string;
  /** null: any authenticated app; 'public': no token needed (as upstream). */
  scope: Scope | null | 'public';
  /** Whether the upstream may charge for this call (Idempotency-Key accepted). */
  charged: boolean;
  validate(call: IncomingCall): Verdict;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function verdict(...problems: FieldProblem[][]): Verdict {
  const fields = problems.flat();
  return fields.length ? { ok: false, kind: 'invalid', fields } : { ok: true };
}

const ok = (): Verdict => ({ ok: true });

export const UPSTREAM_ROUTES: readonly UpstreamRoute[] = [
  { name: 'openapi', method: 'GET', url: '/v1/openapi.json', scope: 'public', charged: false, validate: ok },
  { name: 'me', method: 'GET', url: '/v1/me', scope: null, charged: false, validate: ok },
  {
    name: 'company',
    method: 'GET',
    url: '/v1/companies/:inn',
    scope: 'read:companies',
    charged: true,
    validate: (c) => verdict(checkInn(c.params.inn!), checkIdempotencyKey(c.idempotencyKey)),
  },
  {
    name: 'section',
    method: 'GET',
    url: '/v1/companies/:inn/:section',
    scope: 'read:companies',
    charged: true,
    validate: (c) => {
      const v = verdict(checkInn(c.params.inn!), checkIdempotencyKey(c.idempotencyKey));
      if (!v.ok) return v;
      return isSectionName(c.params.section!) ? v : { ok: false, kind: 'not_found' };
    },
  },
  {
    name: 'check_create',
    method: 'POST',
    url: '/v1/check',
    scope: 'read:checks',
    charged: true,
    validate: (c) => verdict(checkCheckBody(c.body).problems, checkIdempotencyKey(c.idempotencyKey)),
  },
  {
    name: 'check_poll',
    method: 'GET',
    url: '/v1/checks/:uuid',
    scope: 'read:checks',
    charged: false,
    validate: (c) => (UUID.test(c.params.uuid!) ? { ok: true } : { ok: false, kind: 'not_found' }),
  },
  {
    name: 'requisites',
    method: 'GET',
    url: '/v1/requisites/:inn',
    scope: 'read:companies',
    charged: true,
    validate: (c) => verdict(checkInn(c.params.inn!), checkIdempotencyKey(c.idempotencyKey)),
  },
  {
    name: 'bank',
    method: 'GET',
    url: '/v1/banks/:bic',
    scope: 'read:companies',
    charged: false,
    validate: (c) => verdict(checkBic(c.params.bic!)),
  },
  {
    name: 'person',
    method: 'GET',
    url: '/v1/persons/:inn',
    scope: 'read:persons',
    charged: true,
    validate: (c) => verdict(checkInn(c.params.inn!), checkIdempotencyKey(c.idempotencyKey)),
  },
  {
    name: 'suggest',
    method: 'GET',
    url: '/v1/suggest',
    scope: 'read:companies',
    charged: false,
    validate: (c) => verdict(checkQuery(c.query.q)),
  },
  {
    name: 'search',
    method: 'GET',
    url: '/v1/search',
    scope: 'read:companies',
    charged: false,
    validate: (c) => verdict(checkQuery(c.query.q), checkKind(c.query.kind), checkPage(c.query.page)),
  },
];
