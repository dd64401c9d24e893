// The web console at /console/ for finance and operators: one HTML page, one JS module and one
// CSS file (src/console/static/, copied into dist/ by bin/build.js), plus the sign-in session
// (POST /console/session exchanges a named admin token for an in-process session; GET answers
// who is signed in and the CSRF token; DELETE signs out). Everything the page shows or changes
// goes through the /admin/* API, which accepts the session cookie as the token's identity
// (auth/admin-roles.ts); this module only does sessions, static files and CSRF. Off (404) while
// no admin token is configured. Routes live under /console only: nothing on the proxy's path.
//
// Must never: answer without the strict Content-Security-Policy, keep or echo the token, let the
// browser hold the token (the cookie carries a random session id, HttpOnly), or log a session id.
import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { adminTokenEntries } from '../auth/admin-roles.ts';
import {
  AdminSessions,
  CSRF_HEADER,
  cookieValue,
  csrfMatches,
  SESSION_COOKIE,
} from '../auth/admin-sessions.ts';
import { matchToken } from '../auth/tokens.ts';
import type { Clock } from '../clock.ts';
import { parseJsonBody } from '../domain/requests.ts';
import { ApiError } from '../errors.ts';
import type { PipelineDeps } from '../pipeline/deps.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The console's sessions, for authorizeAdmin (set by registerConsoleRoutes). */
    adminSessions?: AdminSessions;
  }
}

export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const STATIC: Record<string, { file: string; type: string }> = {
  '/console/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/console/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/console/console.css': { file: 'console.css', type: 'text/css; charset=utf-8' },
};

/**
 * The static files, read once (they are small): from src/ under tsx, from dist/ when built by
 * bin/build.js (which copies them). A build without them (tsc alone) starts without a console.
 */
function loadStatic(): Map<string, { body: Buffer; type: string }> | null {
  const dir = new URL('./static/', import.meta.url);
  const files = new Map<string, { body: Buffer; type: string }>();
  try {
    for (const [url, { file, type }] of Object.entries(STATIC))
      files.set(url, { body: readFileSync(new URL(file, dir)), type });
  } catch {
    return null;
  }
  return files;
}

export function registerConsoleRoutes(
  app: FastifyInstance,
  current: () => PipelineDeps,
  clock: Clock,
): AdminSessions {
  const sessions = new AdminSessions(clock);
  app.decorate('adminSessions', sessions);
  const files = loadStatic();
  if (!files)
    app.log.warn(
      'console files missing from this build (bin/build.js copies src/console/static); /console is off',
    );

  const enabled = () => {
    if (!files) throw new ApiError('not_found', {}, 'The console is not in this build');
    if (adminTokenEntries(current().config.admin).length === 0)
      throw new ApiError('not_found', {}, 'The console is off (set admin.tokens or admin.tokenHash)');
  };
  const cookie = (request: FastifyRequest, value: string, maxAgeSeconds: number) =>
    [
      `${SESSION_COOKIE}=${value}`,
      'Path=/',
      'HttpOnly',
      'SameSite=Strict',
      `Max-Age=${maxAgeSeconds}`,
      ...(request.protocol === 'https' ? ['Secure'] : []),
    ].join('; ');
  const who = (tokenHash: string) => {
    const entry = adminTokenEntries(current().config.admin).find((e) => e.tokenHash === tokenHash);
    return entry ? { name: entry.name, role: entry.role } : null;
  };
  const idleSeconds = Math.round(sessions.idleMs / 1000);

  app.register(async (scope) => {
    // In this scope only (the console's routes): the CSP and friends on every answer, errors too.
    scope.addHook('onRequest', async (_request, reply) => {
      reply
        .header('content-security-policy', CONSOLE_CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('x-frame-options', 'DENY')
        .header('cache-control', 'no-store');
    });

    scope.get('/console', async (_request, reply) => {
      enabled();
      return reply.redirect('/console/', 302);
    });
    for (const url of Object.keys(STATIC)) {
      scope.get(url, async (_request, reply: FastifyReply) => {
        enabled();
        const f = files!.get(url)!;
        return reply.header('content-type', f.type).send(f.body);
      });
    }

    // Sign in: {"token": "..."} once; the answer carries the CSRF token, the cookie the session.
    scope.post('/console/session', async (request, reply) => {
      enabled();
      // JSON only: a cross-site form cannot send it without a preflight (no login CSRF).
      if (!/^application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? ''))
        throw ApiError.validation([
          {
            field: 'content-type',
            code: 'invalid_value',
            message: 'sign-in takes a JSON body (application/json)',
          },
        ]);
      const raw = Buffer.isBuffer(request.body) ? request.body : undefined;
      const body = raw && raw.length > 0 ? parseJsonBody(raw) : null;
      const token = body && typeof body === 'object' ? (body as Record<string, unknown>).token : undefined;
      if (typeof token !== 'string' || token.trim() === '' || token.length > 512)
        throw ApiError.validation([
          { field: 'token', code: 'required', message: 'token is required: a named admin token' },
        ]);
      const found = matchToken(token.trim(), adminTokenEntries(current().config.admin));
      if (!found) throw new ApiError('unauthorized', {}, 'This token is not accepted');
      const { id, csrf } = sessions.create(found.tokenHash);
      request.log.info({ actor: found.name, role: found.role }, 'console sign-in');
      return reply
        .header('set-cookie', cookie(request, id, idleSeconds))
        .code(201)
        .send({ name: found.name, role: found.role, csrf_token: csrf, idle_timeout_seconds: idleSeconds });
    });

    scope.get('/console/session', async (request) => {
      enabled();
      const id = cookieValue(request.headers.cookie, SESSION_COOKIE);
      const session = id ? sessions.resolve(id) : null;
      const principal = session ? who(session.tokenHash) : null;
      if (!session || !principal) {
        if (id) sessions.delete(id);
        throw new ApiError('unauthorized', {}, 'Not signed in');
      }
      return { ...principal, csrf_token: session.csrf, idle_timeout_seconds: idleSeconds };
    });

    // Sign out: needs the CSRF token like any write; the cookie is cleared either way.
    scope.delete('/console/session', async (request, reply) => {
      enabled();
      const id = cookieValue(request.headers.cookie, SESSION_COOKIE);
      const session = id ? sessions.resolve(id) : null;
      if (!id || !session) throw new ApiError('unauthorized', {}, 'Not signed in');
      if (!csrfMatches(session, request.headers[CSRF_HEADER]))
        throw new ApiError(
          'feature_unavailable',
          { csrf: 'mismatch' },
          'Sign-out needs the X-CSRF-Token header',
        );
      sessions.delete(id);
      const principal = who(session.tokenHash);
      request.log.info({ actor: principal?.name ?? null }, 'console sign-out');
      return reply.header('set-cookie', cookie(request, '', 0)).send({ signed_out: true });
    });

    scope.all('/console/*', async () => {
      enabled();
      throw new ApiError('not_found', {}, 'No such console page');
    });
  });
  return sessions;
}
