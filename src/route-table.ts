// The one route table: every /v1 endpoint the gateway proxies, with every fact the gateway
// keeps about it — method and path, the scope an app needs, the rate classes an upstream call
// spends, how the upstream bills it, how its answers are cached, which timeout applies and
// the local validation that runs before anything leaves the gateway. The table `satisfies
// Record<RouteName, RouteSpec>`, so a new route that leaves out a fact does not compile (no
// `default:` branch can make it silently free or uncached). Anything not listed here is
// answered 404 by the gateway and never forwarded.
//
// A leaf: the modules that read the table (cache/cache-keys.ts, cost/estimate.ts,
// limits/limit-classes.ts, the pipeline) import it; it imports only the vocabulary its facts are
// written in (scopes, input checks, cache key builders) and names the limit classes itself.
//
// Must never: hold state or do I/O; decide anything at run time beyond these pure functions;
// import a module that reads the table.
import {
  bankPolicy,
  type CachePolicy,
  checkPolicy,
  companyPolicy,
  personPolicy,
  requisitesPolicy,
  searchPolicy,
  sectionPolicy,
  suggestPolicy,
} from './cache/cache-policies.ts';
import type { Scope } from './config/schema.ts';
import {
  type CheckPurpose,
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
  | { ok: false; kind: 'not_found'; details?: Record<string, string>; message?: string };

/** The upstream's rate classes (its "Limits" table); their defaults: limits/limit-classes.ts. */
export type LimitClassName = 'key' | 'search' | 'suggest' | 'check';

export type WindowKind = 'dossier' | 'requisites';
export type PriceKind = 'dossier' | 'requisites' | 'check' | 'person';

/** How the upstream bills one call (api-spec "Billing rules" and the window table). */
export interface ChargeShape {
  /** Which price applies when the call is charged. */
  kind: PriceKind;
  /** The INN the charge is for. */
  inn: string;
  /** The window this call needs to be free (null: never windowed). */
  covered: WindowKind | null;
  /** The window a charge opens (checks open theirs when data is ready). */
  opens: WindowKind | null;
  /**
   * POST /v1/check: what the check collects, read from the body once (checkCheckBody); the price
   * kind and the window above follow from it, and every later reader takes it from here.
   */
  purpose?: CheckPurpose;
}

export interface RouteSpec {
  method: 'GET' | 'POST';
  /** fastify route pattern, identical to the upstream's path. */
  url: string;
  /** null: any authenticated app; 'public': no token needed (as upstream). */
  scope: Scope | null | 'public';
  /**
   * Rate classes one upstream call spends, the binding one first (it names the queue, the
   * default deadline and the class in X-RateLimit-*). Every POST /v1/check is counted as cold:
   * whether the upstream answers from a warm register is known only after the call.
   */
  limits: readonly LimitClassName[];
  /** How the upstream bills the call (a charged call carries an Idempotency-Key); null: free. */
  charge: ((call: IncomingCall) => ChargeShape) | null;
  /** The cache policy of one request; null: never cached. */
  cache:
    | ((
        params: Readonly<Record<string, string | undefined>>,
        query: Readonly<Record<string, unknown>>,
      ) => CachePolicy | null)
    | null;
  /** Which per-attempt upstream timeout applies (upstream.timeoutMs or upstream.checkTimeoutMs). */
  timeout: 'read' | 'check';
  validate(call: IncomingCall): Verdict;
}

export interface UpstreamRoute extends RouteSpec {
  name: RouteName;
}

/** A check id as the upstream hands them out (GET /v1/checks/{uuid}; compared in any case). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function verdict(...problems: FieldProblem[][]): Verdict {
  const fields = problems.flat();
  return fields.length ? { ok: false, kind: 'invalid', fields } : { ok: true };
}

const ok = (): Verdict => ({ ok: true });

const innRead = (c: IncomingCall): Verdict =>
  verdict(checkInn(c.params.inn!), checkIdempotencyKey(c.idempotencyKey));

const dossierRead = (c: IncomingCall): ChargeShape => ({
  kind: 'dossier',
  inn: c.params.inn!,
  covered: 'dossier',
  opens: 'dossier',
});

export const ROUTES = {
  openapi: {
    method: 'GET',
    url: '/v1/openapi.json',
    scope: 'public',
    // The spec states no limit for it.
    limits: [],
    charge: null,
    cache: null,
    timeout: 'read',
    validate: ok,
  },
  me: {
    method: 'GET',
    url: '/v1/me',
    scope: null,
    limits: ['key'],
    charge: null,
    // Answered from the price book's copy, not the response cache.
    cache: null,
    timeout: 'read',
    validate: ok,
  },
  company: {
    method: 'GET',
    url: '/v1/companies/:inn',
    scope: 'read:companies',
    limits: ['key'],
    charge: dossierRead,
    cache: companyPolicy,
    timeout: 'read',
    validate: innRead,
  },
  section: {
    method: 'GET',
    url: '/v1/companies/:inn/:section',
    scope: 'read:companies',
    limits: ['key'],
    charge: dossierRead,
    cache: sectionPolicy,
    timeout: 'read',
    validate: (c) => {
      const v = innRead(c);
      if (!v.ok) return v;
      return isSectionName(c.params.section!)
        ? v
        : {
            ok: false,
            kind: 'not_found',
            // As the upstream: details.section; the message names it too.
            details: { section: c.params.section! },
            message: `No section named ${JSON.stringify(c.params.section!)}`,
          };
    },
  },
  check_create: {
    method: 'POST',
    url: '/v1/check',
    scope: 'read:checks',
    limits: ['check', 'key'],
    charge: (c) => {
      // Computed after the body passed validation, so the value is there.
      const { inn, purpose } = checkCheckBody(c.body).value!;
      const requisites = purpose === 'requisites';
      return {
        kind: requisites ? 'requisites' : 'check',
        inn,
        covered: null,
        opens: requisites ? 'requisites' : 'dossier',
        purpose,
      };
    },
    cache: null,
    timeout: 'check',
    validate: (c) => verdict(checkCheckBody(c.body).problems, checkIdempotencyKey(c.idempotencyKey)),
  },
  check_poll: {
    method: 'GET',
    url: '/v1/checks/:uuid',
    scope: 'read:checks',
    limits: ['key'],
    charge: null,
    cache: checkPolicy,
    timeout: 'read',
    validate: (c) => (UUID.test(c.params.uuid!) ? { ok: true } : { ok: false, kind: 'not_found' }),
  },
  requisites: {
    method: 'GET',
    url: '/v1/requisites/:inn',
    scope: 'read:companies',
    limits: ['key'],
    charge: (c) => ({ kind: 'requisites', inn: c.params.inn!, covered: 'requisites', opens: 'requisites' }),
    cache: requisitesPolicy,
    timeout: 'read',
    validate: innRead,
  },
  bank: {
    method: 'GET',
    url: '/v1/banks/:bic',
    scope: 'read:companies',
    limits: ['key'],
    charge: null,
    cache: bankPolicy,
    timeout: 'read',
    validate: (c) => verdict(checkBic(c.params.bic!)),
  },
  person: {
    method: 'GET',
    url: '/v1/persons/:inn',
    scope: 'read:persons',
    limits: ['key'],
    charge: (c) => ({ kind: 'person', inn: c.params.inn!, covered: null, opens: null }),
    cache: personPolicy,
    timeout: 'read',
    validate: innRead,
  },
  suggest: {
    method: 'GET',
    url: '/v1/suggest',
    scope: 'read:companies',
    // Suggest does not spend the key budget (spec "Limits").
    limits: ['suggest'],
    charge: null,
    cache: suggestPolicy,
    timeout: 'read',
    validate: (c) => verdict(checkQuery(c.query.q)),
  },
  search: {
    method: 'GET',
    url: '/v1/search',
    scope: 'read:companies',
    // Search spends both its own and the key budget.
    limits: ['search', 'key'],
    charge: null,
    cache: searchPolicy,
    timeout: 'read',
    validate: (c) => verdict(checkQuery(c.query.q), checkKind(c.query.kind), checkPage(c.query.page)),
  },
} as const satisfies Record<RouteName, RouteSpec>;

/** The table as a list (registration order), each route carrying its name. */
export const UPSTREAM_ROUTES: readonly UpstreamRoute[] = (Object.keys(ROUTES) as RouteName[]).map((name) => ({
  name,
  ...(ROUTES[name] as RouteSpec),
}));

/** The route's spec by name. */
export function routeSpec(name: RouteName): RouteSpec {
  return ROUTES[name];
}
