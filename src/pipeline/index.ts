// The request lifecycle of a proxied /v1 call, declared in one place:
//   authenticate → validate → (GET /v1/me: answered locally) → cache → execute → respond
// where execute (execute.ts) is coalesce → charge gate → estimate → budget → upstream →
// settle/record. Each stage is a small module; a refusal is an ApiError turned into one
// HTTP answer by the server's error handler.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { parseCacheControl, ResponseCache } from '../cache/index.ts';
import { ApiError } from '../errors.ts';
import type { IncomingCall, UpstreamRoute } from '../upstream-routes.ts';
import { authenticate } from './authenticate.ts';
import { throughCache } from './cache-stage.ts';
import type { RequestContext } from './context.ts';
import type { PipelineDeps } from './deps.ts';
import { execute } from './execute.ts';
import { answerMe } from './me.ts';
import { respond } from './respond.ts';
import { parseJsonBody, validate } from './validate.ts';

export function makeHandler(route: UpstreamRoute, deps: PipelineDeps) {
  return async function handle(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const app = authenticate(request.headers.authorization, route, deps.config.apps);
    const rawBody =
      route.method === 'POST' ? ((request.body as Buffer | undefined) ?? Buffer.alloc(0)) : undefined;
    const idem = request.headers['idempotency-key'];
    const call: IncomingCall = {
      params: request.params as Record<string, string>,
      query: request.query as Record<string, string | undefined>,
      body: route.method === 'POST' ? parseJsonBody(rawBody) : undefined,
      idempotencyKey: Array.isArray(idem) ? idem[0] : idem,
    };
    const ctx: RequestContext = {
      requestId: request.id,
      route,
      app,
      call,
      rawBody,
      pathAndQuery: request.url,
      signal: clientGoneSignal(reply),
    };
    request.ctx = ctx;
    validate(route, call);
    ctx.maxWaitMs = maxWaitHeader(request.headers['x-max-wait-ms']);
    if (route.name === 'me') return answerMe(ctx, reply, deps);
    if (ResponseCache.isCacheableRoute(route.name)) return throughCache(ctx, request, reply, deps);
    // Nothing of this route is ever stored, so "only-if-cached" can only be a miss (RFC 9111
    // 5.2.1.7): 504, and never an upstream call or a charge.
    if (parseCacheControl(request.headers['cache-control']).onlyIfCached) throw new ApiError('not_cached');
    return respond(ctx, reply, await execute(ctx, deps), deps);
  };
}

/** Longest accepted X-Max-Wait-Ms: beyond it a caller should not hold a connection open. */
export const MAX_WAIT_LIMIT_MS = 600_000;

/** X-Max-Wait-Ms: milliseconds the caller will wait in the rate queue (0 = start now or refuse). */
function maxWaitHeader(value: string | string[] | undefined): number | undefined {
  if (value === undefined) return undefined;
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw !== undefined && /^\d{1,9}$/.test(raw.trim()) && Number(raw) <= MAX_WAIT_LIMIT_MS)
    return Number(raw);
  throw ApiError.validation([
    {
      field: 'X-Max-Wait-Ms',
      code: 'invalid_value',
      message: `must be a whole number of milliseconds from 0 to ${MAX_WAIT_LIMIT_MS}`,
    },
  ]);
}

/** Aborts when the connection closes before the answer was fully written. */
function clientGoneSignal(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

declare module 'fastify' {
  interface FastifyRequest {
    ctx?: RequestContext;
  }
}
