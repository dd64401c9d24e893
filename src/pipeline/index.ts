// The request lifecycle of a proxied /v1 call, declared in one place:
//   authenticate → validate → forward → respond
// Each stage is a small module; a refusal is an ApiError turned into one HTTP answer by the
// server's error handler. Later stages (estimate, budget, cache, coalesce, limit, record)
// slot in here in this order.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { GatewayConfig } from '../config/schema.ts';
import type { UpstreamClient } from '../upstream/upstream-client.ts';
import type { IncomingCall, UpstreamRoute } from '../upstream-routes.ts';
import { authenticate } from './authenticate.ts';
import type { RequestContext } from './context.ts';
import { forward } from './forward.ts';
import { respond } from './respond.ts';
import { parseJsonBody, validate } from './validate.ts';

export interface PipelineDeps {
  config: GatewayConfig;
  upstream: UpstreamClient;
}

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
    validate(route, call);
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
    const res = await forward(ctx, deps.upstream, deps.config.upstream);
    return respond(ctx, reply, res);
  };
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
