// What the response cache stores and under which name: the policy of one request as the route
// table declares it (its builders: cache-policies.ts), the entry's tags, and which upstream
// answers may be stored. Pure functions only.
//
// Must never: be imported by the route table (this module reads the table), or store an
// upstream error other than a 404 not_found about an unknown INN.
import { envelopeCode } from '../errors.ts';
import { type RouteName, routeSpec } from '../route-table.ts';
import type { CacheKind } from './cache-config.ts';
import type { CachePolicy } from './cache-policies.ts';

export { type CachePolicy, normalizeQueryText } from './cache-policies.ts';

/** Routes whose 404 not_found means "no register knows this INN" and is cached as a negative entry. */
const NEGATIVE_ROUTES: ReadonlySet<RouteName> = new Set(['company', 'requisites', 'person']);

/**
 * The policy of one request, or null when the route is never cached (the route table says).
 * The pipeline computes it once per request (stages/validate.ts, ctx.policy) and hands it on.
 */
export function cachePolicy(
  route: RouteName,
  params: Readonly<Record<string, string | undefined>>,
  query: Readonly<Record<string, unknown>>,
): CachePolicy | null {
  return routeSpec(route).cache?.(params, query) ?? null;
}

/** Which kind of entry an upstream answer becomes: its policy's kind, `negative`, or null (not stored). */
export function storableKind(
  route: RouteName,
  policy: CachePolicy,
  status: number,
  body: Buffer,
): CacheKind | null {
  if (status === 200) return policy.kind;
  if (status === 404 && NEGATIVE_ROUTES.has(route) && envelopeCode(body) === 'not_found') return 'negative';
  return null;
}

/** Tag of every entry about one INN (admin purge). */
export function innTag(inn: string): string {
  return `inn:${inn}`;
}

export function routeTag(route: RouteName): string {
  return `route:${route}`;
}
