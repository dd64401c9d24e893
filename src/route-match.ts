// The one URL matcher over the route table (route-table.ts): which upstream route a method and
// path name, and its parameters, as fastify's router (find-my-way, with the options
// server/app.ts gives it) routes the same request to the handlers server.ts registers from the
// same table. fastify keeps its own router for the full pipeline (it also routes the admin API,
// the console and the rest); every matcher written by hand uses this one (the hit path, the
// request accounting's route of a pattern), and test/unit/route-match.test.ts holds it to
// fastify's answer for every route in the table.
//
// Must never: hold state beyond the compiled table, do I/O, decode a path (a path with a `%` is
// left to fastify, which decodes it: null here), or answer a route fastify would not.
import { type RouteName, UPSTREAM_ROUTES, type UpstreamRoute } from './route-table.ts';

export interface RouteMatch {
  route: UpstreamRoute;
  /** The path's parameters by name, as the URL has them (never decoded: see matchRoute). */
  params: Record<string, string>;
}

interface Compiled {
  route: UpstreamRoute;
  /** The pattern's segments after the leading '/'; a parameter is its name prefixed with ':'. */
  segments: readonly string[];
}

const COMPILED: readonly Compiled[] = UPSTREAM_ROUTES.map((route) => ({
  route,
  segments: route.url.slice(1).split('/'),
}));

/** The route a registered pattern is (fastify's `request.routeOptions.url`), by method. */
const BY_PATTERN = new Map<string, RouteName>(UPSTREAM_ROUTES.map((r) => [`${r.method} ${r.url}`, r.name]));

/**
 * The route of `method path` and its parameters, or null when no route of the table takes it.
 * `path` is the request target without its query (a `?` and what follows is cut off here). A
 * HEAD takes the GET route of its path (fastify answers HEAD for every GET route). A path with a
 * percent-encoded byte is null: fastify decodes it before it routes, this never does.
 */
export function matchRoute(method: string, path: string): RouteMatch | null {
  const q = path.indexOf('?');
  const bare = q < 0 ? path : path.slice(0, q);
  if (bare.charCodeAt(0) !== 47 /* '/' */ || bare.includes('%')) return null;
  const want = method === 'HEAD' ? 'GET' : method;
  const parts = bare.slice(1).split('/');
  for (const { route, segments } of COMPILED) {
    if (route.method !== want || segments.length !== parts.length) continue;
    const params = paramsOf(segments, parts);
    if (params) return { route, params };
  }
  return null;
}

function paramsOf(segments: readonly string[], parts: readonly string[]): Record<string, string> | null {
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const want = segments[i]!;
    const got = parts[i]!;
    if (want.charCodeAt(0) === 58 /* ':' */) {
      // As find-my-way: a parameter may be empty (`/v1/banks/` is the bank route, bic ''); the
      // route's validation refuses it.
      params[want.slice(1)] = got;
    } else if (want !== got) {
      return null;
    }
  }
  return params;
}

/** The route registered under `pattern` for `method` (fastify's routeOptions.url), if the table has one. */
export function routeOfPattern(method: string, pattern: string | undefined): RouteName | undefined {
  return pattern === undefined ? undefined : BY_PATTERN.get(`${method} ${pattern}`);
}
