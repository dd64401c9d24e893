// The shared route matcher (src/route-match.ts) against fastify's router: a fastify instance made
// by server/app.ts (the gateway's router options), with a handler per route of the table
// registered as server.ts registers them, is asked every path of a corpus built from the table
// (each route's own path, and the near misses: a trailing slash, an empty, extra or missing
// segment, a doubled slash, another case, a query) with every method. Wherever the matcher names
// a route, fastify routed the request to that route's handler with the same parameters; wherever
// fastify routed a request to a table route (and the path has nothing percent-encoded, which the
// matcher leaves to fastify), the matcher named it too.
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { matchRoute, routeOfPattern } from '../../src/route-match.ts';
import { UPSTREAM_ROUTES } from '../../src/route-table.ts';
import { createApp } from '../../src/server/app.ts';

let app: FastifyInstance;

beforeAll(async () => {
  const { config } = loadConfig({ files: [], env: {} });
  app = createApp({ config, logger: pino({ level: 'silent' }), onStoreError: () => {} }).app;
  for (const route of UPSTREAM_ROUTES) {
    app.route({
      method: route.method,
      url: route.url,
      handler: async (request) => ({
        route: route.name,
        pattern: request.routeOptions.url,
        params: request.params,
      }),
    });
  }
  await app.ready();
});
afterAll(() => app.close());

const SAMPLE: Record<string, string> = {
  inn: '7707083893',
  section: 'licenses',
  uuid: '0b6f3c52-3c1e-4a6e-9d0c-2f1d7e4b5a6c',
  bic: '044525225',
};

/** Every route's path with sample parameters, and the paths near it. */
function corpus(): string[] {
  const paths = new Set<string>(['/', '/v1', '/v1/', '/v2/me', '/admin/apps', '//v1/me', '/v1/companies']);
  for (const route of UPSTREAM_ROUTES) {
    const filled = route.url.replace(/:([a-z]+)/g, (_m, name: string) => SAMPLE[name] ?? 'x');
    const emptied = route.url.replace(/:([a-z]+)/g, '');
    paths.add(filled);
    paths.add(`${filled}/`);
    paths.add(`${filled}/extra`);
    paths.add(`${filled}?q=1&kind=company`);
    paths.add(filled.replace('/v1/', '/v1//'));
    paths.add(filled.toUpperCase());
    paths.add(emptied);
    paths.add(route.url.replace(/:([a-z]+)/, ''));
    paths.add(filled.split('/').slice(0, -1).join('/'));
    paths.add(filled.replace(/\/[^/]+$/, '/odd.value-with_chars'));
  }
  return [...paths];
}

describe('the shared route matcher agrees with fastify for every route in the table', () => {
  const methods = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'] as const;
  const cases = corpus().flatMap((path) => methods.map((method) => [method, path] as const));

  it('covers every route of the table', () => {
    const named = new Set(cases.map(([m, p]) => matchRoute(m, p)?.route.name).filter(Boolean));
    expect([...named].sort()).toEqual(UPSTREAM_ROUTES.map((r) => r.name).sort());
  });

  it.each(cases)('%s %s', async (method, path) => {
    const res = await app.inject({ method, url: path, payload: method === 'POST' ? '{}' : undefined });
    const mine = matchRoute(method, path);
    if (mine) {
      expect(res.statusCode).toBe(200);
      if (method === 'HEAD') return; // fastify's HEAD route runs the GET handler and sends no body
      const theirs = res.json() as { route: string; pattern: string; params: Record<string, string> };
      expect({ route: mine.route.name, params: mine.params }).toEqual({
        route: theirs.route,
        params: theirs.params,
      });
      expect(routeOfPattern(method, theirs.pattern)).toBe(mine.route.name);
    } else {
      expect(res.statusCode).toBe(404);
    }
  });
});
